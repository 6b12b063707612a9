from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.errors import InputError
from agentgauge.importers import import_file
from agentgauge.schema import (
    ControlEvent,
    Grade,
    MessageEvent,
    ModelCallEvent,
    Run,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.store import MissingRun, Store, TrialWriter, utc_now
from agentgauge.table import COLUMNS, TrialTable


def test_round_trip_trials_events_grades(tmp_path: Path) -> None:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r1", created_at=utc_now(), agent="a"))
    t = Trial(
        task_id="t1",
        trial=0,
        score=0.5,
        cost_usd=0.01,
        events=[ToolCallEvent(name="f", arguments={"x": [1, 2]}, call_id="c")],
        grades=[Grade(grader="state", passed=False, score=0.0, evidence={"diff": ["a"]})],
    )
    db.add_trial("r1", t)
    (back,) = db.trials("r1")
    assert back.score == 0.5 and back.success is False
    assert back.events == t.events
    assert back.grades == t.grades
    table = db.table("r1")
    assert table.cost_usd.tolist() == [0.01]
    assert np.isnan(table.latency_s[0])
    with pytest.raises(InputError, match="already stored"):
        db.add_trial("r1", t)
    assert db.integrity_check() == "ok"
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_one_trial_by_key_is_the_trial_the_run_reads(tmp_path: Path) -> None:
    """`Store.trial` (what show and the viewer open) reads the same trial, transcript,
    final state and grades as the whole-run reader, and nothing of another run."""
    db = Store(tmp_path / "s.db")
    for run in ("r1", "r2"):
        db.create_run(Run(run_id=run, created_at=utc_now()))
    trials = [
        Trial(
            task_id=f"t{i}",
            trial=0,
            success=i == 1,
            final_state={"n": i},
            events=[MessageEvent(role="user", content=f"hi {i}")],
            grades=[Grade(grader="state", passed=i == 1, evidence={"i": i})],
        )
        for i in range(3)
    ]
    db.add_trials("r1", trials)
    db.add_trials("r2", trials[:1])
    keys = db.trial_keys("r1")
    for key, whole in zip(keys, db.trials("r1"), strict=True):
        assert db.trial("r1", key) == whole
    assert db.trial("r2", keys[1]) is None  # another run's key
    assert db.trial("r1", max(keys) + 100) is None


def test_failed_import_leaves_store_unchanged(tmp_path: Path) -> None:
    db_path = tmp_path / "s.db"
    good = tmp_path / "good.jsonl"
    good.write_text('{"task_id": "a", "success": true}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "success": true}\n{"task_id": "b", "score": 2}\n')
    with Store(db_path) as db:
        import_file("jsonl", good, db, "keep")
        before = db.conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        with pytest.raises(InputError):
            import_file("jsonl", bad, db, "bad")
        assert db.get_run("bad") is None
        assert db.conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == before


def test_import_records_provenance(tmp_path: Path) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text('{"task_id": "a", "success": true, "agent": "bot"}\n')
    with Store(tmp_path / "s.db") as db:
        run = import_file("jsonl", src, db)
        stored = db.require_run(run.run_id)
    assert stored.source_sha256 is not None and len(stored.source_sha256) == 64
    assert stored.agentgauge_version
    assert stored.agent == "bot"
    assert stored.n_trials == 1


def test_cli_import_bad_file_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps({"task_id": f"t{i}", "success": True}) for i in range(6)]
    lines.append('{"task_id": "t7", "success": true')  # bad JSON on line 7
    bad.write_text("\n".join(lines) + "\n")
    db_path = tmp_path / "s.db"
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "import", "jsonl", str(bad), "--store", str(db_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert f"{bad}:7: invalid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    with Store(db_path) as db:
        assert db.list_runs() == []


def _trials(n: int) -> list[Trial]:
    return [
        Trial(
            task_id=f"t{i % 7}",
            trial=i // 7,
            success=i % 3 == 0,
            final_state={"n": i},
            events=[ToolCallEvent(name="f", arguments={"i": i}, call_id=f"c{i}")],
            grades=[Grade(grader="state", passed=i % 3 == 0, score=float(i % 3 == 0))],
        )
        for i in range(n)
    ]


def test_trial_writer_commits_each_trial_from_its_thread(tmp_path: Path) -> None:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    writer = TrialWriter(db, "r")
    # Holding the write lock keeps the thread from committing while we look.
    blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")

    async def main() -> None:
        for t in _trials(50):
            await writer.submit(t)
        # A file store: queued for the writer's thread, not written by the caller.
        assert writer.pending == 50
        assert db.trials("r") == []
        blocker.execute("ROLLBACK")
        await writer.close()

    asyncio.run(main())
    blocker.close()
    # The same rows as the direct path writes (a second store, written synchronously).
    ref = Store(tmp_path / "ref.db")
    ref.create_run(Run(run_id="r", created_at=utc_now()))
    for t in _trials(50):
        ref.add_trial("r", t)
    assert [t.model_dump() for t in db.trials("r")] == [t.model_dump() for t in ref.trials("r")]
    assert db.get_run("r").n_trials == 50  # type: ignore[union-attr]
    assert db.integrity_check() == "ok"


def test_trial_writer_raises_the_first_write_error_and_stops(tmp_path: Path) -> None:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    first, second = _trials(2)
    writer = TrialWriter(db, "r")

    async def main() -> None:
        try:
            for t in (first, first, second):
                await writer.submit(t)
        finally:
            await writer.close()

    # The same cell twice is a UNIQUE violation in the thread; it surfaces at the
    # next submit or at close, whichever comes first, and nothing after it is written.
    with pytest.raises(InputError, match="already stored"):
        asyncio.run(main())
    assert [(t.task_id, t.trial) for t in db.trials("r")] == [("t0", 0)]


def test_trial_writer_on_an_in_memory_store_writes_in_the_callers_thread() -> None:
    db = Store(":memory:")  # a second connection would open another, empty database
    db.create_run(Run(run_id="r", created_at=utc_now()))
    writer = TrialWriter(db, "r")

    async def main() -> None:
        await writer.submit(_trials(1)[0])
        assert writer.pending == 0
        assert len(db.trials("r")) == 1  # already written, before close
        await writer.close()

    asyncio.run(main())


def test_trials_that_share_a_final_state_share_one_document(tmp_path: Path) -> None:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    db.create_run(Run(run_id="other", created_at=utc_now()))
    same = {"orders": {"W1": {"status": "cancelled", "note": "café"}}}
    for i in range(3):
        db.add_trial("r", Trial(task_id="a", trial=i, success=True, final_state=same))
    db.add_trial("r", Trial(task_id="a", trial=3, success=False, final_state={"orders": {}}))
    db.add_trial("other", Trial(task_id="a", trial=0, success=True, final_state=same))
    count = "SELECT COUNT(*) FROM documents"
    assert db.conn.execute(count).fetchone()[0] == 2
    back = db.trials("r")
    assert [t.final_state for t in back] == [same, same, same, {"orders": {}}]
    # Each trial has its own copy: a grader that edits one state edits no other.
    assert back[0].final_state is not None and back[1].final_state is not None
    back[0].final_state["orders"]["W1"]["status"] = "changed"
    assert back[1].final_state["orders"]["W1"]["status"] == "cancelled"
    # Deleting a run drops the documents only it used, and keeps the shared ones.
    db.delete_run("r")
    assert db.conn.execute(count).fetchone()[0] == 1
    assert db.trials("other")[0].final_state == same
    assert db.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_the_table_is_read_by_name_and_matches_the_trials(tmp_path: Path) -> None:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    full = Trial(
        task_id="a", trial=2, score=0.5, agent="ag", model="m", variant="fault:x", family="f",
        split="heldout", capability="c", human_minutes=3.0, cost_usd=0.25, judge_cost_usd=0.5,
        input_tokens=10, output_tokens=20, latency_s=1.5, tool_calls=3, model_calls=4,
        confidence=0.75, expected_control="refuse", control="act", status="timeout",
        error="slow", error_kind="agent", seed=7, answer="x", metadata={"k": [1]},
    )  # fmt: skip
    db.add_trials("r", [full, Trial(task_id="b", trial=0, success=True, status="error")])
    table, ref = db.table("r"), TrialTable.from_trials(db.trials("r"))
    for name in COLUMNS:
        got, want = getattr(table, name).tolist(), getattr(ref, name).tolist()
        assert repr(got) == repr(want), name  # repr: NaN equals NaN
    assert table.trial.tolist() == [2, 0] and table.input_tokens.tolist()[0] == 10.0
    assert table.infra_error.tolist() == [False, True]
    (back, _) = db.trials("r")
    assert back.model_dump() == full.model_dump()


def test_events_read_back_whole(tmp_path: Path) -> None:
    # An event keeps its type and time in columns; its other fields, defaults
    # left out, in data. What is read back is the event that was written.
    events = [
        MessageEvent(role="user", content="héllo", t=0.0),
        MessageEvent(role="assistant"),
        ToolCallEvent(name="f", t=0.5),
        ToolResultEvent(call_id="c", content={"a": [1, None]}, is_error=True, t=0.75),
        ModelCallEvent(model="m", input_tokens=3, cost_usd=0.0, latency_s=1e-05),
        ControlEvent(decision="stop", reason="done", t=2.0),
    ]
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    db.add_trial("r", Trial(task_id="a", trial=0, success=True, events=events))
    assert db.trials("r")[0].events == events
    stored = db.conn.execute("SELECT type, t, data FROM events ORDER BY seq").fetchall()
    assert stored[0] == ("message", 0.0, '{"role":"user","content":"héllo"}')
    assert stored[2] == ("tool_call", 0.5, '{"name":"f"}')


def test_integrity_check_reports_a_missing_document(tmp_path: Path) -> None:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    db.add_trial("r", Trial(task_id="a", trial=0, success=True, final_state={"x": 1}))
    assert db.integrity_check() == "ok"
    db.conn.execute("DELETE FROM documents")  # what no code of ours does
    assert db.integrity_check() == "1 rows of trials refer to a missing document (final_state_id)"


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)  # past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)  # refused: JSON has no number for them
    | st.text(),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_stored_json_reads_back_as_it_was_written(value: object) -> None:
    # The reader (orjson where it reads exactly, else Python's) against the writer.
    from agentgauge.store.rows import dumps, loads

    text = dumps(value)
    assert loads(text) == json.loads(text) == value
    assert dumps(loads(text)) == text


def test_a_final_state_with_an_integer_past_64_bits_is_read_back_exactly(tmp_path: Path) -> None:
    state = {"accounts": [{"id": 123456789012345678901234, "balance": 0.1}], "n": 2**63}
    trial = Trial(task_id="t", trial=0, success=True, final_state=state, metadata={"k": -(2**70)})
    with Store(tmp_path / "s.db") as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        db.add_trials("r", [trial])
        (back,) = db.trials("r")
    assert back.final_state == state and back.metadata == {"k": -(2**70)}
    assert type(back.final_state["accounts"][0]["id"]) is int


def test_many_trials_in_one_statement_keep_their_events_and_name_a_duplicate(
    tmp_path: Path,
) -> None:
    # add_trials writes a batch's trial rows in one statement, numbering them itself;
    # each trial's events and grades must land on its own row, and a trial already
    # stored (or twice in the batch) is still named, with nothing of its batch kept.
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    db.create_run(Run(run_id="q", created_at=utc_now()))

    def trial(task: str, k: int) -> Trial:
        return Trial(
            task_id=task, trial=k, success=k % 2 == 0,
            events=[MessageEvent(t=0.0, role="assistant", content=f"{task}/{k}")],
            grades=[Grade(grader="state", passed=k % 2 == 0, evidence={"who": f"{task}/{k}"})],
        )  # fmt: skip

    db.add_trial("q", trial("other", 0))  # another run's row first: the ids go on after it
    batch = [trial(f"t{i}", k) for i in range(5) for k in range(3)]
    assert db.add_trials("r", batch, batch=4) == 15
    back = db.trials("r")
    assert [(t.task_id, t.trial) for t in back] == [(t.task_id, t.trial) for t in batch]
    for t in back:
        assert t.events[0].content == f"{t.task_id}/{t.trial}"  # type: ignore[union-attr]
        assert t.grades[0].evidence == {"who": f"{t.task_id}/{t.trial}"}
    for dup, named in (
        ([trial("new", 0), trial("t1", 2)], "trial 2 of task 't1'"),  # stored before
        ([trial("new", 0), trial("new", 0)], "trial 0 of task 'new'"),  # twice in the batch
    ):
        with pytest.raises(InputError, match=f"{named} .* is already stored in run 'r'"):
            db.add_trials("r", dup)
        assert len(db.trials("r")) == 15  # the batch is not half-written
    assert db.integrity_check() == "ok"


@pytest.mark.parametrize("where", ["missing-folder/s.db", "."])
def test_a_store_path_that_cannot_be_one_says_why(tmp_path: Path, where: str) -> None:
    # SQLite says only "unable to open database file" for both.
    path = tmp_path / where
    with pytest.raises(InputError) as err:
        Store(path)
    said = str(err.value)
    if where == ".":
        assert "it is a directory; name the store file in it" in said
        # A Parquet export's folder is named for what it is (every command but export,
        # grade, runs and run reads it as a SOURCE).
        (tmp_path / "_agentgauge.json").write_text("{}")
        with pytest.raises(InputError, match="it is a Parquet export, not a store; name the"):
            Store(path)
    else:
        assert f"the folder {path.parent} does not exist" in said


def test_store_misuse_is_one_error_naming_the_store_and_the_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as db:
        db.create_run(Run(run_id="r1", created_at=utc_now()))
        db.add_trial("r1", Trial(task_id="t", trial=0, success=True))
        with pytest.raises(MissingRun, match=r"s\.db: run_id: no run 'nope' in this store"):
            db.add_trial("nope", Trial(task_id="t", trial=0, success=True))
        with pytest.raises(MissingRun, match="no run 'nope' in this store"):
            db.add_trials("nope", [Trial(task_id="t", trial=1, success=True)])
        with pytest.raises(MissingRun, match=r"no run 'typo' in this store \(recent runs: 'r1'\)"):
            db.trials("typo")
        assert len(db.trials("r1")) == 1
    with Store(path, readonly=True) as db:
        with pytest.raises(InputError, match=r"s\.db: this store was opened read-only"):
            db.add_trial("r1", Trial(task_id="t", trial=1, success=True))
        with pytest.raises(InputError, match="opened read-only"):
            db.delete_run("r1")
        assert len(db.trials("r1")) == 1  # reading it still works


#: The methods of `Store` that name a run by its first argument yet answer for one the
#: store does not hold, and why: the others refuse it (`MissingRun`).
RUN_ANSWERS = {
    "get_run": "None says there is no such run",
    "require_run": "says there is no such run (MissingRun)",
    "lookalike_runs": "a new run's id, not held yet",
    "refuse_lookalike_run": "a new run's id, not held yet",
    "delete_run_if_empty": "False: a run another session deleted is not deleted again",
    "existing_cells": "none stored: collect reads them before it makes its run",
}


def test_every_method_of_a_run_refuses_a_run_the_store_does_not_hold(tmp_path: Path) -> None:
    import inspect

    from agentgauge.schema import Task
    from agentgauge.store.columns import event_batches, grade_batches, trial_batches

    path = tmp_path / "s.db"
    trial = Trial(task_id="t", trial=0, success=True)
    calls = {
        "update_run_config": lambda db: db.update_run_config("nope", {}),
        "delete_run": lambda db: db.delete_run("nope"),
        "mark_opened": lambda db: db.mark_opened("nope"),
        "add_tasks": lambda db: db.add_tasks("nope", []),
        "has_tasks": lambda db: db.has_tasks("nope"),
        "get_tasks": lambda db: db.get_tasks("nope"),
        "add_trial": lambda db: db.add_trial("nope", trial),
        "add_trials": lambda db: db.add_trials("nope", []),
        "next_trial_index": lambda db: db.next_trial_index("nope", "t", "base", None, None),
        "trials": lambda db: db.trials("nope"),
        "grade_summary": lambda db: db.grade_summary("nope"),
        "outcome_rows": lambda db: db.outcome_rows("nope"),
        "model_call_rows": lambda db: db.model_call_rows("nope"),
        "trial_keys": lambda db: db.trial_keys("nope"),
        "table": lambda db: db.table("nope"),
        "columns": lambda db: db.columns("nope"),
        "refuse_damaged_success": lambda db: db.refuse_damaged_success("nope"),
        "damaged_success": lambda db: db.damaged_success("nope"),
        "trial": lambda db: db.trial("nope", 1),
        "grade_versions": lambda db: db.grade_versions("nope"),
        "active_grade_version": lambda db: db.active_grade_version("nope"),
        "resolve_grade_version": lambda db: db.resolve_grade_version("nope", None),
        "new_grade_version": lambda db: db.new_grade_version("nope", []),
        "activate_grade_version": lambda db: db.activate_grade_version("nope", 1),
        # The column-wise readers of a Parquet export, refused when called.
        "trial_batches": lambda db: trial_batches(db, "nope", 1, 10),
        "event_batches": lambda db: event_batches(db, "nope", 10),
        "grade_batches": lambda db: grade_batches(db, "nope", 1, 10),
    }
    # Every method that names a run is here or answers for a missing one on purpose:
    # a method added later is refused until it says which.
    of_a_run = {
        name
        for name, method in vars(Store).items()
        if callable(method)
        and not name.startswith("_")
        and list(inspect.signature(method).parameters)[1:2] == ["run_id"]
    }
    assert of_a_run == (calls.keys() - {"trial_batches", "event_batches", "grade_batches"}) | (
        RUN_ANSWERS.keys()
    )
    with Store(path) as db:
        db.create_run(Run(run_id="r1", created_at=utc_now()))
        db.add_tasks("r1", [Task(id="t", instruction="p")])
        db.add_trial("r1", trial)
        before = db.conn.execute("SELECT COUNT(*) FROM meta").fetchone()
        for name, call in calls.items():
            with pytest.raises(MissingRun) as caught:
                call(db)
            assert str(caught.value) == (
                f"{path}: run_id: no run 'nope' in this store (recent runs: 'r1')"
            ), name
        # Nothing was written for it (mark_opened refused before its mark).
        assert db.conn.execute("SELECT COUNT(*) FROM meta").fetchone() == before
        assert [r.run_id for r in db.list_runs()] == ["r1"]
    # Read-only, the readers refuse it the same.
    with Store(path, readonly=True) as db, pytest.raises(MissingRun, match="no run 'nope'"):
        db.get_tasks("nope")


def test_every_public_method_of_the_store_words_sqlites_refusals() -> None:
    # The decorator is written on each method (no loop at class creation): one left
    # without it would give Python's callers a bare sqlite3 error.
    import inspect

    for name, method in vars(Store).items():
        if inspect.isfunction(method) and (name == "__init__" or not name.startswith("_")):
            if name in ("close", "transaction", "snapshot"):
                continue
            assert getattr(method, "translates_store_errors", False), name


def test_a_trial_without_its_index_is_refused_by_name(tmp_path: Path) -> None:
    """A `Trial` made in Python without ``trial=`` is refused in one line naming its
    task and the field, not as SQLite's NOT NULL constraint; nothing is written."""
    with Store(tmp_path / "s.db") as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        with pytest.raises(InputError, match=r"trial: task 'a': the trial has no index"):
            db.add_trials(
                "r", [Trial(task_id="ok", trial=0, success=True), Trial(task_id="a", success=False)]
            )
        assert db.trials("r") == []
