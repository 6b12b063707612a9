"""Ctrl-C (SIGINT) stops a real ``agentgauge run`` at once, with every agent kind.

The process is sent SIGINT once it is writing trials; it must exit 130 promptly with
"interrupted: N trials saved; resume with: COMMAND", N being what the store holds,
and running COMMAND must complete the run with every cell exactly once.

On the main branch before this change the built-in agents ignored SIGINT and ran
the whole suite; the other agents died with exit 130 and no word of how to resume.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import stored_trials

from agentgauge.errors import RunInterrupted
from agentgauge.harness.runner import arun
from agentgauge.store import Store
from agentgauge.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
COUNTER = ROOT / "examples" / "counter-suite.yaml"
WORLDS = "agentgauge.testing.worlds"

SLOW_AGENT = """
import asyncio
from agentgauge.testing.worlds import counting_agent

async def slow(session):
    await asyncio.sleep(0.02)
    await counting_agent(session)
"""


CASES = {
    # The built-in agents never wait on anything: the case asyncio's own handling missed.
    "builtin": ("builtin:retail", "builtin:careful", 40),
    "python": (str(COUNTER), "slow_agents:slow", 400),
    "cmd": (str(COUNTER), f"cmd:{sys.executable} {ROOT / 'examples' / 'cmd_agent.py'}", 100),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CASES))
def test_ctrl_c_saves_what_is_done_and_says_how_to_resume(tmp_path: Path, kind: str) -> None:
    suite, agent, trials = CASES[kind]
    (tmp_path / "slow_agents.py").write_text(SLOW_AGENT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    db = tmp_path / "s.db"
    argv = [sys.executable, "-m", "agentgauge", "run", suite, "--agent", agent,
            "--store", str(db), "--trials", str(trials), "--no-progress"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)  # fmt: skip
    deadline = time.monotonic() + 120
    while stored_trials(db) == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be interrupted; make it longer"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    message = err.strip().splitlines()[-1]
    head, _, command = message.partition("; resume with: ")
    saved = stored_trials(db)
    assert head == f"interrupted: {saved} trial{'' if saved == 1 else 's'} saved", err
    with Store(db, readonly=True) as store:
        (run_id,) = [r.run_id for r in store.list_runs()]
    total = trials * len(load_suite(suite).tasks)
    assert 0 < saved < total

    resume = shlex.split(command)
    assert resume[:2] == ["agentgauge", "run"]
    # The run id, then the design as given, so that the command runs it even when no
    # trial was saved and no header is left to bring it back.
    i = resume.index("--run-id")
    assert resume[i : i + 4] == ["--run-id", run_id, "--trials", str(trials)]
    done = subprocess.run([sys.executable, "-m", "agentgauge", *resume[1:], "--no-progress"],
                          capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Store(db, readonly=True) as store:
        cells = Counter((t.task_id, t.trial, t.variant) for t in store.trials(run_id, events=False))
    assert len(cells) == sum(cells.values())  # every cell once
    assert len(cells) == total and f"{total} trials" in done.stdout


# Ctrl-C before the first trial is saved. The agents send SIGINT to their own process,
# so that it arrives at a known step: while the agent's module is imported (the run has
# written nothing yet), or while the first trial waits (its header is written).
EARLY_AGENTS = """
import asyncio
import os
import signal

from agentgauge.testing.worlds import counting_agent

if os.environ.get("CTRL_C_AT_IMPORT"):
    os.kill(os.getpid(), signal.SIGINT)


async def at_import(session):
    await counting_agent(session)


async def in_first_trial(session):
    os.kill(os.getpid(), signal.SIGINT)
    await asyncio.sleep(30)


CALLS = []


# Ctrl-C in this process's trial number CTRL_C_AT_CALL (from 0), when it is set.
async def at_call(session):
    CALLS.append(session.task_id)
    if str(len(CALLS) - 1) == os.environ.get("CTRL_C_AT_CALL"):
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(30)
    await counting_agent(session)
"""


def _agentgauge(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "early_agents.py").write_text(EARLY_AGENTS)
    path = os.pathsep.join([str(tmp_path), str(ROOT / "src")])
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args, "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path, **env},
        cwd=tmp_path,
    )


def test_ctrl_c_while_the_run_starts_writes_nothing_and_says_how_to_run_it_again(
    tmp_path: Path,
) -> None:
    # asyncio's own handler only cancelled the run's task, which a step that blocks saw
    # at its first await, after the header was written: a bare "interrupted", and an
    # empty run left under the id.
    args = ["run", str(COUNTER), "--agent", "early_agents:at_import", "--store", "s.db",
            "--run-id", "r"]  # fmt: skip
    out = _agentgauge(tmp_path, *args, CTRL_C_AT_IMPORT="1")
    assert out.returncode == 130, out.stderr
    assert out.stderr.strip() == (
        "interrupted: 0 trials saved; resume with: agentgauge run "
        f"{COUNTER} --agent early_agents:at_import --store s.db --run-id r"
    )
    assert out.stdout == ""
    assert not (tmp_path / "s.db").exists()


def test_a_run_interrupted_before_its_first_trial_leaves_no_run_to_block_the_next(
    tmp_path: Path,
) -> None:
    args = ["run", str(COUNTER), "--store", "s.db", "--run-id", "r", "--concurrency", "1"]
    out = _agentgauge(tmp_path, *args, "--agent", "early_agents:in_first_trial")
    assert out.returncode == 130, out.stderr
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .startswith("interrupted: 0 trials saved; resume with: agentgauge run ")
    )
    # The empty run it had made was not kept, nor the store file it had made for it
    # (an empty store read as a result: `agentgauge runs` listing nothing).
    assert sorted(p.name for p in tmp_path.glob("s.db*")) == []
    # The corrected command (another agent) under the same id was refused: "run 'r'
    # was made with agent 'early_agents:in_first_trial'".
    fixed = _agentgauge(tmp_path, *args, "--agent", "agentgauge.testing.worlds:counting_agent")
    assert fixed.returncode == 0, fixed.stderr
    assert "run r in s.db: 3 trials, success 100.0%" in fixed.stdout


def test_a_store_that_existed_is_kept_when_the_run_is_interrupted_before_a_trial(
    tmp_path: Path,
) -> None:
    Store(tmp_path / "s.db").close()  # the user's, empty
    args = ["run", str(COUNTER), "--store", "s.db", "--run-id", "r", "--concurrency", "1"]
    out = _agentgauge(tmp_path, *args, "--agent", "early_agents:in_first_trial")
    assert out.returncode == 130, out.stderr
    with Store(tmp_path / "s.db", readonly=True) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize("at_call", [0, 4])
def test_the_resume_command_runs_the_design_that_was_given(tmp_path: Path, at_call: int) -> None:
    # A run that saved no trial is not kept, so its design cannot come back from its
    # header: the command left --trials, --variants, --seed... out, and ran 1 trial of
    # base with seed 0, timeout 300 and concurrency 8. A kept run (at_call 4) must take
    # the same options again as the same design, not refuse them as a change.
    design = ["--trials", "2", "--variants", "base,paraphrase", "--paraphrases", "1",
              "--seed", "7", "--timeout", "20", "--concurrency", "1"]  # fmt: skip
    args = ["run", str(COUNTER), "--agent", "early_agents:at_call", "--store", "s.db",
            "--run-id", "r", *design, "--baseline-role", "previous"]  # fmt: skip
    out = _agentgauge(tmp_path, *args, CTRL_C_AT_CALL=str(at_call))
    assert out.returncode == 130, out.stderr
    head, _, command = out.stderr.strip().splitlines()[-1].partition("; resume with: ")
    saved = stored_trials(tmp_path / "s.db")
    assert head == f"interrupted: {saved} trial{'' if saved == 1 else 's'} saved"
    assert (saved > 0) == (at_call > 0)
    assert command == (
        f"agentgauge run {COUNTER} --agent early_agents:at_call --store s.db --run-id r "
        "--trials 2 --variants base,paraphrase --seed 7 --concurrency 1 --timeout 20.0 "
        "--paraphrases 1 --baseline-role previous"
    )
    resumed = _agentgauge(tmp_path, *shlex.split(command)[1:])
    assert resumed.returncode == 0, resumed.stderr
    with Store(tmp_path / "s.db", readonly=True) as store:
        (run,) = store.list_runs()
        cells = Counter((t.task_id, t.trial, t.variant) for t in store.trials("r", events=False))
    # 3 tasks x 2 trials x (base, paraphrase:1), each once
    assert sorted(cells.values()) == [1] * 12
    assert {v for _, _, v in cells} == {"base", "paraphrase:1"}
    config = run.config
    assert (config["trials"], config["seed"], config["timeout"], config["concurrency"]) == (
        2, 7, 20.0, 1
    )  # fmt: skip
    assert config["max_paraphrases"] == 1 and config["baseline_role"] == "previous"


# Two runs at once in one process (``asyncio.gather`` of two `arun` calls). Each run used
# to save the SIGINT handler it found and put it back when it ended, which holds only
# when runs end in the reverse order of their start: ended in start order, the first
# run's handler stayed installed, and a later Ctrl-C raised "Event loop is closed"
# instead of KeyboardInterrupt.
def _held_agent(started: asyncio.Event, release: asyncio.Event) -> Any:
    async def agent(session: Any) -> None:
        started.set()
        await release.wait()
        await session.say("done")

    return agent


def _overlapping(tmp_path: Path, started: list[asyncio.Event], release: list[asyncio.Event]) -> Any:
    task = {"id": "t", "instruction": "add 1", "environment": f"{WORLDS}:make_counter_env"}
    return [
        arun(
            [task],
            _held_agent(s, r),
            store=tmp_path / "s.db",
            run_id=f"r{i}",
            grader=None,
            progress=False,
            preflight=False,
        )
        for i, (s, r) in enumerate(zip(started, release, strict=True))
    ]


def test_overlapping_runs_ending_in_start_order_give_ctrl_c_back(tmp_path: Path) -> None:
    async def main() -> None:
        started = [asyncio.Event(), asyncio.Event()]
        release = [asyncio.Event(), asyncio.Event()]
        first, second = (asyncio.ensure_future(c) for c in _overlapping(tmp_path, started, release))
        await asyncio.gather(*(s.wait() for s in started))
        release[0].set()
        await first  # the first run ends first, the second still under way
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        release[1].set()
        await second

    asyncio.run(main())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_runs_overlap_stops_them_all(tmp_path: Path) -> None:
    async def main() -> list[BaseException]:
        started = [asyncio.Event(), asyncio.Event()]
        release = [asyncio.Event(), asyncio.Event()]  # never set: only Ctrl-C ends them
        runs = [asyncio.ensure_future(c) for c in _overlapping(tmp_path, started, release)]
        await asyncio.gather(*(s.wait() for s in started))
        os.kill(os.getpid(), signal.SIGINT)
        return await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), 30)

    outcomes = asyncio.run(main())
    assert [type(o) for o in outcomes] == [RunInterrupted, RunInterrupted]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
