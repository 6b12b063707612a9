"""Parquet: ``agentgauge export DB:RUN --parquet DIR`` and Parquet directories as SOURCE.

The export of a harness run is read back three ways: the metrics of the Parquet
directory equal the store's to the last bit (the ``metrics --json`` objects are
compared whole), every trial field, event and grade comes back from the files
(`Trial` by `Trial`), and pyarrow's own dataset reader joins events to trials on
the documented keys. Bad files (not Parquet, a column missing or of the wrong
type, values the trial record forbids, a duplicate trial) are one line naming
the file and the column, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import Cli, metrics_json

from agentgauge.errors import InputError
from agentgauge.parquet import (
    EVENTS_FILE,
    GRADES_FILE,
    HEADER_FILE,
    LAYOUT,
    TRIALS_FILE,
    events_schema,
    grades_schema,
    trials_schema,
)
from agentgauge.schema import Trial
from agentgauge.sources import open_source
from agentgauge.store import Store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def retail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in retail suite, two trials a task, by the simulated careful agent
    (every variant): tool calls, faults, control decisions, costs, several graders."""
    from agentgauge.harness.runner import run

    db = tmp_path_factory.mktemp("retail") / "s.db"
    run(
        "builtin:retail",
        "builtin:careful",
        trials=2,
        variants=["base", "paraphrase", "fault:tool_error"],
        store=db,
        run_id="r",
        progress=False,
    )
    return db


@pytest.fixture(scope="module")
def exported(retail: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentgauge.exporters import export_parquet

    out = tmp_path_factory.mktemp("pq") / "r"
    export_parquet(f"{retail}:r", out)
    return out


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two (agent, model) configurations, imported from JSONL."""
    from agentgauge.importers import import_file

    folder = tmp_path_factory.mktemp("two")
    lines = [
        {
            "task_id": f"t{t}",
            "trial": k,
            "agent": agent,
            "model": "m",
            "success": bool((t + k + (agent == "b")) % 3),
            "cost_usd": 0.01 * (t + 1),
            "family": f"f{t % 3}",
        }
        for agent in ("a", "b")
        for t in range(9)
        for k in range(3)
    ]
    src = folder / "two.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = folder / "s.db"
    import_file("jsonl", src, store=db, run_id="two")
    return db


# --------------------------------------------------------------------------- equality


def test_metrics_of_the_export_equal_the_store_to_the_last_bit(
    cli: Cli, retail: Path, exported: Path
) -> None:
    before = metrics_json(cli, f"{retail}:r")
    after = metrics_json(cli, str(exported))
    # The behaviour sections (tool use, control, reliability) are there and equal too.
    assert {"tool_use", "control"} <= set(before["groups"][0])
    assert after == before
    by_family = ("--by", "family")
    assert metrics_json(cli, str(exported), *by_family) == metrics_json(
        cli, f"{retail}:r", *by_family
    )


def test_the_table_read_from_parquet_is_the_stores_array_for_array(
    retail: Path, exported: Path
) -> None:
    from dataclasses import fields

    with Store(retail, readonly=True) as db:
        stored = db.table("r")
    read = open_source(str(exported)).table
    for f in fields(stored):
        a, b = getattr(stored, f.name), getattr(read, f.name)
        assert a.dtype == b.dtype, f.name
        if a.dtype == object:
            assert a.tolist() == b.tolist(), f.name
        else:
            np.testing.assert_array_equal(a, b, err_msg=f.name)  # NaN where NaN, bit for bit
    # The codes a Parquet read seeds are those the table would compute itself.
    uniques, codes = read.cached_codes("task_id") or (None, None)
    assert uniques is not None and codes is not None
    again_uniques, again_codes = stored.codes("task_id")
    assert uniques.tolist() == again_uniques.tolist()
    np.testing.assert_array_equal(codes, again_codes)


def test_every_trial_field_event_and_grade_comes_back(retail: Path, exported: Path) -> None:
    with Store(retail, readonly=True) as db:
        stored = db.trials("r")
    source = open_source(str(exported))
    assert source._trials is None  # nothing built until asked for
    back = source.trials
    assert [t.model_dump() for t in back] == [t.model_dump() for t in stored]
    assert sum(len(t.events) for t in back) > len(back)  # transcripts were exported
    assert all(t.grades for t in back)
    assert source.run is not None and source.run.run_id == "r"
    assert source.grading is not None and source.grading.version == 1
    with Store(retail, readonly=True) as db:
        assert [t.id for t in source.tasks] == [t.id for t in db.get_tasks("r")]


def test_show_and_report_read_an_export(
    cli: Cli, retail: Path, exported: Path, tmp_path: Path
) -> None:
    code, from_store, err = cli("show", f"{retail}:r", "--json")
    assert code == 0, err
    code, from_parquet, err = cli("show", str(exported), "--json")
    assert code == 0, err
    store_doc, parquet_doc = json.loads(from_store), json.loads(from_parquet)
    assert parquet_doc.pop("source") == str(exported)
    store_doc.pop("source")
    assert parquet_doc == store_doc
    html = tmp_path / "r.html"
    code, _, err = cli("report", str(exported), "--html", str(html))
    assert code == 0, err
    assert "retail" in html.read_text(encoding="utf-8")


def test_an_exported_grade_version(cli: Cli, retail: Path, tmp_path: Path) -> None:
    from agentgauge.api import regrade

    db = tmp_path / "s.db"
    shutil.copy(retail, db)
    version = regrade(f"{db}:r", ["state"]).version  # a second version, not activated
    out = tmp_path / "v2"
    code, said, err = cli("export", f"{db}:r", "--parquet", str(out), "--grade-version", "2")
    assert code == 0, err
    assert version == 2 and "grade version 2" in said
    assert metrics_json(cli, str(out)) == metrics_json(cli, f"{db}:r#grade=2")
    assert metrics_json(cli, str(out)) != metrics_json(cli, f"{db}:r")
    header = json.loads((out / HEADER_FILE).read_text(encoding="utf-8"))
    assert header["schema"] == LAYOUT and header["grade_version"]["version"] == 2
    # An export holds one version: asking it for another is refused, not ignored.
    code, _, err = cli("metrics", f"{out}#grade=1")
    assert code == 2 and "holds grade version 2 only" in err and "Traceback" not in err


# --------------------------------------------------------------------------- selectors, globs


def test_selectors_pick_a_configuration_of_an_export(
    cli: Cli, two_agents: Path, tmp_path: Path
) -> None:
    out = tmp_path / "two"
    assert cli("export", f"{two_agents}:two", "--parquet", str(out))[0] == 0
    for selector in ("#agent=a", "#agent=b,model=m", "#model=m"):
        assert metrics_json(cli, f"{out}{selector}") == metrics_json(
            cli, f"{two_agents}:two{selector}"
        )
    code, _, err = cli("metrics", f"{out}#agent=nobody")
    assert code == 2 and "matches no trials" in err and f"{out}#agent=a" in err
    # compare refuses a side that pools two agents, naming the selectors to type.
    code, _, err = cli("compare", str(out), f"{out}#agent=b")
    assert code == 2 and f"{out}#agent=a" in err


def test_a_glob_of_two_exports_is_one_source(
    cli: Cli, retail: Path, exported: Path, two_agents: Path, tmp_path: Path
) -> None:
    from agentgauge import metrics

    exports = tmp_path / "exports"
    exports.mkdir()
    shutil.copytree(exported, exports / "1-retail")
    assert cli("export", f"{two_agents}:two", "--parquet", str(exports / "2-two"))[0] == 0
    with Store(retail, readonly=True) as a, Store(two_agents, readonly=True) as b:
        pooled = a.trials("r") + b.trials("two")
    want = metrics(pooled, k=(1, 2), behaviour=False).to_dict()
    for spec in (f"{exports}/*", f"{exports}/*/{TRIALS_FILE}"):
        assert metrics(spec, k=(1, 2), behaviour=False).to_dict() == want
    source = open_source(f"{exports}/*")
    assert source.run is None  # two runs: no one header
    assert len(source.trials) == len(pooled)
    # One export matched twice would count every attempt twice: refused.
    shutil.copytree(exported, exports / "3-copy")
    code, _, err = cli("metrics", f"{exports}/*")
    assert code == 2 and "duplicate trial" in err and "3-copy" in err
    assert "run 'r' is in the glob twice" in err
    code, _, err = cli("metrics", f"{tmp_path}/nothing-*")
    assert code == 2 and "matches no file" in err


def test_a_glob_of_two_runs_of_one_configuration_says_so(
    cli: Cli, two_agents: Path, tmp_path: Path
) -> None:
    """Two runs of one agent (on two days, say) each number their trials from 0: they
    were called a "duplicate trial", as if one export had been matched twice."""
    from agentgauge.importers import import_file

    db = tmp_path / "s.db"
    import_file("jsonl", two_agents.parent / "two.jsonl", store=db, run_id="day1")
    exports = tmp_path / "ex"
    assert cli("export", f"{two_agents}:two", "--parquet", str(exports / "a"))[0] == 0
    assert cli("export", f"{db}:day1", "--parquet", str(exports / "b"))[0] == 0
    code, _, err = cli("metrics", f"{exports}/*")
    assert code == 2 and err.count("\n") == 1
    assert f"runs 'two' ({exports / 'a'}) and 'day1' ({exports / 'b'}) are two runs of one" in err
    assert f"agentgauge compare {exports / 'a'} {exports / 'b'}" in err
    assert "duplicate" not in err


def test_pyarrow_datasets_read_and_join_an_export(exported: Path) -> None:
    """What docs/parquet.md tells DuckDB, Polars and Spark users, done with pyarrow."""
    trials = ds.dataset(exported / TRIALS_FILE, format="parquet").to_table()
    events = ds.dataset(exported / EVENTS_FILE, format="parquet").to_table()
    grades = ds.dataset(exported / GRADES_FILE, format="parquet").to_table()
    assert trials.schema.equals(trials_schema())
    assert events.schema.equals(events_schema())
    assert grades.schema.equals(grades_schema())
    calls = (
        events.filter(pa.compute.equal(events["type"], "tool_call"))
        .group_by(["run_id", "trial_key"])
        .aggregate([("seq", "count")])
    )
    joined = trials.join(calls, ["run_id", "trial_key"], join_type="left outer")
    counted = joined.column("seq_count").fill_null(0).to_pylist()
    assert counted == joined.column("tool_calls").to_pylist()
    graded = grades.group_by(["run_id", "trial_key"]).aggregate([("grader", "count")])
    assert graded.num_rows == trials.num_rows


# --------------------------------------------------------------------------- writing


def test_export_is_atomic_and_never_overwrites_unasked(
    cli: Cli, retail: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentgauge.parquet.write as write

    out = tmp_path / "out"

    def broken(*args: Any, **kwargs: Any) -> Any:
        yield from ()
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(write, "grade_batches", broken)  # fails after trials and events are written
        with pytest.raises(InputError, match="--parquet: cannot write here: No space left"):
            write.write_parquet(retail, "r", out)
    assert list(tmp_path.iterdir()) == []  # no DIR, no temporary sibling left behind

    assert cli("export", f"{retail}:r", "--parquet", str(out))[0] == 0
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(out))
    assert code == 2 and "not empty; add --force" in err and err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == written
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(out), "--force")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # --force replaces an earlier export, never a directory of something else.
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(other), "--force")
    assert code == 2 and "not an agentgauge Parquet export" in err
    assert (other / "notes.txt").read_text(encoding="utf-8") == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("export", f"{retail}:r", "--parquet", str(empty))[0] == 0
    assert (empty / TRIALS_FILE).is_file()


def test_force_replaces_an_earlier_exports_own_files_only(
    cli: Cli, retail: Path, tmp_path: Path
) -> None:
    """``--force`` once moved the whole of DIR aside and deleted it: the store being
    read (``export out/s.db:r --parquet out --force``), notes, nested folders. It
    replaces the four files an export writes, and refuses a DIR holding anything else."""
    out = tmp_path / "out"
    assert cli("export", f"{retail}:r", "--parquet", str(out))[0] == 0
    store = out / "s.db"
    shutil.copy(retail, store)
    for args in ((), ("--force",)):
        code, _, err = cli("export", f"{store}:r", "--parquet", str(out), *args)
        assert code == 2 and "the store this export reads" in err, err
        assert err.count("\n") == 1
    assert store.read_bytes() == retail.read_bytes()
    store.unlink()
    for name, make in (
        ("notes.txt", lambda p: p.write_text("precious", encoding="utf-8")),
        ("nested", lambda p: shutil.copytree(out, p)),
        (".hidden", lambda p: p.write_text("x", encoding="utf-8")),
    ):
        make(out / name)
        code, _, err = cli("export", f"{retail}:r", "--parquet", str(out), "--force")
        assert code == 2 and f"holds {name!r}, which is no file an export writes" in err
        assert err.count("\n") == 1
        assert (out / name).exists()
        shutil.rmtree(out / name) if (out / name).is_dir() else (out / name).unlink()
    # A link named as an export's file is no file it wrote: refused, its target kept.
    (out / EVENTS_FILE).unlink()
    (out / EVENTS_FILE).symlink_to(retail)
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(out), "--force")
    assert code == 2 and f"holds {EVENTS_FILE!r}" in err and retail.is_file()
    (out / EVENTS_FILE).unlink()
    before = (out / TRIALS_FILE).stat().st_ino
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(out), "--force")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [TRIALS_FILE, EVENTS_FILE, GRADES_FILE, HEADER_FILE]
    )
    assert (out / TRIALS_FILE).stat().st_ino != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing left beside


def _export_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_an_export_through_a_link_writes_the_folder_it_names(
    cli: Cli, retail: Path, tmp_path: Path
) -> None:
    """A DIR that is a symlink was renamed over as if it were the folder: a traceback
    (NotADirectoryError), and with --force an empty hidden folder left beside it. As a
    FILE export does, the export goes where the link points and the link stays."""
    real = tmp_path / "real"
    (real / "empty").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real / "empty")
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(link))
    assert code == 0, err
    assert link.is_symlink() and _export_files(real / "empty") == sorted(EXPORT)
    first = (real / "empty" / TRIALS_FILE).stat().st_ino
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(link))
    assert code == 2 and "not empty; add --force" in err and err.count("\n") == 1
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(link), "--force")
    assert code == 0, err
    assert link.is_symlink() and _export_files(real / "empty") == sorted(EXPORT)
    assert (real / "empty" / TRIALS_FILE).stat().st_ino != first
    assert _export_files(real) == ["empty"] and _export_files(tmp_path) == ["link", "real"]
    # A link to nothing yet: the folder it names is made, as `mkdir -p` would.
    dangling = tmp_path / "later"
    dangling.symlink_to(real / "new" / "v2")
    assert cli("export", f"{retail}:r", "--parquet", str(dangling))[0] == 0
    assert _export_files(real / "new" / "v2") == sorted(EXPORT)
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(loop))
    assert code == 2 and err.count("\n") == 1, err
    assert f"{loop}: --parquet: cannot write here: " in err


EXPORT = [TRIALS_FILE, EVENTS_FILE, GRADES_FILE, HEADER_FILE]


def _limit_file_size() -> None:
    import resource

    # `ulimit -f 200`: a write past 200 KB fails with EFBIG (Python ignores SIGXFSZ).
    resource.setrlimit(resource.RLIMIT_FSIZE, (200 * 1024, 200 * 1024))


def test_a_write_the_system_refuses_is_one_line_and_leaves_nothing(
    retail: Path, tmp_path: Path
) -> None:
    """A file size limit (or a full disk) mid-export was a pyarrow OSError traceback,
    exit 1, where --jsonl says "cannot write here: File too large", exit 2."""
    folder = tmp_path / "out"
    folder.mkdir()
    store = folder / "s.db"  # the store's own -wal and -shm stay far below the limit
    shutil.copy(retail, store)
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "export", f"{store}:r", "--parquet", "pq"],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
        preexec_fn=_limit_file_size,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "agentgauge: error: pq: --parquet: cannot write here: File too large\n"
    assert _export_files(folder) == ["s.db"]  # no DIR, no temporary folder beside it


def _read_only(folder: Path) -> Callable[[], None] | None:
    """Make ``folder`` read-only to this user (a read-only mount on itself for root,
    whom modes do not stop); the undoing, or None when that cannot be done here."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda: folder.chmod(0o755)
    from tests.test_store_damage import read_only_folder

    if not read_only_folder(folder):
        return None
    return lambda: subprocess.run(["umount", str(folder)], check=True)


def test_force_over_an_export_that_cannot_be_removed_refuses_before_moving_anything(
    cli: Cli, retail: Path, tmp_path: Path
) -> None:
    """A read-only earlier export was swapped out, the new one put in place, and then a
    PermissionError traceback, exit 1, with the old export left in a hidden folder."""
    out = tmp_path / "pq"
    assert cli("export", f"{retail}:r", "--parquet", str(out))[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    undo = _read_only(out)
    if undo is None:
        pytest.skip("needs mount(8) to make a folder root cannot write")
    try:
        code, _, err = cli("export", f"{retail}:r", "--parquet", str(out), "--force")
    finally:
        undo()
    assert code == 2, err
    assert err == (
        f"agentgauge: error: {out}: holds an earlier export that cannot be replaced: the "
        "directory is read-only, so its files cannot be removed; make it writable (chmod "
        "u+w) or name another directory\n"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _export_files(tmp_path) == ["pq"]


def test_an_earlier_export_that_sticks_after_the_swap_is_said_not_a_traceback(
    cli: Cli, retail: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pq"
    assert cli("export", f"{retail}:r", "--parquet", str(out))[0] == 0
    stuck = out / TRIALS_FILE
    # An immutable file: its folder is writable, yet it cannot be removed (nor by root).
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.skip("needs root and chattr(1) to make a file no one can remove")
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable files")
    try:
        code, out_text, err = cli("export", f"{retail}:r", "--parquet", str(out), "--force")
        left = [p for p in tmp_path.iterdir() if p.name != "pq"]
        assert code == 0, err
        assert out_text.startswith("exported ")
        assert _export_files(out) == sorted(EXPORT)  # the new export, whole
        assert len(left) == 1 and _export_files(left[0]) == [TRIALS_FILE]
        assert err == (
            f"warning: the earlier export in {out} was replaced, but the folder it was moved "
            f"to could not be emptied: {left[0]} (Operation not permitted); remove it "
            "yourself\n"
        )
    finally:
        for p in tmp_path.rglob(TRIALS_FILE):
            subprocess.run(["chattr", "-i", str(p)], capture_output=True)


@pytest.mark.parametrize(
    ("table", "column", "value", "message"),
    [
        ("trials", "metadata", "[1]", "metadata: trial {pk} of run 'r' is damaged in the "
         "store: not a JSON object (list)"),
        ("trials", "metadata", "{bad", "metadata: trial {pk} of run 'r' is damaged in the "
         "store: not valid JSON (Expecting property name enclosed in double quotes at "
         "character 1)"),
        ("events", "data", "{bad", "data: an event of trial {pk} of run 'r' is damaged in "
         "the store: not valid JSON (Expecting property name enclosed in double quotes at "
         "character 1)"),
        ("grades", "evidence", "[1,", "evidence: the '{grader}' grade of trial {pk} of run "
         "'r' is damaged in the store: not valid JSON (Expecting value at character 3)"),
    ],
)  # fmt: skip
def test_a_damaged_row_is_refused_as_jsonl_refuses_it_not_exported(
    cli: Cli, retail: Path, tmp_path: Path, table: str, column: str, value: str, message: str
) -> None:
    """The export copied the store's JSON text as it was (exit 0), and reading the export
    back then blamed the export ("trials.parquet: metadata: row 1: invalid JSON")."""
    db = tmp_path / "s.db"
    shutil.copy(retail, db)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP INDEX trials_trace")  # it reads every metadata as JSON
        pk, grader = conn.execute(
            "SELECT t.id, (SELECT grader FROM grades g WHERE g.trial_pk = t.id"
            " AND evidence IS NOT NULL ORDER BY grader LIMIT 1)"
            " FROM trials t WHERE t.run_id = 'r' ORDER BY t.id LIMIT 1 OFFSET 3"
        ).fetchone()
        where, args = {
            "trials": ("id = ?", (pk,)),
            "events": ("trial_pk = ? AND seq = 0", (pk,)),
            "grades": ("trial_pk = ? AND grader = ?", (pk, grader)),
        }[table]
        done = conn.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (value, *args))
        assert done.rowcount >= 1
    conn.close()
    out = tmp_path / "pq"
    code, _, err = cli("export", f"{db}:r", "--parquet", str(out))
    assert code == 2, err
    assert err == f"agentgauge: error: {db}: " + message.format(pk=pk, grader=grader) + "\n"
    assert _export_files(tmp_path) == ["s.db"]


def test_an_export_makes_its_folders_readable_by_others(
    cli: Cli, retail: Path, tmp_path: Path
) -> None:
    # As docs/parquet.md writes it, in a fresh folder: "exports" did not exist and the
    # command failed; and the export was 0700 (mkdtemp's mode), unreadable to a reader
    # running as another user.
    old = os.umask(0o022)
    try:
        out = tmp_path / "exports" / "v2"
        code, _, err = cli("export", f"{retail}:r", "--parquet", str(out))
    finally:
        os.umask(old)
    assert code == 0, err
    assert (out / TRIALS_FILE).is_file()
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert stat.S_IMODE((out / TRIALS_FILE).stat().st_mode) == 0o644
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("export", f"{retail}:r", "--parquet", str(tmp_path / "afile" / "v2"))
    assert code == 2 and "is a file, not a folder to write into" in err


def test_an_empty_run_exports_and_reads_back_as_refused(tmp_path: Path) -> None:
    from agentgauge.exporters import export_parquet
    from agentgauge.schema import Run

    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="e", created_at="2026-01-01T00:00:00+00:00"))
        store.conn.commit()
    counts = export_parquet(f"{db}:e", tmp_path / "e")
    assert (counts.trials, counts.events, counts.grades) == (0, 0, 0)
    # Read back, it is a source with no trial: refused as an empty file is (exit 2 in
    # every command), not measured as zero trials.
    with pytest.raises(InputError, match="SOURCE: no trials in this export"):
        open_source(str(tmp_path / "e"))


def test_an_export_whose_facts_were_derived_by_other_rules_reads_the_new_ones(
    cli: Cli, tmp_path: Path
) -> None:
    """An export made before a fact's rule changed ("order 512 not found" was a
    `transient` error, a bare number read as an HTTP status) holds the old rule's
    facts; its header records no `facts_rules` of this agentgauge, so its facts are
    derived again from its transcripts: its metrics equal the store's."""
    from agentgauge.exporters import export_parquet
    from agentgauge.facts import RULES
    from agentgauge.schema import Run, ToolCallEvent, ToolResultEvent

    db = tmp_path / "s.db"
    events = [
        ToolCallEvent(name="refund", arguments={}, call_id="c"),
        ToolResultEvent(name="refund", call_id="c", content="order 512 not found", is_error=True),
    ]
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at="2026-01-01T00:00:00+00:00"))
        store.add_trials("r", [Trial(task_id="t", trial=0, success=False, events=events)])
    export_parquet(f"{db}:r", tmp_path / "new")
    header = json.loads((tmp_path / "new" / HEADER_FILE).read_text(encoding="utf-8"))
    assert header["facts_rules"] == RULES
    # As the agentgauge before the change exported it: the old type, no facts_rules.
    old = _trials(tmp_path / "new", tmp_path, _set("error_types", ['{"transient":1}']))
    del header["facts_rules"]
    (old / HEADER_FILE).write_text(json.dumps(header), encoding="utf-8")
    store_types = metrics_json(cli, f"{db}:r")["groups"][0]["recovery"]["error_types"]
    assert set(store_types) == {"not_found"}
    for source in (str(tmp_path / "new"), str(old)):
        got = metrics_json(cli, source)["groups"][0]["recovery"]["error_types"]
        assert got == store_types, source


# --------------------------------------------------------------------------- bad input


def _trials(exported: Path, tmp_path: Path, change: Any) -> Path:
    """A copy of the export whose trials file is ``change(table)``."""
    folder = tmp_path / "bad"
    shutil.copytree(exported, folder)
    table = pq.read_table(folder / TRIALS_FILE)
    pq.write_table(change(table), folder / TRIALS_FILE)
    return folder


def _set(name: str, values: list[Any], type_: pa.DataType | None = None) -> Any:
    """The first rows of column ``name`` set to ``values`` (``type_``: every row of that
    type, the value repeated)."""

    def change(table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(name)
        if type_ is None:
            column = values + table.column(name).to_pylist()[len(values) :]
            return table.set_column(i, name, pa.array(column, table.schema.field(i).type))
        return table.set_column(i, name, pa.array(values * table.num_rows, type_))

    return change


def _past_its_type(name: str, row: int, value: int, type_: pa.DataType) -> Any:
    """Column ``name`` as ``type_``, ``value`` at 0-based ``row``: a value the column's
    type holds but the trial record's does not (a uint64 past int64, an integer no
    float64 holds exactly)."""

    def change(table: pa.Table) -> pa.Table:
        values = [v or 0 for v in table.column(name).to_pylist()]
        values[row] = value
        i = table.schema.get_field_index(name)
        return table.set_column(i, name, pa.array(values, type_))

    return change


@pytest.mark.parametrize(
    ("change", "column", "message"),
    [
        (lambda t: t.drop_columns(["task_id"]), "task_id", "missing required column"),
        (
            _past_its_type("trial", 2, 2**64 - 1, pa.uint64()),
            "trial",
            "row 3: cannot be read as int64",
        ),
        (
            _past_its_type("cost_usd", 1, 2**60 + 1, pa.int64()),
            "cost_usd",
            "row 2: cannot be read as double",
        ),
        (
            _past_its_type("tool_results", 4, 2**64 - 1, pa.uint64()),
            "tool_results",
            "row 5: cannot be read as int64",
        ),
        (lambda t: t.drop_columns(["success"]), "success", "missing required column"),
        (_set("task_id", [1], pa.int64()), "task_id", "expected a string"),
        (_set("success", ["yes"], pa.string()), "success", "expected a boolean"),
        (_set("score", [1.5]), "score", "must be at least 0 and at most 1"),
        (_set("cost_usd", [-1.0]), "cost_usd", "must be at least 0"),
        (_set("latency_s", [float("nan")]), "latency_s", "NaN or infinity"),
        (_set("trial", [None]), "trial", "a value is required, found null"),
        (_set("status", ["exploded"]), "status", "row 1"),
        (_set("split", ["train"]), "split", "row 1"),
        (_set("task_id", [""]), "task_id", "row 1"),
        (_set("trial", [1, 1, 1, 1]), "trial", "duplicate trial"),
    ],
)
def test_bad_trials_files_are_one_line_naming_file_and_column(
    cli: Cli, exported: Path, tmp_path: Path, change: Any, column: str, message: str
) -> None:
    folder = _trials(exported, tmp_path, change)
    code, _, err = cli("metrics", str(folder))
    assert code == 2, err
    assert message in err and f"{column}:" in err and str(folder) in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_files_and_directories(cli: Cli, exported: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli("metrics", str(empty))
    assert code == 2 and TRIALS_FILE in err and str(empty) in err
    for name, data in (
        ("garbage", b"\x00\xff" * 500),
        ("truncated", (exported / TRIALS_FILE).read_bytes()[:2000]),
        ("empty-file", b""),
    ):
        folder = tmp_path / name
        shutil.copytree(exported, folder)
        (folder / TRIALS_FILE).write_bytes(data)
        code, _, err = cli("metrics", str(folder))
        assert code == 2, err
        assert "not a readable Parquet file" in err and "Traceback" not in err
        assert err.count("\n") == 1
    folder = tmp_path / "twice"
    folder.mkdir()
    columns = [pa.array(["a"]), pa.array(["b"]), pa.array([0]), pa.array([True])]
    twice = pa.Table.from_arrays(columns, names=["task_id", "task_id", "trial", "success"])
    pq.write_table(twice, folder / TRIALS_FILE)
    code, _, err = cli("metrics", str(folder))
    assert code == 2 and "task_id: a column of this name appears twice" in err
    folder = tmp_path / "header"
    shutil.copytree(exported, folder)
    (folder / HEADER_FILE).write_text('{"schema": "agentgauge.parquet/99"}', encoding="utf-8")
    code, _, err = cli("metrics", str(folder))
    assert code == 2 and "agentgauge.parquet/99" in err and HEADER_FILE in err


#: JSON nested far past the 100 levels the JSONL reader allows (Python's parser recursed
#: out on it: a RecursionError traceback).
_DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("name", "change", "column", "message"),
    [
        (EVENTS_FILE, lambda t: t.drop_columns(["type"]), "type", "missing required column"),
        (EVENTS_FILE, _set("data", ["{not json"]), "data", "row 1: invalid JSON"),
        (EVENTS_FILE, _set("data", [_DEEP]), "data", "row 1: nested too deeply"),
        (EVENTS_FILE, _set("data", ["[1]"]), "data", "row 1: expected a JSON object, got list"),
        (EVENTS_FILE, _set("type", ["teleport"]), "data", "row 1"),
        (EVENTS_FILE, _set("trial_key", [10**9]), "trial_key", "row 1: trial_key 1000000000"),
        (GRADES_FILE, _set("evidence", ["[1,"]), "evidence", "row 1: invalid JSON"),
        (GRADES_FILE, _set("evidence", [_DEEP]), "evidence", "row 1: nested too deeply"),
        (
            GRADES_FILE,
            lambda t: _set("evidence", ['{"max_severity": 5}'])(_set("grader", ["minefields"])(t)),
            "evidence.max_severity",
            "row 1: must be a number in [0, 1], got 5",
        ),
        (GRADES_FILE, _set("score", [7.0]), "score", "row 1"),
        (GRADES_FILE, _set("passed", ["yes"], pa.string()), "passed", "expected a boolean"),
    ],
)
def test_bad_events_and_grades_are_found_when_trials_are_built(
    cli: Cli, exported: Path, tmp_path: Path, name: str, change: Any, column: str, message: str
) -> None:
    folder = tmp_path / "bad"
    shutil.copytree(exported, folder)
    pq.write_table(change(pq.read_table(folder / name)), folder / name)
    code, _, err = cli("show", str(folder), "--json")
    assert code == 2, err
    assert name in err and f"{column}: {message}" in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "change", "column", "message"),
    [
        ("show", _set("metadata", [_DEEP]), "metadata", "row 1: nested too deeply"),
        ("show", _set("metadata", ['{"a": 1, "a": 2}']), "metadata", "appears twice"),
        ("show", _set("metadata", ["[1]"]), "metadata", "row 1:"),
        ("show", _set("final_state", ["{oops"]), "final_state", "row 1: invalid JSON"),
        ("metrics", _set("actions", ["{oops"]), "actions", "row 1: invalid JSON"),
        ("metrics", _set("actions", [_DEEP]), "actions", "row 1: nested too deeply"),
        ("metrics", _set("actions", ["[1]"]), "actions", "list of tool names"),
        ("metrics", _set("error_types", ["[1]"]), "error_types", "row 1: expected a JSON object"),
        ("metrics", _set("error_types", ['{"timeout": 0}']), "error_types", "at least 1"),
        ("metrics", _set("error_types", ['{"timeout": 4}']), "error_types", "add up to 4"),
        ("metrics", _set("control_decisions", ['["dance"]']), "control_decisions", "row 1"),
        ("metrics", _set("ckpt_turns", ['[[1,"maybe"]]']), "ckpt_turns", "row 1"),
        ("metrics", _set("ckpt_turns", ['[[0,"pass"]]']), "ckpt_turns", "turn ≥ 1"),
        ("metrics", _set("tc_class", ["wrong_vibes"]), "tc_class", "row 1"),
        ("metrics", _set("ctl_irreversible", [float("nan")]), "ctl_irreversible", "NaN"),
        ("metrics", _set("traj_recall", [float("inf")]), "traj_recall", "NaN or infinity"),
        ("metrics", _set("assistant_turns", [-3.0]), "assistant_turns", "at least 0"),
        ("metrics", _set("assistant_turns", [1.5]), "assistant_turns", "a whole number"),
        ("metrics", _set("tool_results", [-1]), "tool_results", "at least 0"),
        ("metrics", _set("tool_errors", [99]), "tool_errors", "more than tool_results"),
        ("metrics", _set("tc_state", [9]), "tc_state", "at most 3"),
        ("metrics", _set("ckpt_state", [300], pa.int64()), "ckpt_state", "at most 3"),
        ("metrics", _set("traj_precision", [7.0]), "traj_precision", "at most 1"),
        ("metrics", _set("mine_hit_severity", [-0.5]), "mine_hit_severity", "at least 0"),
        (
            "metrics",
            lambda t: _set("ctl_unconfirmed", [3.0])(_set("ctl_irreversible", [1.0])(t)),
            "ctl_unconfirmed",
            "more than ctl_irreversible",
        ),
    ],
)
def test_json_and_fact_columns_are_checked_as_a_trial_record_is(
    cli: Cli, exported: Path, tmp_path: Path, command: str, change: Any, column: str, message: str
) -> None:
    """Hostile JSON in any column (deep, repeated keys, the wrong type) and facts no
    trial has (NaN, negative counts, a verdict state 9) were read as they came: a
    RecursionError or AttributeError traceback, or metrics silently changed."""
    folder = _trials(exported, tmp_path, change)
    code, _, err = cli(command, str(folder), *(["--json"] if command == "show" else []))
    assert code == 2, err
    assert f"{TRIALS_FILE}: {column}: " in err and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_file_without_facts_reads_its_json_as_jsonl_does(
    cli: Cli, exported: Path, tmp_path: Path
) -> None:
    """Without fact columns, metrics builds the trials: their metadata is read then."""
    from agentgauge.facts import FACTS

    folder = _trials(
        exported, tmp_path, lambda t: _set("metadata", [_DEEP])(t.drop_columns(list(FACTS)))
    )
    code, _, err = cli("metrics", str(folder))
    assert code == 2 and "metadata: row 1: nested too deeply" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ('{"schema": "agentgauge.parquet/1", "run": ' + _DEEP + "}", "nested too deeply"),
        ('{"schema": "agentgauge.parquet/1", "run": NaN}', "invalid JSON"),
        ('{"schema": "agentgauge.parquet/1", "grade_version": [1]}', "grade_version: not a"),
    ],
)
def test_a_hostile_header_is_one_line(
    cli: Cli, exported: Path, tmp_path: Path, header: str, message: str
) -> None:
    folder = tmp_path / "header"
    shutil.copytree(exported, folder)
    (folder / HEADER_FILE).write_text(header, encoding="utf-8")
    code, _, err = cli("metrics", str(folder))
    assert code == 2 and HEADER_FILE in err and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    source = _trials(exported, tmp_path, lambda t: t)
    version = json.loads((source / HEADER_FILE).read_text(encoding="utf-8"))
    version["grade_version"]["version"] = "1"
    (source / HEADER_FILE).write_text(json.dumps(version), encoding="utf-8")
    code, _, err = cli("metrics", str(source))
    assert code == 2 and "grade_version: version: expected int" in err, err


@pytest.mark.parametrize(
    ("header", "field", "message"),
    [
        ("[]", "schema: ", "expected a JSON object naming schema"),
        ('{"schema": "agentgauge.parquet/1", "run": "x"}', "run: ", "valid dictionary"),
        ('{"schema": "agentgauge.parquet/1", "run": {"run_id": "r"}}', "run.", "missing"),
        ('{"schema": "agentgauge.parquet/1", "tasks": {"a": 1}}', "tasks: ", "a list of tasks"),
        (
            '{"schema": "agentgauge.parquet/1", "tasks": '
            '[{"id": "a", "instruction": "i"}, {"id": 1, "instruction": "i"}]}',
            "tasks[1].id: ",
            "valid string",
        ),
    ],
)
def test_a_bad_header_names_the_place_in_it(
    cli: Cli, exported: Path, tmp_path: Path, header: str, field: str, message: str
) -> None:
    """A header error named the field alone ("id": the run's? which task's?), or nothing
    (a run that is no object); tasks given as an object were read key by key."""
    folder = tmp_path / "header"
    shutil.copytree(exported, folder)
    (folder / HEADER_FILE).write_text(header, encoding="utf-8")
    code, _, err = cli("metrics", str(folder))
    assert code == 2 and f"{HEADER_FILE}: {field}" in err and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_export_missing_a_file_or_rows_is_refused_not_read_short(
    cli: Cli, exported: Path, tmp_path: Path
) -> None:
    """An export whose grades.parquet (or events.parquet) was lost in a copy showed its
    trials without grades or transcripts and said "no trial has a transcript"; a file
    cut short or swapped for another (rows the header does not count) was read as it
    came. The header counts every file's rows: they are checked."""
    from agentgauge.facts import FACTS

    header = json.loads((exported / HEADER_FILE).read_text(encoding="utf-8"))
    lost = _trials(exported, tmp_path / "lost", lambda t: t.drop_columns(list(FACTS)))
    (lost / GRADES_FILE).unlink()
    for command in (["show", str(lost)], ["metrics", str(lost)]):
        code, _, err = cli(*command)
        assert code == 2, err
        assert f"{GRADES_FILE}: missing, where {HEADER_FILE} counts" in err, err
        assert err.count("\n") == 1
    short = _trials(exported, tmp_path / "short", lambda t: t)
    events = pq.read_table(short / EVENTS_FILE)
    pq.write_table(events.slice(0, events.num_rows - 1), short / EVENTS_FILE)
    code, _, err = cli("show", str(short))
    n = header["counts"]["events"]
    assert code == 2 and f"holds {n - 1} rows where {HEADER_FILE} counts {n} events" in err
    cut = _trials(exported, tmp_path / "cut", lambda t: t.slice(1))
    code, _, err = cli("metrics", str(cut))
    assert code == 2 and f"{TRIALS_FILE}: holds" in err and "trials" in err, err


def test_a_foreign_parquet_file_in_an_export_is_refused_not_left_out(
    cli: Cli, exported: Path, tmp_path: Path
) -> None:
    """A .parquet file agentgauge did not write, put in an export (more trials of the
    run, say), was left out without a word: a directory SOURCE reads its own three
    files. It is refused, naming the file; the export's trials file named alone is
    read without it; other files (a note) are left alone."""
    folder = tmp_path / "export"
    shutil.copytree(exported, folder)
    (folder / "notes.txt").write_text("read me")
    code, expected, err = cli("metrics", str(folder), "--json")
    assert code == 0, err
    pq.write_table(pa.table({"task_id": ["extra"], "trial": [0], "success": [True]}),
                   folder / "more.parquet")  # fmt: skip
    for source in (str(folder), f"{tmp_path}/*"):
        code, _, err = cli("metrics", source, "--json")
        assert code == 2, err
        assert err == (
            f"agentgauge: error: {folder / 'more.parquet'}: SOURCE: a .parquet file in the "
            f"export {folder} that agentgauge export did not write: a directory SOURCE is "
            f"read as its {TRIALS_FILE}, {EVENTS_FILE} and {GRADES_FILE} alone, so its rows "
            f"would be left out without a word; move it out of the folder, or name "
            f"{folder / TRIALS_FILE} to read the export without it\n"
        )
    code, out, err = cli("metrics", str(folder / TRIALS_FILE), "--json")
    assert code == 0, err
    assert json.loads(out)["groups"] == json.loads(expected)["groups"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("trial_key", [0, 0]), "row 2: trial_key 0 is row 1's too"),
        (_set("trial_key", [None]), "row 1: a value is required, found null"),
        (_set("trial_key", ["0"], pa.string()), "expected an integer, found Arrow type string"),
    ],
)
def test_each_trial_has_a_key_of_its_own(
    cli: Cli, exported: Path, tmp_path: Path, change: Any, message: str
) -> None:
    """A key held twice gave one trial's events and grades to another, and the behaviour
    metrics derived from them (a file without facts) changed without a word; a key that
    is no integer was blamed on events.parquet."""
    from agentgauge.facts import FACTS

    folder = _trials(exported, tmp_path, lambda t: change(t.drop_columns(list(FACTS))))
    for command in (["show", str(folder), "--json"], ["metrics", str(folder)]):
        code, _, err = cli(*command)
        assert code == 2, err
        assert f"{TRIALS_FILE}: trial_key: {message}" in err, err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_task_ids_and_trial_indexes_are_checked_as_in_jsonl(tmp_path: Path) -> None:
    """A JSONL file refuses two spellings of one task id and a trial index past
    2^63 - 2; Parquet counted café twice (as two tasks that print the same)."""
    one, two = tmp_path / "x", tmp_path / "y"
    one.mkdir()
    two.mkdir()
    ids = ["caf\u00e9", "cafe\u0301", "b", "b"]
    pq.write_table(
        pa.table({"task_id": ids, "trial": [0, 1, 0, 1], "success": [True, False, True, True]}),
        one / TRIALS_FILE,
    )
    with pytest.raises(InputError, match=r"row 2: task ids 'caf\\xe9' \(row 1 of .*x/trials"):
        open_source(str(one))
    jsonl = tmp_path / "n.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"task_id": t, "success": True}) + "\n" for t in ids[:2]), "utf-8"
    )
    with pytest.raises(InputError, match="differ only in Unicode normalization"):
        open_source(str(jsonl))
    # Across the files of a glob too.
    pq.write_table(
        pa.table({"task_id": [ids[0]], "trial": [0], "success": [True]}), one / TRIALS_FILE
    )
    pq.write_table(
        pa.table({"task_id": [ids[1]], "trial": [0], "success": [True]}), two / TRIALS_FILE
    )
    with pytest.raises(InputError, match=r"y/trials.parquet: task_id: row 1: .*differ only"):
        open_source(f"{tmp_path}/[xy]")
    pq.write_table(
        pa.table({"task_id": ["a"], "trial": [2**63 - 1], "success": [True]}), one / TRIALS_FILE
    )
    with pytest.raises(InputError, match=r"trial: row 1: .* is past the largest trial index"):
        open_source(str(one))


def test_a_minimal_file_from_another_tool_is_a_source(tmp_path: Path) -> None:
    """A trials file with only the required columns (what a Polars or DuckDB user
    writes) reads with the trial record's defaults."""
    path = tmp_path / "mine.parquet"
    pq.write_table(
        pa.table({"task_id": ["a", "a", "b"], "trial": [0, 1, 0], "success": [True, False, True]}),
        path,
    )
    source = open_source(str(path))
    table = source.table
    assert table.variant.tolist() == ["base"] * 3
    np.testing.assert_array_equal(table.score, [1.0, 0.0, 1.0])
    assert np.isnan(table.cost_usd).all() and not table.infra_error.any()
    assert [t.score for t in source.trials] == [1.0, 0.0, 1.0]
    with pytest.raises(InputError, match="no such file"):
        open_source(str(tmp_path / "nope.parquet"))


# --------------------------------------------------------------------------- docs


def test_docs_name_every_column_with_its_arrow_type() -> None:
    text = (ROOT / "docs" / "parquet.md").read_text(encoding="utf-8")
    for file, schema in (
        (TRIALS_FILE, trials_schema()),
        (EVENTS_FILE, events_schema()),
        (GRADES_FILE, grades_schema()),
    ):
        section = text.split(f"## {file}", 1)[1].split("\n## ", 1)[0]
        for f in schema:
            shown = "dictionary<string>" if pa.types.is_dictionary(f.type) else str(f.type)
            assert f"| `{f.name}` | {shown} |" in section, (file, f.name)


def test_metrics_and_horizon_of_an_export_never_build_trials(
    exported: Path, retail: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every metric, tool use, control and reliability included, is computed from the
    columns of trials.parquet (its facts among them): building a trial is an error here."""
    import agentgauge.parquet.read as read
    from agentgauge import horizon, metrics

    want = metrics(f"{retail}:r", k=(1, 2)).to_dict()
    assert {"tool_use", "control"} <= set(want["groups"][0])

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Trial was built")

    monkeypatch.setattr(read, "read_trials", refuse)
    assert metrics(str(exported), k=(1, 2)).to_dict() == want
    assert metrics(f"{exported}#agent=builtin:careful", k=(1, 2)).to_dict() == want
    assert horizon(str(exported), bootstrap=20).to_dict()["groups"]
    with pytest.raises(AssertionError, match="a Trial was built"):
        _ = open_source(str(exported)).trials  # what show and report read is built on demand


def test_a_file_without_facts_gives_its_behaviour_from_its_transcripts(
    cli: Cli, retail: Path, exported: Path, tmp_path: Path
) -> None:
    """A trials file another tool wrote has no fact columns: the behaviour metrics then
    derive them from events.parquet and grades.parquet, with the same figures."""
    from agentgauge.facts import FACTS

    folder = _trials(exported, tmp_path, lambda t: t.drop_columns(list(FACTS)))
    assert metrics_json(cli, str(folder)) == metrics_json(cli, f"{retail}:r")


def test_a_fact_column_of_the_wrong_type_is_named(cli: Cli, exported: Path, tmp_path: Path) -> None:
    folder = _trials(exported, tmp_path, _set("tool_errors", ["many"], pa.string()))
    code, _, err = cli("metrics", str(folder))
    assert code == 2 and "tool_errors: expected an integer" in err and "Traceback" not in err


_LABEL = st.one_of(st.none(), st.sampled_from(["a", "b", "é", "x\x00y", ""]))
_NUMBER = st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False), st.just(5e-324))


@st.composite
def _any_trials(draw: st.DrawFn) -> list[Trial]:
    n = draw(st.integers(1, 12))
    # One family per task, which a trial may leave out: two are refused by every reader.
    families = draw(st.fixed_dictionaries({t: _LABEL for t in ("t1", "t2", "t3", "ü")}))
    out = []
    for i in range(n):
        score = draw(st.one_of(st.none(), st.floats(0, 1)))
        task_id = draw(st.sampled_from(sorted(families)))
        out.append(
            Trial(
                task_id=task_id,
                trial=i,
                score=score,
                success=draw(st.booleans()) if score is None else None,
                agent=draw(_LABEL),
                family=draw(st.sampled_from([None, families[task_id]])),
                split=draw(st.sampled_from([None, "dev", "heldout"])),
                cost_usd=draw(_NUMBER),
                latency_s=draw(_NUMBER),
                input_tokens=draw(st.one_of(st.none(), st.integers(0, 2**62))),
                confidence=draw(st.one_of(st.none(), st.floats(0, 1))),
                status=draw(st.sampled_from(["completed", "error", "timeout"])),
                error_kind=draw(st.sampled_from([None, "agent", "infra"])),
                answer=draw(st.one_of(st.none(), st.text(max_size=5))),
                final_state=draw(st.sampled_from([None, {}, {"k": [1, "ü"]}])),
                metadata=draw(st.sampled_from([{}, {"n": 1.5}])),
            )
        )
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trials=_any_trials())
def test_any_trials_come_back_from_parquet_bit_for_bit(
    tmp_path_factory: pytest.TempPathFactory, trials: list[Trial]
) -> None:
    from agentgauge import metrics
    from agentgauge.exporters import export_parquet
    from agentgauge.schema import Run

    folder = tmp_path_factory.mktemp("prop")
    db = folder / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="p", created_at="2026-01-01T00:00:00+00:00"))
        store.add_trials("p", trials)
    export_parquet(f"{db}:p", folder / "out")
    source = open_source(str(folder / "out"))
    with Store(db, readonly=True) as store:
        assert [t.model_dump() for t in source.trials] == [
            t.model_dump() for t in store.trials("p")
        ]
    by = ("agent", "family")
    assert metrics(str(folder / "out"), k=(1, 2), by=by).to_dict() == (
        metrics(f"{db}:p", k=(1, 2), by=by).to_dict()
    )


@pytest.mark.parametrize("name", [TRIALS_FILE, EVENTS_FILE, GRADES_FILE])
def test_damaged_bytes_are_an_input_error_never_a_crash(
    exported: Path, tmp_path: Path, name: str
) -> None:
    """Bytes flipped anywhere in a file (a damaged disk, a partial copy): every read
    either succeeds or is an `InputError`; another exception is a crash."""
    import random

    rng = random.Random(name)
    folder = tmp_path / "damaged"
    shutil.copytree(exported, folder)
    data = (exported / name).read_bytes()
    errors = 0
    for _ in range(40):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        (folder / name).write_bytes(bytes(damaged))
        try:
            source = open_source(str(folder))
            assert len(source.trials) == len(source.table)
        except InputError:
            errors += 1
    assert errors > 0  # the damage was seen at least once


@given(
    st.lists(
        st.tuples(
            st.lists(
                st.one_of(st.none(), st.sampled_from(["a", "b", "c", "\x00", ""])), max_size=12
            ),
            st.booleans(),
            st.permutations(["a", "b", "c", "\x00", "", "unused"]),
        ),
        max_size=4,
    )
)
def test_label_columns_are_coded_as_factorize_codes_them(
    chunks: list[tuple[list[str | None], bool, list[str]]],
) -> None:
    """However a file stores a label column (plain strings, or a dictionary in any order
    holding values no row uses, with nulls), its coding is the one `factorize` gives."""
    from agentgauge.parquet.read import _encode
    from agentgauge.table import factorize

    arrays = []
    for values, as_dictionary, dictionary in chunks:
        if as_dictionary:
            indices = pa.array(
                [None if v is None else dictionary.index(v) for v in values], pa.int32()
            )
            arrays.append(pa.DictionaryArray.from_arrays(indices, pa.array(dictionary)))
        else:
            arrays.append(pa.array(values, pa.string()))
    if not arrays or len({a.type for a in arrays}) > 1:  # a chunked array holds one type
        arrays = [a.dictionary_decode() if pa.types.is_dictionary(a.type) else a for a in arrays]
    column = pa.chunked_array(arrays, pa.string() if not arrays else arrays[0].type)
    values = column.to_pylist()
    column_of = np.empty(len(values), dtype=object)
    column_of[:] = values
    want_uniques, want_codes = factorize(column_of)
    uniques, codes = _encode(column)
    assert uniques.tolist() == want_uniques.tolist()
    assert codes.tolist() == want_codes.tolist()


@pytest.mark.parametrize("deeper", [False, True])
def test_json_nested_as_deep_as_the_reader_takes_round_trips_and_deeper_is_refused(
    cli: Cli, tmp_path: Path, deeper: bool
) -> None:
    """The store kept metadata nested 101 levels deep, the export wrote it (exit 0), and
    reading the export back refused it ("trials.parquet: metadata: row 1: nested too
    deeply"): the export now refuses it, naming the trial, and writes nothing."""
    from agentgauge.schema import Run
    from agentgauge.textio import MAX_DEPTH

    metadata: dict[str, Any] = {}
    inner = metadata
    for _ in range(MAX_DEPTH - 1 + deeper):  # MAX_DEPTH objects in all, or one more
        inner["a"] = inner = {}
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="p", created_at="2026-01-01T00:00:00+00:00"))
        store.add_trials("p", [Trial(task_id="t", trial=0, success=True, metadata=metadata)])
        (pk,) = store.trial_keys("p")
    out = tmp_path / "pq"
    code, _, err = cli("export", f"{db}:p", "--parquet", str(out))
    if deeper:
        assert code == 2
        assert err == (
            f"agentgauge: error: {db}: metadata: trial {pk} of run 'p' is nested too deeply"
            f" to export: more than {MAX_DEPTH} levels of arrays and objects, which no reader"
            " of the export (agentgauge's Parquet and JSONL readers) takes back\n"
        )
        assert _export_files(tmp_path) == ["s.db"]
        return
    assert code == 0, err
    (back,) = open_source(str(out)).trials
    assert back.metadata == metadata
