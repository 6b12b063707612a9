"""Every session offers an agent the whole `Session` interface, a plain ``def`` agent's too.

Before this change `SyncSession` (what a plain ``def`` agent gets) wrapped only part of
`TrialSession`: ``session.note``, ``report_state`` and ``record_event`` raised
AttributeError (recorded as the agent's error), and ``trial``, ``variant`` and
``record_model_call(cache_read_tokens=...)`` were missing, though the docs list them
for every agent. One list, `SESSION_INTERFACE`, now names the interface, and these
tests keep the sessions and the docs to it.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.base import SESSION_INTERFACE, Session
from agentgauge.agents.callable import SyncSession
from agentgauge.harness.runner import run
from agentgauge.harness.session import TrialSession
from agentgauge.schema import ModelCallEvent, Task, ToolCallEvent
from agentgauge.store import Store
from agentgauge.testing.worlds import make_counter_env

ROOT = Path(__file__).resolve().parents[2]

#: TrialSession's public names that are the harness's, not the agent's.
HARNESS_ONLY = {"outcome", "user_done", "env_failure", "transcript_bytes"}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_trial_session_is_the_interface_and_the_harness_bits() -> None:
    # A method added to TrialSession for agents must join Session, and so SyncSession.
    instance_attrs = {"trial", "variant", "user_done", "env_failure"}  # set in __init__
    assert (public(TrialSession) | instance_attrs) - HARNESS_ONLY == set(SESSION_INTERFACE)


@pytest.mark.parametrize("name", SESSION_INTERFACE)
def test_the_sync_session_has_every_name_as_the_protocol_has_it(name: str) -> None:
    declared = inspect.getattr_static(Session, name)
    mine = inspect.getattr_static(SyncSession, name)
    assert isinstance(mine, property) == isinstance(declared, property), name
    if isinstance(declared, property):
        return
    # Same parameters, defaults and types; blocking where the protocol is async.
    assert inspect.signature(mine) == inspect.signature(declared), name
    assert not inspect.iscoroutinefunction(mine)
    ours = inspect.getattr_static(TrialSession, name)
    assert inspect.signature(ours) == inspect.signature(declared), name


def test_the_docs_list_every_name() -> None:
    text = (ROOT / "docs" / "running-agents.md").read_text()
    table = text[text.index("## Your agent") : text.index("### What the session accepts")]
    listed = set(re.findall(r"session\.(\w+)", table))
    assert set(SESSION_INTERFACE) <= listed, set(SESSION_INTERFACE) - listed


def plain_def_agent(session: Any) -> None:
    """Uses every method a plain def agent used to lack."""
    session.record_cost(0.0)
    session.note("seen", {"trial": session.trial, "variant": session.variant})
    session.record_model_call(
        model="m",
        input_tokens=10,
        output_tokens=2,
        cost_usd=0.5,
        latency_s=0.1,
        cache_read_tokens=4,
        reasoning_tokens=1,
        price_source="mine",
    )
    session.record_event(ToolCallEvent(name="remote_lookup", arguments={"q": 1}, call_id="r1"))
    session.report_state({"counter": 3})
    session.answer("Added 3.")


def test_a_plain_def_agent_has_the_whole_session(tmp_path: Path) -> None:
    task = Task(id="t", instruction="add 3", expectations={"final_state": {"counter": 3}})
    header = run(
        [task],
        plain_def_agent,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        variants=["base", "paraphrase"],
        progress=False,
    )
    with Store(tmp_path / "s.db") as db:
        (trial,) = db.trials(header.run_id)  # no paraphrases: base only
    assert trial.status == "completed" and trial.success, trial.error
    assert trial.metadata["seen"] == {"trial": 0, "variant": "base"}
    assert trial.final_state == {"counter": 3}  # the reported state
    assert trial.cost_usd == 0.5 and trial.input_tokens == 10
    (call,) = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert (call.cache_read_tokens, call.reasoning_tokens, call.price_source) == (4, 1, "mine")
    assert [e.name for e in trial.events if isinstance(e, ToolCallEvent)] == ["remote_lookup"]


async def _says_none(session: Any) -> None:
    await session.say(None)


async def _says_a_number(session: Any) -> None:
    await session.say(42)


def _misspelt_decision(session: Any) -> None:  # a plain def: the same refusal
    session.control("refusee", "out of policy")


async def _numeric_reason(session: Any) -> None:
    session.control("refuse", 5)


async def _answers_a_number(session: Any) -> None:
    session.answer(7)


async def _zero_attempts(session: Any) -> None:
    session.record_model_call(
        model="m", input_tokens=1, output_tokens=1, cost_usd=0.1, latency_s=0.1, attempts=0
    )


async def _tool_named_by_a_number(session: Any) -> None:
    await session.call_tool(123, {})


async def _notes_the_harness_attempts(session: Any) -> None:
    session.note("attempts", 3)  # read as 3 runs of the cell (--infra-retries)


def _notes_loop_held(session: Any) -> None:  # a plain def: the same refusal
    session.note("loop_held_by_others_s", 1.0)  # made the trial's latency unknown


@pytest.mark.parametrize(
    ("agent", "error"),
    [
        (_says_none, "AgentError: say: text must be a string, got None (NoneType)"),
        (_says_a_number, "AgentError: say: text must be a string, got 42 (int)"),
        (
            _misspelt_decision,
            "AgentError: control: decision: Input should be 'act', 'ask', 'refuse', 'stop', "
            "'confirm', 'recover' or 'transfer', got 'refusee' (str)",
        ),
        (
            _numeric_reason,
            "AgentError: control: reason: Input should be a valid string, got 5 (int)",
        ),
        (
            _answers_a_number,
            "AgentError: answer: text: Input should be a valid string, got 7 (int)",
        ),
        (
            _zero_attempts,
            "AgentError: record_model_call: attempts: Input should be greater than or equal "
            "to 1, got 0 (int)",
        ),
        (
            _tool_named_by_a_number,
            "AgentError: call_tool: name: Input should be a valid string, got 123 (int)",
        ),
        (
            _notes_the_harness_attempts,
            "AgentError: note: metadata.attempts is agentgauge's own (how many times the "
            "harness ran the cell (--infra-retries)); note under another key",
        ),
        (
            _notes_loop_held,
            "AgentError: note: metadata.loop_held_by_others_s is agentgauge's own (how long "
            "other trials' stalls held this one up); note under another key",
        ),
    ],
)
def test_a_value_the_session_refuses_is_the_agents_error_naming_the_call(
    tmp_path: Path, agent: Any, error: str
) -> None:
    # say(None) reached the world as the agent's message: the retail world raised on it,
    # and the agent's mistake was an infra error (EnvironmentFailed) that tripped the
    # circuit breaker; the counter world took it, and the trial "completed". The others
    # were pydantic's report on the event (`1 validation error for ControlEvent decision
    # ... For further information visit ...`), naming no session call.
    task = Task(id="t", instruction="add 3", expectations={"final_state": {"counter": 3}})
    header = run(
        [task], agent, store=tmp_path / "s.db", env_factory=make_counter_env, progress=False
    )
    with Store(tmp_path / "s.db") as db:
        (trial,) = db.trials(header.run_id)
    assert (trial.status, trial.error_kind, trial.error) == ("error", "agent", error)
    assert trial.metadata == {}  # nothing the agent noted under the harness's key


def test_every_key_the_harness_writes_is_refused_to_a_note() -> None:
    # The keys agentgauge writes into a trial's metadata itself, where they are defined.
    from agentgauge.harness.session import HARNESS_METADATA_KEYS
    from agentgauge.harness.trial import LOOP_HELD_KEY

    src = ROOT / "src" / "agentgauge"
    written = {LOOP_HELD_KEY}
    for path in src.rglob("*.py"):
        written |= set(re.findall(r'\bmetadata\["(\w+)"\] =', path.read_text()))
    # What importers keep from the files they read is the file's, not the harness's;
    # trace_t0_ns is the `http:` adapter's own note (any agent may write it), which
    # collect fills in only when no agent did.
    written -= {"sample_metadata", "error_traceback", "limit", "model_usage", "score_raw",
                "human_baseline", "trace_t0_ns"}  # fmt: skip
    assert written == set(HARNESS_METADATA_KEYS)
