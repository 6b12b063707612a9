"""Several sessions on one store file: a reader while a run commits trials, a session
that ends while another resumes its run, a store removed while a run writes to it.
Each interleaving is forced, not waited for: another connection commits at the moment
the reader runs a given statement (SQLite's trace hook of the reader's connection)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.harness.runner import run
from agentgauge.parquet.write import write_parquet
from agentgauge.schema import Grade, MessageEvent, Run, Trial
from agentgauge.store import Store, TrialWriter, utc_now
from agentgauge.store.writer import TrialWriteError


def _trial(i: int) -> Trial:
    return Trial(
        task_id=f"t{i}",
        trial=0,
        success=True,
        events=[MessageEvent(role="assistant", content=f"done {i}")],
        grades=[Grade(grader="state", passed=True, score=1.0)],
    )


def _store_with_run(path: Path, n: int) -> None:
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        for i in range(n):
            db.add_trial("r", _trial(i))


def _commit_when(reader: Store, starts: str, commit: Callable[[], None]) -> None:
    """Run ``commit`` (another connection's write) once, as ``reader`` starts the first
    statement beginning with ``starts``: between two of its reads."""
    done = False

    def hook(sql: str) -> None:
        nonlocal done
        if not done and sql.lstrip().startswith(starts):
            done = True
            commit()

    reader.conn.set_trace_callback(hook)


def test_trials_read_while_a_run_commits_more_are_of_one_moment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 2)
    writer = Store(path)
    with Store(path, readonly=True) as reader:
        # The run commits trial 2 after the trials were read and before their events:
        # its events had no trial to go to (KeyError, a traceback in export and grade).
        _commit_when(reader, "SELECT e.trial_pk", lambda: writer.add_trial("r", _trial(2)))
        trials = reader.trials("r")
        assert [t.task_id for t in trials] == ["t0", "t1"]
        assert all(len(t.events) == 1 and len(t.grades) == 1 for t in trials)
        # The next read sees the trial committed meanwhile.
        reader.conn.set_trace_callback(None)
        assert len(reader.trials("r")) == 3
    writer.close()


def test_columns_read_while_a_run_commits_more_are_of_one_moment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 2)
    writer = Store(path)
    with Store(path, readonly=True) as reader:
        _commit_when(
            reader, "SELECT data FROM trial_facts", lambda: writer.add_trial("r", _trial(2))
        )
        table, _ = reader.columns("r")
        assert len(table) == 2
    writer.close()


def test_a_parquet_export_while_a_run_commits_more_is_of_one_moment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 2)
    writer = Store(path)
    original = sqlite3.connect

    # The export opens its own connection: the hook goes on it as it is opened.
    def connect(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = original(*args, **kwargs)  # type: ignore[arg-type]
        if conn is not writer.conn:
            fired = False

            def hook(sql: str) -> None:
                nonlocal fired
                if not fired and "FROM events" in sql:
                    fired = True
                    writer.add_trial("r", _trial(2))

            conn.set_trace_callback(hook)
        return conn

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite3, "connect", connect)
        counts = write_parquet(path, "r", tmp_path / "out")
    writer.close()
    assert (counts.trials, counts.events, counts.grades) == (2, 2, 2)


def test_a_trial_of_a_run_deleted_meanwhile_says_the_run_was_deleted(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 0)
    with Store(path) as mine:
        writer = TrialWriter(mine, "r")

        async def main() -> None:
            await writer.submit(_trial(0))
            await writer.flush()
            Store(path).delete_run("r")  # another session deletes it
            await writer.submit(_trial(1))
            await writer.close()

        # It was "cannot write trial 0 of task 't1' ... (FOREIGN KEY constraint failed)".
        with pytest.raises(TrialWriteError) as err:
            asyncio.run(main())
    assert str(err.value).startswith(
        "run 'r' was deleted from the store while this session wrote it: "
        "trial 0 of task 't1' (variant 'base') and the trials after it were not stored"
    )


ROOT = Path(__file__).resolve().parents[1]
COUNTER = ROOT / "examples" / "counter-suite.yaml"

# Session A makes run r and is stopped by Ctrl-C in its first trial, after session B
# has resumed r; B's trials wait until A has ended.
SESSIONS = """
import asyncio
import os
import signal
from pathlib import Path

from agentgauge.testing.worlds import counting_agent


async def session(session):
    # The same agent for both (a resume keeps the agent), each in its own role.
    if os.environ["ROLE"] == "A":
        Path("a_started").touch()
        while not Path("b_started").exists():
            await asyncio.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(30)
    Path("b_started").touch()
    while not Path("a_ended").exists():
        await asyncio.sleep(0.01)
    await counting_agent(session)
"""


def _session(tmp_path: Path, role: str) -> subprocess.Popen[str]:
    (tmp_path / "sessions.py").write_text(SESSIONS)
    args = ["run", str(COUNTER), "--agent", "sessions:session", "--store", "s.db", "--run-id", "r"]
    return subprocess.Popen(
        [sys.executable, "-m", "agentgauge", *args, "--no-progress", "--no-preflight"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")]),
            "ROLE": role,
        },
        cwd=tmp_path,
    )


def _until_file(path: Path, proc: subprocess.Popen[str]) -> None:
    for _ in range(6000):
        if path.exists():
            return
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args} ended: {proc.communicate()}")
        time.sleep(0.01)
    raise AssertionError(f"never made: {path}")


def test_a_session_stopped_before_its_first_trial_keeps_the_run_another_resumed(
    tmp_path: Path,
) -> None:
    a = _session(tmp_path, "A")
    _until_file(tmp_path / "a_started", a)
    # B resumes r only once A's claim on it is stale (a session whose heartbeat stopped,
    # on another host): while A's claim is live, B is refused (tests/harness/test_run_claims.py).
    stale = json.dumps(
        {"token": "stopped", "pid": a.pid, "host": "elsewhere", "since": "?", "heartbeat": 0}
    )
    with sqlite3.connect(tmp_path / "s.db", timeout=30) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'claim:r'", (stale,))
    b = _session(tmp_path, "B")
    _until_file(tmp_path / "b_started", b)
    _, a_err = a.communicate(timeout=60)
    (tmp_path / "a_ended").touch()
    b_out, b_err = b.communicate(timeout=60)
    assert a.returncode == 130, a_err
    # A deleted the run B was writing ("FOREIGN KEY constraint failed"), and removed
    # the store file it had made, which B had open.
    assert b.returncode == 0, b_err
    assert "run r in s.db: 3 trials" in b_out
    assert "this session takes it over" in b_err
    with Store(tmp_path / "s.db", readonly=True) as db:
        assert len(db.trials("r")) == 3


def test_a_session_stopped_before_its_first_trial_keeps_a_store_file_another_has_open(
    tmp_path: Path,
) -> None:
    a = _session(tmp_path, "A")
    _until_file(tmp_path / "a_started", a)
    # Another session has the store open (about to start a run of its own): the file A
    # made must stay, or that session writes to a file no one can find.
    with Store(tmp_path / "s.db") as other:
        (tmp_path / "b_started").touch()
        _, a_err = a.communicate(timeout=60)
        assert a.returncode == 130, a_err
        assert other.list_runs() == []  # A's empty run went
        other.create_run(Run(run_id="mine", created_at=utc_now()))
    with Store(tmp_path / "s.db", readonly=True) as db:
        assert [r.run_id for r in db.list_runs()] == ["mine"]


def test_two_sessions_started_together_with_one_run_id_make_it_once_and_resume_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    agent = "agentgauge.testing.worlds:counting_agent"
    with Store(path) as db:

        def other_session() -> None:
            # The same command, run to its end in another process, between this
            # session's look for the run and its making it.
            args = ["run", str(COUNTER), "--agent", agent, "--store", str(path)]
            done = subprocess.run(
                [sys.executable, "-m", "agentgauge", *args, "--run-id", "r", "--no-progress"],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            )
            assert done.returncode == 0, done.stderr

        _commit_when(db, "BEGIN IMMEDIATE", other_session)
        # It said "run 'r' already exists in this store; choose another --run-id",
        # though the same command resumes it.
        with pytest.raises(InputError) as err:
            run(str(COUNTER), agent, store=db, run_id="r", progress=False)
        db.conn.set_trace_callback(None)
        assert err.value.reason == (
            "run 'r' was made by another session after this command started; once that "
            "session has ended, running this command again resumes it"
        )
        assert err.value.field == "--run-id"
        assert [(r.run_id, r.n_trials) for r in db.list_runs()] == [("r", 3)]
        # As it says: the same command resumes the run (here with nothing left to run).
        assert run(str(COUNTER), agent, store=db, run_id="r", progress=False).n_trials == 3


# In its second trial, once the first is committed, the agent removes the store's folder
# (``gone``) or puts another run's store folder in its place (``replaced``).
VANISHING = """
import asyncio
import os
import shutil
import sqlite3
from pathlib import Path

from agentgauge.testing.worlds import counting_agent

CALLS = []


def committed():
    conn = sqlite3.connect("team/s.db")
    try:
        return conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


async def vanishing(session):
    CALLS.append(1)
    if len(CALLS) == 2:
        while committed() < 1:
            await asyncio.sleep(0.01)
        shutil.rmtree("team")
        if os.environ["HOW"] == "replaced":
            os.rename("other", "team")
    await counting_agent(session)
"""


@pytest.mark.parametrize("how", ["gone", "replaced"])
def test_a_store_removed_or_replaced_while_a_run_writes_is_not_reported_as_kept(
    tmp_path: Path, how: str
) -> None:
    (tmp_path / "vanishing.py").write_text(VANISHING)
    (tmp_path / "team").mkdir()
    (tmp_path / "other").mkdir()
    with Store(tmp_path / "other" / "s.db") as other:
        other.create_run(Run(run_id="theirs", created_at=utc_now()))
    args = ["run", str(COUNTER), "--agent", "vanishing:vanishing", "--store", "team/s.db"]
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", *args, "--run-id", "r", "-j", "1", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")]),
            "HOW": how,
        },
        cwd=tmp_path,
    )
    # It was exit 0 with "run r in team/s.db: 0 trials, success -, no errors" (replaced),
    # or "no such store (run or import something first)" (gone).
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        "agentgauge: error: team/s.db: the store was removed or replaced while run 'r' "
        "wrote to it: the 3 trials it saved are not kept (run the command again to run "
        "them afresh)\n"
    )
    assert "run r in" not in out.stdout


def test_a_regrade_while_a_run_commits_more_pairs_each_trial_with_its_key(
    tmp_path: Path,
) -> None:
    from agentgauge.graders.regrade import regrade
    from agentgauge.schema import AnswerSpec, Expectations, Task

    path = tmp_path / "s.db"
    tasks = [
        Task(id=f"t{i}", instruction="say done", expectations=Expectations(
            answer=AnswerSpec(contains=["done"])))
        for i in range(3)
    ]  # fmt: skip
    with Store(path) as db:
        with db.transaction():
            db.create_run(Run(run_id="r", created_at=utc_now()))
            db.add_tasks("r", tasks)
        for i in range(2):
            db.add_trial("r", _trial(i))
    writer = Store(path)
    with Store(path) as grading:
        # The run commits trial 2 after the trials were read and before their keys:
        # two trials and three keys (zip strict: a traceback), or keys paired wrong.
        _commit_when(grading, "SELECT id FROM trials", lambda: writer.add_trial("r", _trial(2)))
        result = regrade(grading, "r", ["answer"])
        grading.conn.set_trace_callback(None)
    writer.close()
    assert result.n_trials == 2
