from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentgauge.errors import InputError
from agentgauge.importers import import_file
from agentgauge.schema import Grade, Run, ToolCallEvent, Trial
from agentgauge.store import Store, TrialWriter, utc_now


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
    assert writer._thread is not None  # a file store: written on the writer's thread
    for t in _trials(50):
        writer.submit(t)
    writer.close()
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
    # The same cell twice is a UNIQUE violation in the thread; it surfaces at the
    # next submit or at close, whichever comes first, and nothing after it is written.
    with pytest.raises(InputError, match="already stored"):
        try:
            for t in (first, first, second):
                writer.submit(t)
        finally:
            writer.close()
    assert [(t.task_id, t.trial) for t in db.trials("r")] == [("t0", 0)]


def test_trial_writer_on_an_in_memory_store_writes_in_the_callers_thread() -> None:
    db = Store(":memory:")  # a second connection would open another, empty database
    db.create_run(Run(run_id="r", created_at=utc_now()))
    writer = TrialWriter(db, "r")
    assert writer._thread is None
    writer.submit(_trials(1)[0])
    assert len(db.trials("r")) == 1  # already written, before close
    writer.close()
