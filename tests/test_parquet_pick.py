"""A Parquet export builds only the trials a command shows (`TrialSource.pick`).

``show EXPORT --task T --trial K`` and a report's failing-trial transcripts built every
trial of the export (each with its transcript and grades) to show a few: on a
100,000-trial export, the whole read for one transcript. They now read the row groups
holding the trials asked for, and of events.parquet and grades.parquet the rows of
those trials, and build those trials alone: the same `Trial` objects, field for field,
as building them all gives, and as the store the export came from gives.

The checks of a trial record apply to the rows read, named by their row in the file;
the keys joining events and grades to trials are checked for every row (they are read
whole to find the rows wanted); what every command checks when it opens an export
(duplicates, a task in two families, each column's types and values) still holds.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.conftest import Cli

from agentgauge.errors import InputError
from agentgauge.parquet import EVENTS_FILE, GRADES_FILE, TRIALS_FILE
from agentgauge.schema import Trial
from agentgauge.sources import open_source

TASKS, TRIALS, AGENTS, VARIANTS = 12, 3, ("a", "b"), ("base", "paraphrase:1")
N = TASKS * TRIALS * len(AGENTS) * len(VARIANTS)
#: Rows a row group of the export holds: the export's trials span many of them.
BATCH = 8


def _record(agent: str, task: int, k: int, variant: str) -> dict[str, Any]:
    ok = (task + k + (agent == "b")) % 3 != 0
    return {
        "task_id": f"t{task:02d}",
        "trial": k,
        "agent": agent,
        "model": "m",
        "variant": variant,
        "family": f"f{task % 4}",
        "success": ok,
        "score": float(ok),
        "status": "completed" if task != 5 else "error",
        "error_kind": None if task != 5 else "infra",
        "error": None if task != 5 else f"boom {agent} {k}",
        "cost_usd": 0.001 * (1 + k),
        "seed": 1000 + k,
        "answer": f"answer {agent} {task} {k} {variant}",
        "metadata": {"note": f"{agent}-{task}-{k}", "tags": [task, k]},
        "final_state": {"cart": [task % 3], "done": ok},
        "events": [
            {"type": "message", "role": "user", "content": f"do task {task} ({variant})"},
            {"type": "tool_call", "name": "add", "arguments": {"n": task}, "call_id": "c0"},
            {"type": "tool_result", "name": "add", "call_id": "c0", "content": f"{k}"},
            {"type": "message", "role": "assistant", "content": f"done {agent}"},
        ][: 2 + (task + k) % 3],
        "grades": [
            {
                "grader": "state",
                "passed": ok,
                "score": float(ok),
                "status": None if ok else "wrong_state",
                "evidence": {"why": f"{task}/{k}"},
            },
            {"grader": "answer", "passed": True, "score": 1.0},
        ],
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store: one run of two agents, each task in two variants."""
    from agentgauge.importers import import_file

    folder = tmp_path_factory.mktemp("pick")
    path = folder / "r.jsonl"
    lines = [
        _record(agent, t, k, v)
        for agent in AGENTS
        for t in range(TASKS)
        for v in VARIANTS
        for k in range(TRIALS)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    db = folder / "s.db"
    import_file("jsonl", path, store=db, run_id="r")
    return db


@pytest.fixture(scope="module")
def export(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run exported in row groups of `BATCH` rows (a 100,000-trial export's hold
    65,536), so that reading a few trials' row groups is not reading the file."""
    from agentgauge.parquet.write import write_parquet

    out = tmp_path_factory.mktemp("pq") / "r"
    write_parquet(store, "r", out, batch=BATCH)
    assert pq.ParquetFile(out / TRIALS_FILE).metadata.num_row_groups == N // BATCH
    return out


class Reads:
    """The `Trial` models built, the events built, and the rows of each column read from
    the Parquet files (decoded by Arrow, whether or not a model is built of them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import agentgauge.parquet.read as read

        self.trials = 0
        self.events = 0
        self.rows: dict[str, int] = {}
        validate, event_from = Trial.model_validate, read.event_from

        def counted_trial(data: Any, **kwargs: Any) -> Trial:
            self.trials += 1
            return validate(data, **kwargs)

        def counted_event(*args: Any) -> Any:
            self.events += 1
            return event_from(*args)

        monkeypatch.setattr(read.Trial, "model_validate", counted_trial)
        monkeypatch.setattr(read, "event_from", counted_event)
        for method in ("read", "read_row_groups"):
            real = getattr(pq.ParquetFile, method)

            def counted_read(file: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
                table = _real(file, *args, **kwargs)
                for name in table.column_names:
                    self.rows[name] = self.rows.get(name, 0) + table.num_rows
                return table

            monkeypatch.setattr(pq.ParquetFile, method, counted_read)


def _dumps(trials: list[Trial]) -> list[str]:
    return [t.model_dump_json() for t in trials]


def _show(cli: Cli, source: str, *args: str) -> dict[str, Any]:
    code, out, err = cli("show", source, *args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    doc.pop("source")
    return dict(doc)


# --------------------------------------------------------------------------- show


def test_show_of_one_trial_of_an_export_builds_its_tasks_trials_alone(
    cli: Cli, store: Path, export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _show(cli, f"{store}:r", "--task", "t07", "--trial", "1")
    reads = Reads(monkeypatch)
    got = _show(cli, str(export), "--task", "t07", "--trial", "1")
    assert got == want
    assert [(t["agent"], t["variant"]) for t in got["trials"]] == [
        (a, v) for a in AGENTS for v in VARIANTS
    ]
    of_task = len(AGENTS) * len(VARIANTS) * TRIALS
    assert got["n_task_trials"] == of_task
    # The task's trials (what the page counts) are built, no other trial of the export,
    # with their transcripts.
    assert reads.trials == of_task < N
    per_trial = len(AGENTS) * len(VARIANTS)
    assert reads.events == per_trial * sum(2 + (7 + k) % 3 for k in range(TRIALS))
    # Their row groups are read, not the file's: its documents and transcripts alone.
    events = per_trial * sum(2 + (t + k) % 3 for t in range(TASKS) for k in range(TRIALS))
    assert reads.rows["metadata"] <= of_task * BATCH < N
    assert reads.rows["data"] < events


@pytest.mark.parametrize(
    "args",
    [
        ("--task", "t05"),
        ("--task", "t00", "--failed"),
        ("--task", "t11", "--variant", "paraphrase"),
        ("--task", "t03", "--trial", "2", "--variant", "base"),
    ],
)
def test_show_of_an_export_is_the_stores(
    cli: Cli, store: Path, export: Path, args: tuple[str, ...]
) -> None:
    for selector in ("", "#agent=b"):
        want = _show(cli, f"{store}:r{selector}", *args)
        assert want["trials"]
        assert _show(cli, f"{export}{selector}", *args) == want


def test_show_of_a_task_no_trial_has_names_the_exports_tasks(cli: Cli, export: Path) -> None:
    code, _, err = cli("show", str(export), "--task", "t7")
    assert code == 2 and "no task 't7' in this source (12 tasks; e.g. 't07'" in err, err


# --------------------------------------------------------------------------- pick


@pytest.mark.parametrize("selector", ["", "#agent=b", "#agent=a,model=m"])
def test_picked_trials_are_the_built_ones_field_for_field(
    store: Path, export: Path, monkeypatch: pytest.MonkeyPatch, selector: str
) -> None:
    every = _dumps(open_source(f"{export}{selector}").trials)
    n = len(every)
    rows = [n - 1, 3, 17, 3, 0, n // 2]  # any order, one row twice
    reads = Reads(monkeypatch)
    source = open_source(f"{export}{selector}")
    picked = source.pick(rows)
    assert _dumps(picked) == [every[r] for r in rows]
    assert reads.trials == len(set(rows))
    assert reads.rows["metadata"] <= len(set(rows)) * BATCH < N
    # Without transcripts: as the store's pick gives them, events left out.
    stored = open_source(f"{store}:r{selector}").pick(rows, events=False)
    assert _dumps(source.pick(rows, events=False)) == _dumps(stored)
    assert all(not t.events and t.grades for t in stored)
    # Every row picked is every trial, in the export's order.
    assert _dumps(open_source(f"{export}{selector}").pick(range(n))) == every


def test_a_glob_of_two_exports_picks_from_each(
    store: Path, export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentgauge.parquet.write import write_parquet

    for i, agent in enumerate(("b", "a")):
        write_parquet(store, "r", tmp_path / "x" / str(i), batch=BATCH, selector=_agent(agent))
    for selector in ("", "#agent=a"):
        glob = f"{tmp_path}/x/*{selector}"
        every = _dumps(open_source(glob).trials)
        rows = [len(every) - 1, 0, 5, len(every) // 2 + 1, len(every) // 2 - 1]
        reads = Reads(monkeypatch)
        assert _dumps(open_source(glob).pick(rows)) == [every[r] for r in rows]
        assert reads.trials == len(rows)


def _agent(name: str) -> Any:
    from agentgauge.sources import Selector

    return Selector(agent=name)


# --------------------------------------------------------------------------- report


def test_a_report_of_an_export_is_the_stores_and_builds_what_it_shows(
    cli: Cli, store: Path, export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = {}
    for name, source in (("store", f"{store}:r"), ("export", str(export))):
        if name == "export":
            reads = Reads(monkeypatch)
        out = tmp_path / f"{name}.html"
        code, _, err = cli("report", source, "--html", str(out), "--markdown", str(out) + ".md")
        assert code == 0, err
        pages[name] = [
            re.sub(r"generated [0-9T:+-]+", "", out.read_text(encoding="utf-8")),
            Path(str(out) + ".md").read_text(encoding="utf-8"),
        ]
    assert pages["export"] == pages["store"]
    assert '<div class="transcript"' in pages["export"][0]
    # The failing trials of the cells shown, never every trial of the export.
    assert 0 < reads.trials < N // 2
    assert reads.rows["metadata"] < N


# --------------------------------------------------------------------------- checks


def _copy(export: Path, tmp_path: Path, name: str, change: Any) -> Path:
    folder = tmp_path / "bad"
    shutil.copytree(export, folder)
    pq.write_table(change(pq.read_table(folder / name)), folder / name, row_group_size=BATCH)
    return folder


def _set_at(column: str, row: int, value: Any, type_: pa.DataType | None = None) -> Any:
    """Column ``column`` with ``value`` at 0-based ``row`` (``type_``: the column as that
    type, a value of it that the trial record's type does not hold)."""

    def change(table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(column)
        values = table.column(column).to_pylist()
        if type_ is not None:
            values = [v or 0 for v in values]
        values[row] = value
        return table.set_column(i, column, pa.array(values, type_ or table.schema.field(i).type))

    return change


def _rows_of(export: Path, task: str, trial: int) -> dict[str, list[int]]:
    """The rows of each file of the export holding ``task``'s trials numbered ``trial``,
    their events and their grades (0-based)."""
    trials = pq.read_table(export / TRIALS_FILE, columns=["trial_key", "task_id", "trial"])
    mine = [
        i
        for i, (t, k) in enumerate(
            zip(trials["task_id"].to_pylist(), trials["trial"].to_pylist(), strict=True)
        )
        if t == task and k == trial
    ]
    keys = {trials["trial_key"][i].as_py() for i in mine}
    out = {TRIALS_FILE: mine}
    for name in (EVENTS_FILE, GRADES_FILE):
        column = pq.read_table(export / name, columns=["trial_key"])["trial_key"].to_pylist()
        out[name] = [i for i, k in enumerate(column) if k in keys]
    return out


@pytest.mark.parametrize(
    ("name", "column", "value", "type_", "field", "message"),
    [
        (TRIALS_FILE, "metadata", "[1]", None, "metadata", "Input should be a valid dictionary"),
        (TRIALS_FILE, "final_state", "{oops", None, "final_state", "invalid JSON"),
        (TRIALS_FILE, "seed", 2**64 - 1, pa.uint64(), "seed", "cannot be read as int64"),
        (EVENTS_FILE, "data", "{not json", None, "data", "invalid JSON"),
        (EVENTS_FILE, "data", "[1]", None, "data", "expected a JSON object, got list"),
        (EVENTS_FILE, "type", "teleport", None, "data", ""),
        (EVENTS_FILE, "seq", None, None, "seq", "a value is required"),
        (GRADES_FILE, "evidence", "[1,", None, "evidence", "invalid JSON"),
        (GRADES_FILE, "score", 7.0, None, "score", ""),
    ],
)
def test_a_bad_value_in_a_row_read_is_named_by_its_row_in_the_file(
    cli: Cli,
    export: Path,
    tmp_path: Path,
    name: str,
    column: str,
    value: Any,
    type_: pa.DataType | None,
    field: str,
    message: str,
) -> None:
    row = _rows_of(export, "t09", 2)[name][-1]
    folder = _copy(export, tmp_path, name, _set_at(column, row, value, type_))
    code, _, err = cli("show", str(folder), "--task", "t09", "--trial", "2", "--json")
    assert code == 2, err
    assert f"{folder / name}: {field}: row {row + 1}: {message}" in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    # The same error as a read of the whole export gives (the failures view builds
    # every trial).
    assert cli("show", str(folder), "--json")[2] == err
    # A task whose rows are fine is shown: the bad row is not one it reads.
    assert _show(cli, str(folder), "--task", "t01")["trials"]


def test_a_bad_join_key_is_refused_whatever_rows_are_read(
    cli: Cli, export: Path, tmp_path: Path
) -> None:
    """The keys that join events and grades to their trials are read whole to find a
    trial's rows: one naming no trial is refused wherever it is, as a whole read does."""
    last = pq.ParquetFile(export / EVENTS_FILE).metadata.num_rows - 1
    folder = _copy(export, tmp_path, EVENTS_FILE, _set_at("trial_key", last, 10**9))
    code, _, err = cli("show", str(folder), "--task", "t00", "--trial", "0", "--json")
    assert code == 2, err
    assert f"{EVENTS_FILE}: trial_key: row {last + 1}: trial_key 1000000000 is not a trial" in err
    folder = _copy(export, tmp_path / "2", TRIALS_FILE, _set_at("trial_key", N - 1, 0))
    code, _, err = cli("show", str(folder), "--task", "t00", "--trial", "0", "--json")
    assert code == 2 and f"trial_key: row {N}: trial_key 0 is row 1's too" in err, err


def test_the_checks_of_the_whole_export_hold_for_a_pick(export: Path, tmp_path: Path) -> None:
    """What every command checks when it opens an export is checked before a trial is
    picked: here a task whose rows name two families, far from the trial shown."""
    folder = _copy(export, tmp_path, TRIALS_FILE, _set_at("family", N - 1, "elsewhere"))
    with pytest.raises(InputError, match=f"{TRIALS_FILE}: family: row {N}: "):
        open_source(str(folder))
