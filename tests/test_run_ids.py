"""Run ids that print the same but are stored differently: refused when a new run would
take one, and named so that they read apart when a run is not found."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from tests.conftest import Cli

from agentgauge.schema import Trial
from agentgauge.store import Store, utc_now

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample_trials.jsonl"
NFC = unicodedata.normalize("NFC", "naïve")  # 'na\xefve'
NFD = unicodedata.normalize("NFD", "naïve")  # 'nai\u0308ve'


def imported(cli: Cli, db: Path, run_id: str) -> tuple[int, str, str]:
    return cli("import", "jsonl", str(SAMPLE), "--store", str(db), "--run-id", run_id)


def old_store(db: Path, *run_ids: str) -> None:
    """A store an earlier agentgauge wrote, holding runs under ids it let through: each
    run's header written as `Store.create_run` wrote it before it refused lookalikes."""
    with Store(db) as store, store.transaction():
        for run_id in run_ids:
            store.conn.execute(
                "INSERT INTO runs(run_id, created_at) VALUES (?, ?)", (run_id, utc_now())
            )
            store.conn.execute(
                "INSERT INTO grade_versions(run_id, version, created_at, note)"
                " VALUES (?, 1, ?, 'as recorded')",
                (run_id, utc_now()),
            )
            store.add_trials(run_id, [Trial(task_id="t", trial=0, success=True)])


@pytest.mark.parametrize(
    ("stored", "given", "how"),
    [
        # macOS writes names decomposed (NFD); a user typing "naïve" types NFC, and a
        # resume of the NFD run under it silently started a second "naïve" run.
        (NFD, NFC, "'nai\\u0308ve' already exists in this store, and 'na\\xefve' differs "
         "from it only in Unicode normalization"),
        ("base", "ba\u200bse", "'base' already exists in this store, and 'ba\\u200bse' "
         "differs from it only in invisible characters"),
    ],
)  # fmt: skip
def test_a_new_run_id_that_prints_as_a_stored_one_is_refused(
    cli: Cli, tmp_path: Path, stored: str, given: str, how: str
) -> None:
    db = tmp_path / "s.db"
    assert imported(cli, db, stored)[0] == 0
    code, out, err = imported(cli, db, given)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert f"{db}: run_id: run {how}: the two would print the same; name that run" in line
    with Store(db, readonly=True) as store:
        assert [r.run_id for r in store.list_runs()] == [stored]


def test_a_run_resumed_under_another_spelling_is_refused_not_started_anew(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    db = tmp_path / "s.db"
    suite = ROOT / "examples" / "counter-suite.yaml"

    def run(run_id: str) -> subprocess.CompletedProcess[str]:
        args = ["run", str(suite), "--agent", "builtin:null", "--store", str(db)]
        return subprocess.run(
            [sys.executable, "-m", "agentgauge", *args, "--run-id", run_id],
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert run(NFD).returncode == 0
    again = run(NFC)
    assert again.returncode == 2, again.stderr
    assert "run 'nai\\u0308ve' already exists in this store" in again.stderr
    with Store(db, readonly=True) as store:
        assert [r.run_id for r in store.list_runs()] == [NFD]


@pytest.mark.parametrize("run_id", ["base ", " base", "base\n"])
def test_a_run_id_with_whitespace_at_an_end_is_refused(
    cli: Cli, tmp_path: Path, run_id: str
) -> None:
    db = tmp_path / "s.db"
    code, out, err = imported(cli, db, run_id)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert f"--run-id: {run_id!r} begins or ends with whitespace" in line
    assert not db.exists()


def test_a_run_not_found_names_the_runs_that_print_as_it(cli: Cli, tmp_path: Path) -> None:
    # Said "no run 'base' in this store (recent runs: base , ba​se)".
    db = tmp_path / "old.db"
    old_store(db, "base ", "ba\u200bse")
    code, out, err = cli("metrics", f"{db}:base")
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert (
        f"{db}:base: no run 'base' in this store, but run 'base ' (differs in whitespace "
        "at the ends) and run 'ba\\u200bse' (differs in invisible characters) print the same: "
        "name the one you mean as stored (a shell like bash reads escapes in $'...')"
    ) in line
    code, _, err = cli("metrics", f"{db}:other#agent=a")
    assert code == 2
    # Named by the SOURCE as typed (it said "s.db: run_id: ...", a field nobody typed).
    assert err.splitlines() == [
        f"agentgauge: error: {db}:other: no run 'other' in this store (recent runs: 'base ', "
        "'ba\\u200bse')"
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["grade", "{db}:other"],
        ["grade", "other", "--store", "{db}"],
        ["grade", "{db}:other", "--list"],
        ["grade", "{db}:other", "--activate-version", "1"],
        ["export", "{db}:other", "--jsonl", "{tmp}/o.jsonl"],
        ["export", "{db}:other#agent=a", "--parquet", "{tmp}/o"],
    ],
)
def test_grade_and_export_name_a_missing_run_by_its_source(
    cli: Cli, tmp_path: Path, command: list[str]
) -> None:
    # Said "s.db: run_id: no run 'other' ...", naming a Python parameter nobody typed.
    db = tmp_path / "s.db"
    assert imported(cli, db, "r1")[0] == 0
    code, out, err = cli(*(arg.format(db=db, tmp=tmp_path) for arg in command))
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"agentgauge: error: {db}:other: no run 'other' in this store (recent runs: 'r1')"
    ]
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o").exists()


def test_a_run_typed_in_another_normalization_is_pointed_at(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert imported(cli, db, NFD)[0] == 0
    code, _, err = cli("metrics", f"{db}:{NFC}")
    assert code == 2
    assert (
        "no run 'na\\xefve' in this store, but run 'nai\\u0308ve' (differs in Unicode "
        "normalization) prints the same"
    ) in err
    assert cli("metrics", f"{db}:{NFD}")[0] == 0  # named as stored, it is read
