"""A synchronous agent's session after its trial ended: `TrialOver` says why the trial
ended (the function returned, raised, or ran out of time), as a thread the agent left
behind sees it."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.callable import TrialOver
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.testing.worlds import make_counter_env

TASK = Task(id="t0", instruction="please add 1", expectations={"final_state": {"counter": 1}})


def _late_call(tmp_path: Path, body: Any, **kw: Any) -> str:
    """What a thread the agent started sees when it calls the session after the trial."""
    seen: list[str] = []
    done = threading.Event()
    session_of: list[Any] = []

    def later() -> None:
        time.sleep(0.3)
        try:
            session_of[0].call_tool("get", {})
        except TrialOver as exc:
            seen.append(str(exc))
        done.set()

    def agent(session: Any) -> None:
        session_of.append(session)
        threading.Thread(target=later, daemon=True).start()
        body(session)

    run([TASK], agent, store=tmp_path / "s.db", env_factory=make_counter_env, progress=False, **kw)
    assert done.wait(5)
    (message,) = seen
    return message


def test_a_call_after_the_function_returned_says_it_returned(tmp_path: Path) -> None:
    message = _late_call(tmp_path, lambda s: s.call_tool("add", {"amount": 1}))
    assert message == (
        "the trial has ended (the agent function returned); session calls after that are refused"
    )


def test_a_call_after_the_function_raised_says_it_raised(tmp_path: Path) -> None:
    def raises(session: Any) -> None:
        raise ValueError("boom")

    message = _late_call(tmp_path, raises)
    assert message.startswith("the trial has ended (the agent function raised);")


@pytest.mark.filterwarnings("ignore:.*still running at the end of the run:RuntimeWarning")
def test_a_call_after_the_timeout_says_it_timed_out(tmp_path: Path) -> None:
    message = _late_call(tmp_path, lambda s: time.sleep(0.5), timeout=0.1)
    assert message.startswith("the trial has ended (the trial timed out or was cancelled);")
