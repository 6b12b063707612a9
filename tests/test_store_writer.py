"""`TrialWriter` on a real SQLite file: the first error stops all writing, a full
queue makes the loop wait, and close waits for the write under way."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.harness.runner import run
from agentgauge.schema import Run, Task, Trial
from agentgauge.store import Store, TrialWriter, utc_now
from agentgauge.store.writer import TrialWriteError
from agentgauge.testing.worlds import counting_agent, make_counter_env


def _trial(i: int) -> Trial:
    return Trial(task_id=f"t{i}", trial=0, success=True)


def _store(tmp_path: Path) -> Store:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    return db


def _stored(db: Store) -> list[str]:
    return [t.task_id for t in db.trials("r")]


async def _until(condition: object, what: str) -> None:
    # Waits for the writer's thread to reach a state; it never decides a test by time.
    for _ in range(2000):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never reached: {what}")


def test_after_a_write_error_every_submit_and_close_raise_it_and_nothing_more_is_written(
    tmp_path: Path,
) -> None:
    db = _store(tmp_path)
    writer = TrialWriter(db, "r")

    async def main() -> None:
        await writer.submit(_trial(1))
        await writer.submit(_trial(1))  # the same cell again: the write fails
        with pytest.raises(InputError, match="already stored") as first:
            await writer.flush()
        # Today's main cleared the error once raised: t2 was then committed and
        # close() raised nothing. Every later call must raise the same error.
        for i in (2, 3):
            with pytest.raises(InputError) as again:
                await writer.submit(_trial(i))
            assert again.value is first.value
        with pytest.raises(InputError) as at_close:
            await writer.close()
        assert at_close.value is first.value
        assert "trial 0 of task 't1'" in str(first.value)
        assert "writing stopped there" in str(first.value)

    asyncio.run(main())
    assert _stored(db) == ["t1"]


def test_trials_queued_behind_a_failed_write_are_not_written_and_close_raises(
    tmp_path: Path,
) -> None:
    db = _store(tmp_path)
    writer = TrialWriter(db, "r")

    async def main() -> None:
        # All queued before the thread writes any: the failure comes in the middle.
        for i in (1, 1, 2, 3):
            await writer.submit(_trial(i))
        with pytest.raises(InputError, match="already stored"):
            await writer.close()

    asyncio.run(main())
    assert _stored(db) == ["t1"]


def test_a_full_queue_makes_submit_wait_until_the_thread_has_written(tmp_path: Path) -> None:
    db = _store(tmp_path)
    writer = TrialWriter(db, "r", max_pending=1)
    blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the writer's transaction waits for this one

    async def main() -> None:
        await writer.submit(_trial(0))
        await writer.submit(_trial(1))  # room once the thread took t0 (it is now blocked)
        third = asyncio.create_task(writer.submit(_trial(2)))
        await _until(lambda: writer.pending == 2, "t0 in flight and t1 queued")
        for _ in range(20):
            await asyncio.sleep(0)
        assert not third.done()  # the queue holds max_pending trials: submit waits
        assert writer.pending == 2
        assert writer.committed == 0
        blocker.execute("ROLLBACK")
        await third
        await writer.close()

    asyncio.run(main())
    blocker.close()
    assert _stored(db) == ["t0", "t1", "t2"]
    assert writer.committed == 3  # what a run reports as saved
    assert db.integrity_check() == "ok"


def _held_batch(tmp_path: Path, ids: list[int]) -> tuple[Store, TrialWriter, list[str]]:
    """t0 in flight behind another connection's lock, ``ids`` queued behind it, so
    they reach the thread as one batch; then everything closed. Returns what the
    close raised (empty when nothing)."""
    db = _store(tmp_path)
    writer = TrialWriter(db, "r")
    blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    raised: list[str] = []

    async def main() -> None:
        await writer.submit(_trial(0))
        await _until(lambda: writer.pending == 1, "t0 handed to the thread")
        for i in ids:
            await writer.submit(_trial(i))
        assert writer.pending == 1 + len(ids)
        blocker.execute("ROLLBACK")
        try:
            await writer.close()
        except InputError as exc:
            raised.append(str(exc))

    asyncio.run(main())
    blocker.close()
    return db, writer, raised


def test_trials_queued_together_are_written_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[int] = []
    write_many = Store._write_many

    def counted(self: Store, many: list[object]) -> int:
        batches.append(len(many))
        return write_many(self, many)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "_write_many", counted)
    db, writer, raised = _held_batch(tmp_path, [1, 2, 3, 4])
    assert raised == []
    assert batches == [4]  # t0 alone (it was in flight), then the four queued behind it
    assert _stored(db) == ["t0", "t1", "t2", "t3", "t4"]
    assert writer.committed == 5
    assert db.integrity_check() == "ok"


def test_a_batch_that_fails_keeps_the_trials_before_the_one_at_fault(tmp_path: Path) -> None:
    # [t1, t2, t2, t3] in one hand-over: the batch's transaction fails on the second
    # t2 and is rolled back; trial by trial then keeps t1 and t2, as writing them one
    # at a time would have, names the duplicate, and writes nothing after it.
    db, writer, raised = _held_batch(tmp_path, [1, 2, 2, 3])
    assert len(raised) == 1 and "trial 0 of task 't2'" in raised[0]
    assert _stored(db) == ["t0", "t1", "t2"]
    assert writer.committed == 3


def test_close_during_a_pending_write_waits_for_its_commit(tmp_path: Path) -> None:
    db = _store(tmp_path)
    writer = TrialWriter(db, "r")
    blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")

    async def main() -> None:
        await writer.submit(_trial(0))
        await _until(lambda: writer.pending == 1, "t0 handed to the thread")
        closing = asyncio.create_task(writer.close())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not closing.done()
        assert _stored(db) == []
        blocker.execute("ROLLBACK")
        await closing
        assert writer.pending == 0

    asyncio.run(main())
    blocker.close()
    assert _stored(db) == ["t0"]


def test_a_failing_write_in_a_run_ends_it_with_a_message_naming_the_trial(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    tasks = [
        Task(id=f"t{i}", instruction=f"please add {i + 1}", expectations={"final_state": {}})
        for i in range(6)
    ]
    with Store(path) as db:
        # A real SQLite failure on one trial's insert, as a full disk would give.
        db.conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON trials WHEN NEW.task_id = 't3'"
            " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    with pytest.raises(TrialWriteError) as err:
        run(
            tasks,
            counting_agent,
            store=path,
            env_factory=make_counter_env,
            progress=False,
            concurrency=1,
            run_id="r",
        )
    message = str(err.value)
    assert "trial 0 of task 't3'" in message
    assert "database or disk is full" in message
    assert "--run-id" in message
    with Store(path) as db:
        stored = [t.task_id for t in db.trials("r")]
    assert "t3" not in stored
    assert set(stored) <= {"t0", "t1", "t2"}  # nothing after the failed write
