"""``--timeout`` bounds a trial whatever the agent does, and the timeout is blamed right.

Each case runs ``agentgauge run`` in a real process, with real agent programs and
files, and reads the real store. On the main branch before this change:

- a ``cmd:`` program whose child ``sleep 300`` kept its pipes: the run lasted 307 s
  for ``--timeout 3`` and the child was left running;
- the same program answering correctly: recorded as a timeout, the child left
  running, "RuntimeError: Event loop is closed" at exit;
- an ``async def`` agent in ``time.sleep(8)`` with ``--timeout 2``: a success;
- a plain ``def`` agent in ``time.sleep``: the process stayed alive until the
  thread returned (43 s for 40 s of sleep and ``--timeout 2``);
- a 429 with ``Retry-After: 10``: an *agent* timeout.

The subprocess timeouts are hang guards (a regression fails instead of hanging CI),
not speed targets.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from agentgauge.harness.runner import run
from agentgauge.schema import Task, Trial
from agentgauge.store import Store
from agentgauge.testing.openai_server import OpenAIServer, Reply, error_body
from agentgauge.testing.worlds import make_counter_env

#: Generous bound on a run whose trials end at a 2-4 s timeout (startup on a loaded
#: two-core machine takes a few seconds).
HANG_GUARD_S = 60

SUITE = """\
name: timeouts
tasks:
  - id: task-a
    environment: agentgauge.testing.worlds:make_counter_env
    instruction: Please add 3
    expectations: {final_state: {counter: 3}}
  - id: task-b
    environment: agentgauge.testing.worlds:make_counter_env
    instruction: Please add 3
    expectations: {final_state: {counter: 3}}
"""

#: A cmd: program that starts ``sleep 300`` (which inherits its stdout and stderr),
#: writes the child's pid to a file, then either hangs or answers correctly.
FORKING_PROGRAM = """\
import json, subprocess, sys, time
start = json.loads(sys.stdin.readline())
child = subprocess.Popen(["sleep", "300"])
with open(sys.argv[1] + "." + start["task_id"], "w") as f:
    f.write(str(child.pid))
if sys.argv[2] == "hang":
    time.sleep(300)
send = lambda m: print(json.dumps(m), flush=True)
send({"type": "tool_call", "id": "c1", "name": "add", "arguments": {"amount": 3}})
sys.stdin.readline()
send({"type": "cost", "usd": 0})
send({"type": "answer", "content": "Added 3."})
send({"type": "done"})
"""

PYTHON_AGENTS = """\
import time

async def blocks_the_loop(session):
    time.sleep(8)
    await session.call_tool("add", {"amount": 3})

def outlives_its_timeout(session):
    time.sleep(300)
"""


def agentgauge(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args, "--store", "s.db", "--run-id", "r"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        env={**os.environ, **(env or {})},
    )


def stored(cwd: Path) -> list[Trial]:
    with Store(cwd / "s.db") as db:
        return sorted(db.trials("r"), key=lambda t: t.task_id)


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its new parent to reap it is dead too).
    Polled with a generous bound: the state is asserted, not how fast it came."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "forking.py").write_text(FORKING_PROGRAM)
    (tmp_path / "python_agents.py").write_text(PYTHON_AGENTS)
    return tmp_path


@pytest.mark.parametrize(
    ("mode", "status", "success"), [("hang", "timeout", False), ("answer", "completed", True)]
)
def test_a_cmd_agent_and_its_children_end_with_the_trial(
    workdir: Path, mode: str, status: str, success: bool
) -> None:
    pids = workdir / "child.pid"
    agent = f"cmd:{sys.executable} forking.py {pids} {mode}"
    try:
        out = agentgauge(workdir, "run", "suite.yaml", "--agent", agent, "--timeout", "3")
        assert out.returncode == 0, out.stderr
        # A subprocess transport closed after the loop used to print this at exit.
        assert "Event loop is closed" not in out.stderr and "Traceback" not in out.stderr
        for trial in stored(workdir):
            assert (trial.status, trial.success) == (status, success), trial.error
            if mode == "hang":
                assert trial.error_kind == "agent"
                assert trial.error == "timed out after 3.0s in the agent"
        children = [int(p.read_text()) for p in workdir.glob("child.pid.*")]
        assert len(children) == 2
        for child in children:
            assert gone(child), f"the agent's child {child} outlived the trial"
    finally:  # never leave a sleep 300 behind, whatever failed
        for p in workdir.glob("child.pid.*"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(p.read_text()), 9)


def test_an_async_agent_that_blocks_the_loop_past_its_timeout_is_a_timeout(
    workdir: Path,
) -> None:
    out = agentgauge(
        workdir,
        "run",
        "suite.yaml",
        "--agent",
        "python_agents:blocks_the_loop",
        "--timeout",
        "2",
    )
    assert out.returncode == 0, out.stderr
    for trial in stored(workdir):
        # It reached the right state, but 6 s after its deadline.
        assert trial.status == "timeout" and trial.error_kind == "agent" and not trial.success
        assert trial.error is not None
        assert trial.error.startswith(
            "timed out after 2.0s in the agent: python_agents:blocks_the_loop blocked the "
            "event loop for "
        ), trial.error
    assert "blocked the event loop" in out.stdout  # the end-of-run summary says so


def test_a_sync_agent_past_its_timeout_is_abandoned_and_the_run_ends(workdir: Path) -> None:
    # Before: the process stayed alive until both threads returned (300 s here), so
    # this failed on the hang guard.
    out = agentgauge(
        workdir,
        "run",
        "suite.yaml",
        "--agent",
        "python_agents:outlives_its_timeout",
        "--timeout",
        "2",
    )
    assert out.returncode == 0, out.stderr
    assert [(t.task_id, t.status, t.error_kind) for t in stored(workdir)] == [
        ("task-a", "timeout", "agent"),
        ("task-b", "timeout", "agent"),
    ]
    assert (
        "2 agent threads were still running at the end of the run: task-a trial 0, "
        "task-b trial 0; they were abandoned"
    ) in out.stderr


def test_a_timeout_while_waiting_out_retry_after_is_the_providers(workdir: Path) -> None:
    # Every request gets a 429 asking for 10 s; the trial's 4 s run out in that wait.
    reply = Reply(429, error_body("slow down", "rate_limit"), headers={"Retry-After": "10"})
    with OpenAIServer(lambda request: reply) as server:
        out = agentgauge(
            workdir,
            "run",
            "suite.yaml",
            "--agent",
            "openai:fake-model",
            "--base-url",
            server.base_url,
            "--timeout",
            "4",
        )
    # Both trials infra errors: the circuit breaker's exit code, after the summary.
    assert out.returncode == 3, out.stderr
    for trial in stored(workdir):
        assert (trial.status, trial.error_kind) == ("timeout", "infra"), trial.error
        assert trial.error == "timed out after 4.0s in a provider call"
    assert "success 0.0%, 2 infra timeouts, spend" in out.stdout
    assert "stopped: all 2 trials were infra errors" in out.stderr


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://127.0.0.1:8000/v1", "the scheme must be http or https, not 'ftp'"),
        ("http://127.0.0.1:99999/v1", "it does not parse as a URL (Port out of range"),
        ("http://[::1/v1", "it does not parse as a URL (Invalid IPv6 URL)"),
        ("localhost:8000/v1", "did you mean http://localhost:8000/v1?"),
    ],
)
@pytest.mark.parametrize("source", ["--base-url", "OPENAI_BASE_URL"])
def test_an_unusable_base_url_is_refused_before_the_run(
    workdir: Path, url: str, reason: str, source: str
) -> None:
    flags = ["--base-url", url] if source == "--base-url" else []
    env = {"OPENAI_BASE_URL": url} if source == "OPENAI_BASE_URL" else {}
    # --no-preflight: the refusal must not depend on the endpoint check.
    out = agentgauge(
        workdir, "run", "suite.yaml", "--agent", "openai:m", "--no-preflight", *flags, env=env
    )
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert repr(url) in line and reason in line and source in line, line
    assert not (workdir / "s.db").exists() or not stored(workdir)


def test_only_the_agent_that_held_the_loop_is_blamed(tmp_path: Path) -> None:
    """The other trial waited for the blocked loop too, but its deadline did not pass
    while its own code ran: it is recorded as what it was, a success."""
    import asyncio

    async def agent(session: object) -> None:
        if session.task_id == "blocker":  # type: ignore[attr-defined]
            time.sleep(1.5)
        else:
            await asyncio.sleep(0.1)
        await session.call_tool("add", {"amount": 3})  # type: ignore[attr-defined]

    tasks = [
        Task(id=name, instruction="add 3", expectations={"final_state": {"counter": 3}})
        for name in ("blocker", "waiter")
    ]
    header = run(
        tasks,
        agent,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        progress=False,
        concurrency=2,
        timeout=1.0,
    )
    with Store(tmp_path / "s.db") as db:
        by_task = {t.task_id: t for t in db.trials(header.run_id)}
    assert by_task["blocker"].status == "timeout" and by_task["blocker"].error_kind == "agent"
    assert by_task["waiter"].status == "completed" and by_task["waiter"].success


def _blocker_and_bystanders(
    tmp_path: Path, bystanders: dict[str, float], *, block_s: float, timeout: float
) -> dict[str, Trial]:
    """Each bystander (launched first, in order) awaits its seconds and then solves its
    task; the blocker, launched last, holds the loop with ``time.sleep(block_s)``."""
    import asyncio

    async def agent(session: object) -> None:
        task_id: str = session.task_id  # type: ignore[attr-defined]
        if task_id == "blocker":
            time.sleep(block_s)
        else:
            await asyncio.sleep(bystanders[task_id])
        await session.call_tool("add", {"amount": 3})  # type: ignore[attr-defined]

    tasks = [
        Task(id=name, instruction="add 3", expectations={"final_state": {"counter": 3}})
        for name in [*bystanders, "blocker"]
    ]
    header = run(
        tasks,
        agent,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        progress=False,
        concurrency=len(tasks),
        timeout=timeout,
    )
    with Store(tmp_path / "s.db") as db:
        return {t.task_id: t for t in db.trials(header.run_id)}


def test_a_trial_waiting_when_another_blocks_the_loop_is_recorded_as_it_ended(
    tmp_path: Path,
) -> None:
    """The other order: the waiter starts first and its deadline passes while the
    blocker holds the loop. Its 0.1 s wait had ended long before; the late timer
    used to cancel it, recorded as "the agent hung" with the blocker's 1.5 s as its
    latency. Its own clock says it finished well within its second."""
    by_task = _blocker_and_bystanders(tmp_path, {"waiter": 0.1}, block_s=1.5, timeout=1.0)
    assert by_task["blocker"].status == "timeout" and by_task["blocker"].error_kind == "agent"
    waiter = by_task["waiter"]
    assert waiter.status == "completed" and waiter.success, waiter.error
    # the blocker's stall is not the waiter's time; where its own wait ended inside it
    # nobody can tell, so its latency is unknown (it read as about 0 s), and the record
    # says how long the loop was held
    assert waiter.latency_s is None
    assert waiter.metadata["loop_held_by_others_s"] >= 1.0


def test_a_wait_that_outlasts_another_agents_stall_is_not_credited(tmp_path: Path) -> None:
    """A trial whose own wait went on after the loop was free again was not held up by
    the stall: its deadline stands (a timeout of its own), and its latency keeps all
    its time."""
    by_task = _blocker_and_bystanders(
        tmp_path, {"slow": 3.0, "quick": 2.0}, block_s=1.0, timeout=2.5
    )
    slow, quick = by_task["slow"], by_task["quick"]
    assert (slow.status, slow.error_kind) == ("timeout", "agent"), slow.error
    assert slow.error == "timed out after 2.5s in the agent"
    assert quick.status == "completed" and quick.success
    assert quick.latency_s is not None and quick.latency_s >= 2.0
    assert "loop_held_by_others_s" not in quick.metadata


#: A cmd: program: task "huge" answers with 15 MB of text at once; the others work
#: for a second, then solve their task.
HUGE_ANSWER_PROGRAM = """\
import json, re, sys, time
start = json.loads(sys.stdin.readline())
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n")
    sys.stdout.flush()
send({"type": "cost", "usd": 0})
if start["task_id"] == "huge":
    send({"type": "answer", "content": "y" * (15 * 1024 * 1024)})
    send({"type": "done"})
    sys.exit(0)
time.sleep(1.0)
send({"type": "tool_call", "name": "add", "arguments": {"amount": 3}})
sys.stdin.readline()
send({"type": "say", "content": "Added 3."})
sys.stdin.readline()
send({"type": "done"})
"""


def test_grading_a_huge_answer_does_not_hold_up_the_other_trials(tmp_path: Path) -> None:
    """Grading read text cues over the whole answer on the event loop, ~3 s for 15 MB:
    the two other trials, which finished in about a second, were recorded as agent
    timeouts at 9.6 s with --timeout 4."""
    suite = {
        "name": "huge",
        "tasks": [
            {
                "id": name,
                "environment": "agentgauge.testing.worlds:make_counter_env",
                "instruction": "Please add 3",
                "expectations": {"final_state": {"counter": 3}, "control": "act"},
            }
            for name in ("huge", "a", "b")
        ],
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    (tmp_path / "huge.py").write_text(HUGE_ANSWER_PROGRAM)
    agent = f"cmd:{sys.executable} huge.py"
    out = agentgauge(tmp_path, "run", "suite.yaml", "--agent", agent, "--timeout", "4")
    assert out.returncode == 0, out.stderr
    by_task = {t.task_id: t for t in stored(tmp_path)}
    for name in ("a", "b"):
        trial = by_task[name]
        assert trial.status == "completed" and trial.success, trial.error
        assert trial.latency_s is not None and trial.latency_s < 4
    assert by_task["huge"].status == "completed" and by_task["huge"].control == "act"
