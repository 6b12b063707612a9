"""Reference agents — SIMULATED, no model involved.

They exist so that the whole method can be shown and tested on a machine with
no model: every metric has something to move. They read the task's reference
plan (which a real agent never sees), so their scores say nothing about any
real system.

- ``builtin:null`` does nothing: no tool call, no message. Whatever it passes
  is a validity defect of the suite (docs/metrics.md, "Validity checks").
- ``builtin:oracle`` follows the reference plan exactly: verifies identity, asks
  for missing facts, asks for an explicit yes before irreversible calls, refuses
  or transfers as the task expects, retries injected faults, and answers.
- ``builtin:careful`` and ``builtin:hasty`` follow the same plan through a
  seeded noise model (randomness only from ``session.rng``) whose errors are
  the real failure modes: wrong arguments, wrong call (reads instead of
  writing), skipped confirmation, early stop, over-refusal, under-refusal,
  guessing instead of asking, sensitivity to paraphrases and to reshaped tool
  results, giving up on tool faults, in conversations with follow-ups skipping
  a lookup or forgetting the follow-up, and more errors on longer tasks (error
  rates grow with log2 of ``human_minutes``). ``careful`` makes fewer errors
  and retries faults; ``hasty`` skips confirmations and gives up.
- ``builtin:ablation`` is the simplest version of the same system, the
  ablation baseline (docs/compare-and-plan.md, "Baselines"): one simulated
  model call that plans the whole trial from the instruction, then no
  orchestration — it never asks for a missing fact or a confirmation, never
  re-reads a result and never retries a fault.

Each reports a confidence with ``session.report_confidence``: ``careful``'s
tracks its own slips; ``hasty`` is over-confident.

So that cost and token metrics have something to show, each step (a tool call
or a message) is recorded as a *simulated* model call (model ``sim:NAME``):
input tokens grow with the transcript, output tokens are drawn, and the price
comes from `SIM_PRICES` — careful's (and the ablation's) per-token price is that
of a large model, hasty's of a small one; the ablation records one call per
trial. The draws use their own random stream, so they never change what the
agent does. The figures are illustrative, not measurements.

The agents read each task's reference plan, so each built-in world says how its
plans are followed (`agentgauge.envs.builtin`: ``play``, in
``envs/retail/agent.py`` and ``envs/functions/agent.py``); this module holds
what they share: the noise profiles, the metering, and `PlanRun`, one trial's
execution of a plan.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from agentgauge._version import __version__
from agentgauge.envs.base import ToolOutcome
from agentgauge.errors import InputError
from agentgauge.report.formats import counted
from agentgauge.schema import Task, ToolCallSpec
from agentgauge.textio import is_digits

if TYPE_CHECKING:  # the agent-facing session the harness implements
    from agentgauge.agents.base import Session

__all__ = [
    "FILL",
    "PROFILES",
    "REFERENCE_AGENTS",
    "GaveUp",
    "NoiseProfile",
    "PlanRun",
    "ReferenceAgent",
    "reference_agent",
    "schema_required",
    "typo",
]

REFERENCE_AGENTS = (
    "builtin:null",
    "builtin:oracle",
    "builtin:careful",
    "builtin:hasty",
    "builtin:ablation",
)

#: Simulated prices in USD per 1M (input, output) tokens, and seconds per output token.
SIM_PRICES: dict[str, tuple[float, float, float]] = {
    "oracle": (2.50, 10.00, 0.012),
    "careful": (2.50, 10.00, 0.012),
    "hasty": (0.15, 0.60, 0.005),
    "ablation": (2.50, 10.00, 0.012),
}
#: Agents that plan in one model call: only their first step is metered.
_ONE_CALL = frozenset({"ablation"})


class _MeteredSession:
    """Records a simulated model call before each step the agent takes."""

    def __init__(self, session: Session, name: str, rng: np.random.Generator) -> None:
        self._s = session
        self._model = f"sim:{name}"
        self._price = SIM_PRICES[name]
        self._rng = rng
        self._one_call = name in _ONE_CALL
        self._calls = 0

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._s, attr)

    def _think(self) -> None:
        if self._one_call and self._calls:
            return
        self._calls += 1
        prompt = 900 + 120 * len(self._s.events)
        # A one-call agent writes its whole plan at once.
        low, high = (120, 480) if self._one_call else (30, 160)
        completion = int(self._rng.integers(low, high))
        p_in, p_out, per_token = self._price
        self._s.record_model_call(
            model=self._model,
            input_tokens=prompt,
            output_tokens=completion,
            cost_usd=(prompt * p_in + completion * p_out) / 1e6,
            latency_s=0.25 + completion * per_token * float(self._rng.uniform(0.8, 1.25)),
        )

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self._think()
        return await self._s.call_tool(name, arguments)

    async def say(self, text: str) -> str | None:
        self._think()
        return await self._s.say(text)


@dataclass(frozen=True)
class NoiseProfile:
    """Per-opportunity error probabilities of a simulated agent (before multipliers)."""

    wrong_args: float
    """A write call (or a function call) gets a wrong argument."""
    wrong_call: float
    """A write call is replaced by a read (the agent believes it acted)."""
    skip_confirm: float
    """An irreversible call is made without asking for a yes first."""
    early_stop: float
    """The agent stops before a step, leaving the rest undone."""
    over_refuse: float
    """An actionable task is refused (or escalated) outright."""
    under_refuse: float
    """A task that must be refused or escalated is acted on instead."""
    guess: float
    """A missing fact is guessed instead of asked for."""
    length_slope: float
    """Error rates are multiplied by ``1 + length_slope * log2(human_minutes)``."""
    paraphrase_factor: float
    """Multiplier when the instruction is a paraphrase."""
    reshaped_factor: float
    """Multiplier once tool results arrive in an unfamiliar shape (``env:`` variants)."""
    give_up: float
    """Probability of giving up at each injected fault instead of retrying."""
    max_retries: int
    """Retries of a faulted call before giving up."""
    calibrated: bool
    """Whether the reported confidence reflects the agent's own slips."""
    skip_lookup: float = 0.0
    """In a conversation with follow-ups, an order or product lookup is skipped (the
    agent answers from what it saw before): no mark on the state."""
    forget_follow_up: float = 0.0
    """A follow-up request is acknowledged but not acted on."""


PROFILES: dict[str, NoiseProfile] = {
    "careful": NoiseProfile(
        wrong_args=0.02, wrong_call=0.01, skip_confirm=0.03, early_stop=0.004,
        over_refuse=0.02, under_refuse=0.06, guess=0.08, length_slope=0.35,
        paraphrase_factor=1.5, reshaped_factor=1.4, give_up=0.02, max_retries=4,
        calibrated=True, skip_lookup=0.01, forget_follow_up=0.005,
    ),
    "hasty": NoiseProfile(
        wrong_args=0.05, wrong_call=0.03, skip_confirm=0.35, early_stop=0.012,
        over_refuse=0.04, under_refuse=0.3, guess=0.45, length_slope=0.5,
        paraphrase_factor=2.2, reshaped_factor=2.0, give_up=0.6, max_retries=1,
        calibrated=False, skip_lookup=0.12, forget_follow_up=0.05,
    ),
    # The ablation: one call with the whole context, no orchestration. It plans once
    # from the instruction, so it guesses what it was not told and never asks for a
    # yes (both capped at 95% by `PlanRun.chance`), never retries a fault, and reshaped
    # results do not bother a plan made before they arrived.
    "ablation": NoiseProfile(
        wrong_args=0.04, wrong_call=0.02, skip_confirm=1.0, early_stop=0.0,
        over_refuse=0.02, under_refuse=0.15, guess=1.0, length_slope=0.4,
        paraphrase_factor=1.6, reshaped_factor=1.0, give_up=1.0, max_retries=0,
        calibrated=False,
    ),
}  # fmt: skip

#: Defaults for required arguments a plan step leaves out (under-refusal calls).
FILL = {"reason": "no longer needed", "amount": 50.0, "payment_id": "card_4242",
         "item_ids": [], "summary": "customer request"}  # fmt: skip
_TRANSIENT = ("timed out", "429", "transient", "too many requests")


class GaveUp(Exception):
    """The agent stopped after a tool fault."""


class ReferenceAgent:
    """A simulated agent that knows each task's reference plan."""

    model: str | None = None
    simulated = True
    """Marks the agent as a simulation (reports label its results as such)."""

    def __init__(self, name: str, tasks: Iterable[Task], profile: NoiseProfile | None) -> None:
        self.name = name
        self.profile = profile
        self._tasks = {t.id: t for t in tasks}

    def components(self) -> dict[str, Any]:
        """The simulation's configuration (`agentgauge.components`): its simulated
        model, and no prompt or sampling (it follows the reference plan)."""
        short = self.name.removeprefix("builtin:")
        none = "none (simulated)"
        return {
            "model": f"sim:{short}" if short in SIM_PRICES else none,
            "agent_version": f"{self.name} (agentgauge {__version__}, simulated)",
            "system_prompt": none,
            **dict.fromkeys(("temperature", "top_p", "max_tokens", "seed"), none),
        }

    async def __call__(self, session: Session) -> None:
        # A simulation spends nothing beyond its simulated model calls, and says so:
        # a trial whose agent records no cost has an unknown one.
        session.record_cost(0.0)
        if self.name == "builtin:null":
            return
        task = self._tasks.get(session.task_id)
        if task is None:
            raise InputError(f"{self.name} has no reference plan for task {session.task_id!r}")
        # Imported here: the worlds' players import this module.
        from agentgauge.envs.builtin import builtin_environment

        world = builtin_environment(task)
        if world is None:
            raise InputError(
                f"{self.name} plays the built-in worlds (retail, functions); task "
                f"{session.task_id!r} has environment {task.environment!r}"
            )
        await world.play(PlanRun(session, task, self.profile, self.name.removeprefix("builtin:")))


def reference_agent(name: str, tasks: Iterable[Task]) -> ReferenceAgent:
    """``builtin:null|oracle|careful|hasty|ablation`` (the ``builtin:`` prefix is optional).

    All but ``builtin:null`` play a task through its built-in world's reference plan,
    so a task of another world is refused here, before any trial: each of its trials
    would have been the agent's error, and the run a 0% success that measures nothing.
    """
    short = name.removeprefix("builtin:")
    if f"builtin:{short}" not in REFERENCE_AGENTS:
        raise InputError(
            f"unknown reference agent {name!r} (known: {', '.join(REFERENCE_AGENTS)})",
            field="agent",
        )
    tasks = list(tasks)
    if short != "null":
        # Imported here: the worlds' players import this module.
        from agentgauge.envs.builtin import BUILTIN_ENVIRONMENTS, builtin_environment

        foreign = [t for t in tasks if builtin_environment(t) is None]
        if foreign:
            more = f" (and {counted(len(foreign) - 1, 'more task')})" if len(foreign) > 1 else ""
            raise InputError(
                f"builtin:{short} plays only the built-in worlds "
                f"({', '.join(BUILTIN_ENVIRONMENTS)}); task {foreign[0].id!r} has "
                f"environment {foreign[0].environment!r}{more}. Run it on a built-in "
                "suite (builtin:retail), or use builtin:null, which plays any suite",
                field="agent",
            )
    return ReferenceAgent(f"builtin:{short}", tasks, PROFILES.get(short))


class PlanRun:
    """One trial's execution of a plan, with the profile's noise (none for the oracle)."""

    def __init__(
        self, session: Session, task: Task, profile: NoiseProfile | None, name: str
    ) -> None:
        self.task = task
        self.p = profile
        # A child stream keyed by the task: if a harness gives trial k of every task the
        # same seed, the agents' slips must still be independent across tasks.
        base = int(session.rng.integers(2**32))
        self.rng = np.random.default_rng([base, zlib.crc32(task.id.encode())])
        # Usage draws come from a sibling stream so metering never changes behaviour.
        usage = np.random.default_rng([base, zlib.crc32(task.id.encode()), 1])
        self.s: Session = _MeteredSession(session, name, usage)
        self.slipped = False
        self.reshaped = False
        minutes = task.human_minutes or 1.0
        self.mult = 1.0
        if profile is not None:
            self.mult = 1.0 + profile.length_slope * math.log2(max(minutes, 1.0))
            if session.instruction != task.instruction:
                self.mult *= profile.paraphrase_factor

    # ------------------------------------------------------------------ noise

    def chance(self, base: float) -> bool:
        """Draw an error with probability ``base`` scaled by this trial's multipliers."""
        if self.p is None:
            return False
        factor = self.mult * (self.p.reshaped_factor if self.reshaped else 1.0)
        hit = bool(self.rng.random() < min(0.95, base * factor))
        self.slipped |= hit
        return hit

    async def call(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        """Call a tool, retrying injected faults as the profile allows."""
        outcome = await self.s.call_tool(name, args)
        retries = 0
        while outcome.is_error and _transient(outcome.content):
            limit = 5 if self.p is None else self.p.max_retries
            gives_up = self.p is not None and self.rng.random() < self.p.give_up
            if retries >= limit or gives_up:
                self.slipped = True
                self.s.control("stop", "the tool keeps failing")
                raise GaveUp
            retries += 1
            self.s.control("recover", f"retrying {name} after a transient error")
            outcome = await self.s.call_tool(name, args)
        if not outcome.is_error and _unfamiliar(outcome.content):
            self.reshaped = True
        return outcome

    async def confirm(self, call: ToolCallSpec) -> bool:
        """Ask the user for an explicit yes before ``call``; whether they gave it."""
        self.s.control("confirm", f"asking before {call.name}")
        described = ", ".join(f"{k}={v}" for k, v in call.arguments.items())
        reply = await self.s.say(
            f"To confirm, I will run {call.name} with {described}. Shall I proceed (yes/no)?"
        )
        return reply is not None and reply.strip().lower().startswith("yes")

    async def finish(self, text: str) -> None:
        await self.s.say(text)
        self.s.answer(text)
        if self.p is None:
            self.s.report_confidence(0.99)
        elif self.p.calibrated:
            conf = 0.92 - (0.5 if self.slipped else 0.0) + 0.05 * self.rng.standard_normal()
            self.s.report_confidence(float(min(1.0, max(0.0, conf))))
        else:
            conf = 0.9 - (0.1 if self.slipped else 0.0) + 0.05 * self.rng.standard_normal()
            self.s.report_confidence(float(min(1.0, max(0.0, conf))))


# --------------------------------------------------------------------------- helpers


def _transient(content: Any) -> bool:
    text = str(content).lower()
    return any(cue in text for cue in _TRANSIENT)


def _unfamiliar(content: Any) -> bool:
    """Whether a result looks reshaped: wrapped, camelCase keys, or id key not first."""
    if not isinstance(content, dict) or not content:
        return False
    keys = list(content)
    if "data" in content and "status" in content:
        return True
    if any(k != k.lower() for k in keys):
        return True
    return len(keys) > 1 and not keys[0].endswith("_id")


def schema_required(fn: dict[str, Any]) -> list[str]:
    """The required parameters of a JSON-schema function doc."""
    required = fn.get("parameters", {}).get("required", [])
    return [str(r) for r in required]


def typo(value: str) -> str:
    """A plausible mistyping: the last digit off by one, else an extra letter."""
    if value and is_digits(value[-1:]):
        return value[:-1] + str((int(value[-1]) + 1) % 10)
    return value + "x"
