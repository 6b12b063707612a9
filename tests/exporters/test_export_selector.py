"""``agentgauge export DB:RUN#selector``: the ``#agent=``, ``#model=`` and ``#grade=N``
of a SOURCE are honoured by every export format, as by every command that reads a
SOURCE (docs/cli.md, "SOURCE").

Before, the ``#...`` part was dropped: ``export 's.db:m#agent=nobody' --jsonl x.jsonl``
wrote every trial with exit 0, and ``#grade=2`` wrote the active version 1. Each check
here re-imports what was exported and asks ``metrics`` of it, which must say exactly
what ``metrics`` of the same SOURCE says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli, metrics_json

from agentgauge.importers import import_file
from agentgauge.schema import Grade
from agentgauge.store import Store

FORMATS = ("jsonl", "otel", "parquet")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run ``two``: agents a and b (model m) over 6 tasks, 3 trials each, graded by
    ``g``; and a grade version 2, not active, that grades b's trials of even tasks the
    other way (with grader ``g2``), so that every selector gives other numbers."""
    folder = tmp_path_factory.mktemp("sel")
    lines = [
        {
            "task_id": f"t{t}",
            "trial": k,
            "agent": agent,
            "model": "m",
            "success": bool((t + k + (agent == "b")) % 3),
            "grades": [{"grader": "g", "passed": bool((t + k + (agent == "b")) % 3)}],
            "events": [{"type": "message", "role": "user", "content": f"{agent} {t} {k}"}],
        }
        for agent in ("a", "b")
        for t in range(6)
        for k in range(3)
    ]
    src = folder / "two.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = folder / "s.db"
    import_file("jsonl", src, store=db, run_id="two")
    with Store(db) as s, s.transaction():
        version = s.new_grade_version("two", ["g2"], "test")
        for pk, trial in zip(s.trial_keys("two"), s.trials("two"), strict=True):
            flip = trial.agent == "b" and int(trial.task_id[1:]) % 2 == 0
            success = bool(trial.success) != flip
            s.add_outcome(pk, version, success, float(success))
            s.add_grades(pk, version, [Grade(grader="g2", passed=success)])
    return db


def read_back(cli: Cli, fmt: str, out: Path, tmp_path: Path) -> str:
    """What was exported, as a SOURCE: imported into a store of its own, or the Parquet
    export itself."""
    if fmt == "parquet":
        return str(out)
    db = tmp_path / f"back-{fmt}.db"
    code, _, err = cli("import", fmt, str(out), "--store", str(db), "--run-id", "back")
    assert code == 0, err
    return f"{db}:back"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("selector", "extra", "same_as"),
    [
        ("", (), ""),
        ("#agent=a", (), "#agent=a"),
        ("#agent=b,model=m", (), "#agent=b,model=m"),
        ("#model=m", (), "#model=m"),
        ("#grade=2", (), "#grade=2"),
        ("#agent=b,grade=2", (), "#agent=b,grade=2"),
        ("#agent=b", ("--grade-version", "2"), "#agent=b,grade=2"),
        ("#grade=2", ("--grade-version", "2"), "#grade=2"),  # both, the same: no conflict
        ("", ("--grade-version", "1"), "#grade=1"),
    ],
)
def test_an_export_holds_what_metrics_of_the_same_source_counts(
    cli: Cli,
    store: Path,
    tmp_path: Path,
    fmt: str,
    selector: str,
    extra: tuple[str, ...],
    same_as: str,
) -> None:
    out = tmp_path / ("x" if fmt == "parquet" else f"x.{fmt}")
    code, said, err = cli("export", f"{store}:two{selector}", f"--{fmt}", str(out), *extra)
    assert code == 0, err
    expected = metrics_json(cli, f"{store}:two{same_as}")
    got = metrics_json(cli, read_back(cli, fmt, out, tmp_path))
    pick = ("agent", "model", "n_tasks", "n_trials", "n_successes", "success_rate")
    assert [{k: g[k] for k in pick} for g in got["groups"]] == [
        {k: g[k] for k in pick} for g in expected["groups"]
    ]
    assert got["groups"] == expected["groups"]
    # The line printed names what was exported as a SOURCE that counts the same.
    named = " ".join(said.split()).split(" of ", 1)[1].split(" to ", 1)[0]
    assert metrics_json(cli, named)["groups"] == expected["groups"]


def test_a_parquet_export_of_one_agent_holds_its_events_and_grades_only(
    cli: Cli, store: Path, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "b"
    code, said, err = cli("export", f"{store}:two#agent=b,grade=2", "--parquet", str(out))
    assert code == 0, err
    assert "exported 18 trials, 18 events and 18 grades (grade version 2)" in said
    trials = pq.read_table(out / "trials.parquet").to_pylist()
    events = pq.read_table(out / "events.parquet").to_pylist()
    grades = pq.read_table(out / "grades.parquet").to_pylist()
    assert {t["agent"] for t in trials} == {"b"}
    # Each event and grade points at its own trial of the export, by the key written.
    index = {t["trial_key"]: t for t in trials}
    assert sorted(index) == list(range(18))
    for event in events:
        trial = index[event["trial_key"]]
        assert json.loads(event["data"])["content"] == f"b {trial['task_id'][1:]} {trial['trial']}"
    assert {g["grader"] for g in grades} == {"g2"}
    assert all(g["passed"] == index[g["trial_key"]]["success"] for g in grades)


def test_the_selectors_give_other_numbers(cli: Cli, store: Path) -> None:
    """The fixture is one where a dropped selector shows: each differs from the run."""
    whole = metrics_json(cli, f"{store}:two")["groups"]
    assert len(whole) == 2
    for selector in ("#agent=a", "#grade=2", "#agent=b,grade=2"):
        assert metrics_json(cli, f"{store}:two{selector}")["groups"] != whole


@pytest.mark.parametrize("fmt", ("jsonl", "otel"))
def test_grade_version_n_exports_its_grades_too(
    cli: Cli, store: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / f"v2.{fmt}"
    assert cli("export", f"{store}:two#grade=2", f"--{fmt}", str(out))[0] == 0
    db = tmp_path / "back.db"
    assert cli("import", fmt, str(out), "--store", str(db), "--run-id", "back")[0] == 0
    with Store(store, readonly=True) as s, Store(db, readonly=True) as b:
        want = s.trials("two", grade_version=2)
        got = b.trials("back")
    assert {g.grader for t in got for g in t.grades} == {"g2"}
    assert [(t.task_id, t.agent, t.success) for t in got] == [
        (t.task_id, t.agent, t.success) for t in want
    ]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("selector", "extra"),
    [
        ("#agent=nobody", ()),
        ("#agent=a,model=other", ()),
        ("#grade=7", ()),
        ("#agent=a", ("--grade-version", "7")),
    ],
)
def test_a_selector_that_cannot_be_honoured_is_the_error_metrics_gives(
    cli: Cli, store: Path, tmp_path: Path, fmt: str, selector: str, extra: tuple[str, ...]
) -> None:
    source = f"{store}:two{selector}"
    out = tmp_path / ("x" if fmt == "parquet" else f"x.{fmt}")
    code, said, err = cli("export", source, f"--{fmt}", str(out), *extra)
    # metrics of the same SOURCE, the --grade-version spelled as #grade= (metrics has none)
    asked = f"{source},grade={extra[1]}" if extra else source
    m_code, _, m_err = cli("metrics", asked)
    assert code == 2 and m_code == 2
    if extra:  # each names the version where it was typed
        m_err = m_err.replace(": #grade: ", ": --grade-version: ")
    assert err == m_err and err.count("\n") == 1 and "Traceback" not in err
    assert said == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_different_grade_versions_are_refused(
    cli: Cli, store: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / ("x" if fmt == "parquet" else f"x.{fmt}")
    code, _, err = cli(
        "export", f"{store}:two#grade=1", f"--{fmt}", str(out), "--grade-version", "2"
    )
    assert code == 2 and err.count("\n") == 1
    assert "two grade versions asked for: #grade=1 in SOURCE and --grade-version 2" in err
    assert not out.exists()
