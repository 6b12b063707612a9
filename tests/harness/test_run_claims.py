"""One session writes a run at a time: a resume typed while the run's first session
still runs is refused at once, a claim left by a killed session is taken over, and
every ending gives the claim up (docs/running-agents.md, "Resume")."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import claim_from_elsewhere, stored_claims

from agentgauge.envs.base import ToolOutcome
from agentgauge.errors import InputError, RunInterrupted, RunStopped
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.store import Store, claims
from agentgauge.store.claims import STALE_AFTER
from agentgauge.testing.worlds import CounterEnv, counting_agent

ROOT = Path(__file__).resolve().parents[2]
COUNTER = ROOT / "examples" / "counter-suite.yaml"

# Every trial waits for the file ``go``; each process that runs a trial says so.
HELD = """
import asyncio
import os
from pathlib import Path

from agentgauge.testing.worlds import counting_agent


async def held(session):
    Path(f"ran_{os.getpid()}").touch()
    while not Path("go").exists():
        await asyncio.sleep(0.01)
    await counting_agent(session)
"""


def _argv(*extra: str) -> list[str]:
    args = ["run", str(COUNTER), "--agent", "held_agent:held", "--store", "s.db"]
    return [sys.executable, "-m", "agentgauge", *args, "--run-id", "r", "--no-progress", *extra]


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "held_agent.py").write_text(HELD)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])}


def _first(tmp_path: Path) -> subprocess.Popen[str]:
    """The run's first session, once its trials are under way (and waiting for ``go``)."""
    proc = subprocess.Popen(
        _argv(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    for _ in range(6000):
        if (tmp_path / f"ran_{proc.pid}").exists():
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"the first session ended: {proc.communicate()}")
        time.sleep(0.01)
    raise AssertionError("the first session never ran a trial")


def _again(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _argv(*extra),
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )


def _state(db: Path) -> tuple[Any, ...]:
    """What a session writes to the store, but for the claim's heartbeat."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        return (
            conn.execute("SELECT * FROM runs").fetchall(),
            conn.execute("SELECT COUNT(*) FROM trials").fetchone(),
            conn.execute("SELECT * FROM tasks").fetchall(),
            conn.execute("SELECT * FROM audit").fetchall(),
            conn.execute("SELECT * FROM meta WHERE key NOT LIKE 'claim:%'").fetchall(),
            conn.execute(
                "SELECT json_remove(value, '$.heartbeat') FROM meta WHERE key LIKE 'claim:%'"
            ).fetchall(),
        )
    finally:
        conn.close()


def test_a_resume_while_the_first_session_runs_is_refused_before_it_runs_anything(
    tmp_path: Path,
) -> None:
    first = _first(tmp_path)
    try:
        before = _state(tmp_path / "s.db")
        second = _again(tmp_path)
        # It ran every cell the first was running, and stopped at the first it stored
        # second: "trial 0 of task 'add-small' ... is already stored in run 'r'".
        assert second.returncode == 2, second.stderr
        [line] = second.stderr.splitlines()
        since = stored_claims(tmp_path / "s.db")[0]["since"]
        host = socket.gethostname()
        assert line.startswith(
            f"agentgauge: error: --run-id: run 'r' is being written by another session "
            f"(agentgauge run, pid {first.pid} on host {host}, since {since}; last heartbeat "
        ), line
        assert line.endswith(
            f"wait for it to end, or stop it (Ctrl-C in its terminal, or kill {first.pid} "
            f"on {host}), then run this command again to resume the run"
        ), line
        assert second.stdout == ""
        assert sorted(p.name for p in tmp_path.glob("ran_*")) == [f"ran_{first.pid}"]
        assert _state(tmp_path / "s.db") == before
    finally:
        (tmp_path / "go").touch()
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert "run r in s.db: 3 trials" in out
    assert stored_claims(tmp_path / "s.db") == []  # given up as the session ended


def test_a_claim_left_by_a_killed_session_is_taken_over_with_a_note(tmp_path: Path) -> None:
    first = _first(tmp_path)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    (tmp_path / "go").touch()
    assert [c["pid"] for c in stored_claims(tmp_path / "s.db")] == [first.pid]
    second = _again(tmp_path)
    assert second.returncode == 0, second.stderr
    assert "run r in s.db: 3 trials" in second.stdout
    note = second.stderr.strip()
    assert note.startswith(
        "run 'r' was claimed by a session that is no longer running (agentgauge run, "
        f"pid {first.pid} on host {socket.gethostname()}, since "
    ), note
    assert note.endswith(
        f"; no process {first.pid} runs on this host); this session takes it over"
    ), note
    assert stored_claims(tmp_path / "s.db") == []


def test_a_resume_after_the_first_session_ended_runs(tmp_path: Path) -> None:
    (tmp_path / "go").touch()
    first = _again(tmp_path)
    assert first.returncode == 0, first.stderr
    second = _again(tmp_path, "--trials", "2")
    assert second.returncode == 0, second.stderr
    assert "run r in s.db: 6 trials" in second.stdout
    assert "claim" not in second.stderr
    assert stored_claims(tmp_path / "s.db") == []


def test_a_session_on_another_host_holds_the_run_while_its_heartbeat_is_fresh(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    run(str(COUNTER), counting_agent, store=db, run_id="r", progress=False)
    claim_from_elsewhere(db, time.time() - 5, command=None)
    with pytest.raises(InputError) as err:
        run(str(COUNTER), counting_agent, store=db, run_id="r", trials=2, progress=False)
    assert err.value.reason.startswith(
        "run 'r' is being written by another session (pid 1 on host other-host, "
        "since 2026-01-02T03:04:05+00:00; last heartbeat "
    )
    assert "kill 1 on other-host" in err.value.reason
    with Store(db, readonly=True) as store:
        assert store.get_run("r").n_trials == 3  # type: ignore[union-attr]

    # Silent for longer than STALE_AFTER: the session is taken to have died.
    claim_from_elsewhere(db, time.time() - STALE_AFTER - 1, command=None)
    notes: list[str] = []
    done = run(
        str(COUNTER),
        counting_agent,
        store=db,
        run_id="r",
        trials=2,
        progress=False,
        notify=notes.append,
    )
    assert done.n_trials == 6
    assert (
        "run 'r' was claimed by a session that is no longer running (pid 1 on host "
        "other-host, since 2026-01-02T03:04:05+00:00; its last heartbeat was "
    ) in notes[0]
    assert notes[0].endswith("s ago); this session takes it over")
    assert stored_claims(db) == []


class Broken(CounterEnv):
    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        raise RuntimeError("disk full")


def test_a_session_stopped_by_the_breaker_or_ctrl_c_gives_the_claim_up(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    task = Task(id="t", instruction="add 3", expectations={"final_state": {"counter": 3}})
    with pytest.raises(RunStopped):  # its one trial is an infra error
        run(
            [task],
            counting_agent,
            store=db,
            run_id="r",
            env_factory=lambda task, *, variant, seed: Broken(task, variant=variant, seed=seed),
            progress=False,
        )
    assert stored_claims(db) == []

    async def interrupted(session: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        await counting_agent(session)

    interrupted.__name__ = counting_agent.__name__  # the same agent, to resume the run
    interrupted.__qualname__ = counting_agent.__qualname__
    interrupted.__module__ = counting_agent.__module__
    with pytest.raises(RunInterrupted):
        run(
            [task],
            interrupted,
            store=db,
            run_id="r",
            trials=3,
            env_factory=lambda task, *, variant, seed: CounterEnv(task, variant=variant, seed=seed),
            progress=False,
        )
    assert stored_claims(db) == []


def test_a_ray_run_claimed_elsewhere_is_refused_before_it_connects(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    db = tmp_path / "s.db"
    run(str(COUNTER), counting_agent, store=db, run_id="r", progress=False)
    claim_from_elsewhere(db, time.time(), command=None)
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Not "--ray-address: cannot reach the Ray cluster", after a deadline.
    with pytest.raises(InputError, match="is being written by another session"):
        run(
            str(COUNTER),
            "agentgauge.testing.worlds:counting_agent",
            store=db,
            run_id="r",
            trials=2,
            backend="ray",
            ray_address=f"127.0.0.1:{port}",
            progress=False,
        )


def test_the_ray_driver_claims_the_run_while_its_trials_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    # The local Ray instance the run starts gives its workers this environment.
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    db = tmp_path / "s.db"
    seen: list[list[dict[str, Any]]] = []
    header = run(
        str(COUNTER),
        "agentgauge.testing.worlds:counting_agent",
        store=db,
        run_id="r",
        backend="ray",
        progress=False,
        on_trial=lambda trial: seen.append(stored_claims(db)),  # on the driver, as each lands
    )
    assert header.n_trials == 3
    assert [[c["pid"] for c in claims] for claims in seen] == [[os.getpid()]] * 3
    assert stored_claims(db) == []


def test_the_claim_is_renewed_while_the_trials_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claims, "HEARTBEAT_EVERY", 0.05)
    db = tmp_path / "s.db"

    async def slow(session: Any) -> None:
        await asyncio.sleep(0.3)
        await counting_agent(session)

    beats: list[float] = []
    run(
        str(COUNTER),
        slow,
        store=db,
        run_id="r",
        concurrency=1,
        progress=False,
        on_trial=lambda trial: beats.append(stored_claims(db)[0]["heartbeat"]),
    )
    assert len(beats) == 3
    assert beats[0] < beats[1] < beats[2], beats


@pytest.mark.skipif(not Path("/proc/self/ns/pid").exists(), reason="Linux pid namespaces")
def test_a_session_in_another_container_of_this_host_name_holds_the_run(tmp_path: Path) -> None:
    # Its process id means nothing here (another pid namespace): only its heartbeat tells.
    db = tmp_path / "s.db"
    run(str(COUNTER), counting_agent, store=db, run_id="r", progress=False)
    claim = {
        "token": "theirs",
        "pid": 2**22 + 1,  # above Linux's largest pid: no such process here
        "host": socket.gethostname(),
        "since": "2026-01-02T03:04:05+00:00",
        "heartbeat": time.time(),
        "pids": "pid:[1]",
    }
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('claim:r', ?)", (json.dumps(claim),))
    with pytest.raises(InputError, match="is being written by another session"):
        run(str(COUNTER), counting_agent, store=db, run_id="r", trials=2, progress=False)
    with sqlite3.connect(db, timeout=30) as conn:  # the same, in this namespace: gone
        claim["pids"] = os.readlink("/proc/self/ns/pid")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('claim:r', ?)", (json.dumps(claim),))
    notes: list[str] = []
    run(str(COUNTER), counting_agent, store=db, run_id="r", trials=2, progress=False,
        notify=notes.append)  # fmt: skip
    assert f"no process {2**22 + 1} runs on this host" in notes[0]


def test_a_session_whose_claim_another_took_over_launches_no_more_trials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Paused past the claim's limit (another host, a laptop asleep), a session had its
    # claim taken over and went on running the cells the other was running too, both
    # to end on "already stored". Its heartbeat now finds the claim gone: it launches
    # nothing more, keeps what it saved, and says so (exit 3, nothing to resume).
    monkeypatch.setattr(claims, "HEARTBEAT_EVERY", 0.05)
    db = tmp_path / "s.db"
    since = "2026-12-07T00:00:00+00:00"
    taken = {"token": "theirs", "pid": 4242, "host": "elsewhere", "since": since,
             "heartbeat": time.time() + 3600, "pids": ""}  # fmt: skip

    async def slow(session: Any) -> None:
        await asyncio.sleep(0.2)
        await counting_agent(session)

    def take_over(trial: Any) -> None:  # another session's takeover, after trial 1
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'claim:r'", (json.dumps(taken),))

    with pytest.raises(RunStopped) as caught:
        run(str(COUNTER), slow, store=db, run_id="r", trials=5, concurrency=1,
            progress=False, on_trial=take_over)  # fmt: skip
    err = caught.value
    assert type(err).__name__ == "RunTakenOver" and err.exit_code == 3
    assert 1 <= err.saved < err.total == 15, (err.saved, err.total)
    assert str(err).startswith(
        "stopped: run 'r' was taken over by pid 4242 on host elsewhere, since "
        "2026-12-07T00:00:00+00:00, which found this session's heartbeat older than 60 s; "
        "this session launches no more trials and leaves the run to it; "
    )
    assert [c["token"] for c in stored_claims(db)] == ["theirs"]  # its claim is not released
