"""Reference agents — SIMULATED, no model involved (SPEC 8).

They exist so that the whole method can be shown and tested on a machine with
no model: every metric has something to move. They read the task's reference
plan (which a real agent never sees), so their scores say nothing about any
real system.

- ``builtin:null`` does nothing: no tool call, no message. Whatever it passes
  is a validity defect of the suite (SPEC 5.10).
- ``builtin:oracle`` follows the reference plan exactly: verifies identity, asks
  for missing facts, asks for an explicit yes before irreversible calls, refuses
  or transfers as the task expects, retries injected faults, and answers.
- ``builtin:careful`` and ``builtin:hasty`` follow the same plan through a
  seeded noise model (randomness only from ``session.rng``) whose errors are
  the real failure modes: wrong arguments, wrong call (reads instead of
  writing), skipped confirmation, early stop, over-refusal, under-refusal,
  guessing instead of asking, sensitivity to paraphrases and to reshaped tool
  results, giving up on tool faults, and more errors on longer tasks (error
  rates grow with log2 of ``human_minutes``). ``careful`` makes fewer errors
  and retries faults; ``hasty`` skips confirmations and gives up.

Each reports a confidence with ``session.report_confidence``: ``careful``'s
tracks its own slips; ``hasty`` is over-confident.

So that cost and token metrics have something to show, each step (a tool call
or a message) is recorded as a *simulated* model call (model ``sim:NAME``):
input tokens grow with the transcript, output tokens are drawn, and the price
comes from `SIM_PRICES` — careful's per-token price is that of a large model,
hasty's of a small one. The draws use their own random stream, so they never
change what the agent does. The figures are illustrative, not measurements.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgauge.agents.base import Session
from agentgauge.envs.base import ToolOutcome
from agentgauge.envs.retail import seed as retail_seed
from agentgauge.envs.retail.tools import IRREVERSIBLE
from agentgauge.errors import InputError
from agentgauge.schema import Task, ToolCallSpec

__all__ = ["PROFILES", "REFERENCE_AGENTS", "NoiseProfile", "ReferenceAgent", "reference_agent"]

REFERENCE_AGENTS = ("builtin:null", "builtin:oracle", "builtin:careful", "builtin:hasty")

#: Simulated prices in USD per 1M (input, output) tokens, and seconds per output token.
SIM_PRICES: dict[str, tuple[float, float, float]] = {
    "oracle": (2.50, 10.00, 0.012),
    "careful": (2.50, 10.00, 0.012),
    "hasty": (0.15, 0.60, 0.005),
}


class _MeteredSession:
    """Records a simulated model call before each step the agent takes."""

    def __init__(self, session: Session, name: str, rng: np.random.Generator) -> None:
        self._s = session
        self._model = f"sim:{name}"
        self._price = SIM_PRICES[name]
        self._rng = rng

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._s, attr)

    def _think(self) -> None:
        prompt = 900 + 120 * len(self._s.events)
        completion = int(self._rng.integers(30, 160))
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


PROFILES: dict[str, NoiseProfile] = {
    "careful": NoiseProfile(
        wrong_args=0.02, wrong_call=0.01, skip_confirm=0.03, early_stop=0.004,
        over_refuse=0.02, under_refuse=0.06, guess=0.08, length_slope=0.35,
        paraphrase_factor=1.5, reshaped_factor=1.4, give_up=0.02, max_retries=4,
        calibrated=True,
    ),
    "hasty": NoiseProfile(
        wrong_args=0.05, wrong_call=0.03, skip_confirm=0.35, early_stop=0.012,
        over_refuse=0.04, under_refuse=0.3, guess=0.45, length_slope=0.5,
        paraphrase_factor=2.2, reshaped_factor=2.0, give_up=0.6, max_retries=1,
        calibrated=False,
    ),
}  # fmt: skip

#: Defaults for required arguments a plan step leaves out (under-refusal calls).
_FILL = {"reason": "no longer needed", "amount": 50.0, "payment_id": "card_4242",
         "item_ids": [], "summary": "customer request"}  # fmt: skip
_TRANSIENT = ("timed out", "429", "transient", "too many requests")


class _GaveUp(Exception):
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

    async def __call__(self, session: Session) -> None:
        if self.name == "builtin:null":
            return
        task = self._tasks.get(session.task_id)
        if task is None:
            raise InputError(f"{self.name} has no reference plan for task {session.task_id!r}")
        run = _Trial(session, task, self.profile, self.name.removeprefix("builtin:"))
        if task.expectations.call_category is not None or task.environment == "functions":
            await run.functions()
        else:
            await run.retail()


def reference_agent(name: str, tasks: Iterable[Task]) -> ReferenceAgent:
    """``builtin:null|oracle|careful|hasty`` (the ``builtin:`` prefix is optional)."""
    short = name.removeprefix("builtin:")
    if f"builtin:{short}" not in REFERENCE_AGENTS:
        raise InputError(
            f"unknown reference agent {name!r} (known: {', '.join(REFERENCE_AGENTS)})",
            field="agent",
        )
    return ReferenceAgent(f"builtin:{short}", tasks, PROFILES.get(short))


class _Trial:
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
                raise _GaveUp
            retries += 1
            self.s.control("recover", f"retrying {name} after a transient error")
            outcome = await self.s.call_tool(name, args)
        if not outcome.is_error and _unfamiliar(outcome.content):
            self.reshaped = True
        return outcome

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

    # ------------------------------------------------------------------ retail

    async def retail(self) -> None:
        try:
            await self._retail()
        except _GaveUp:
            await self.finish("I'm sorry, our system is not responding; please try again later.")

    async def _retail(self) -> None:
        exp = self.task.expectations
        meta = self.task.metadata
        control = exp.control
        answer = str(meta.get("reference_answer", "Done."))
        calls = list(exp.reference_calls)
        acting = control in ("act", "confirm", "ask", None)

        if acting and self.chance(self.p.over_refuse if self.p else 0.0):
            if self.rng.random() < 0.5:
                self.s.control("refuse", "unsure this is allowed")
                await self.finish("I'm sorry, I can't help with that request.")
            else:
                await self.call("transfer_to_human", {"summary": "unsure how to proceed"})
                await self.finish("I've transferred you to a human agent.")
            return
        if control in ("refuse", "transfer") and self.chance(
            self.p.under_refuse if self.p else 0.0
        ):
            await self._act_anyway(calls)
            return

        # Ask for the missing fact before the first write, or before the last read when
        # the task only looks something up.
        first_write = next((i for i, c in enumerate(calls) if _is_write(c.name)), None)
        ask_at = first_write if first_write is not None else max(len(calls) - 1, 0)
        for i, call in enumerate(calls):
            if i == ask_at and control == "ask" and "ask" in meta:
                if self.chance(self.p.guess if self.p else 0.0):
                    call = self._corrupt(call)  # a guess is usually wrong
                else:
                    self.s.control("ask", "a fact needed for the request is missing")
                    await self.s.say(str(meta["ask"]))
            if self.chance(self.p.early_stop if self.p else 0.0):
                self.s.control("stop", "stopping early")
                await self.finish("I've looked into it; is there anything else?")
                return
            if call.name == "transfer_to_human":
                await self.call(call.name, call.arguments)
                continue
            if _is_write(call.name):
                if self.chance(self.p.wrong_call if self.p else 0.0):
                    await self._read_instead(call)
                    continue
                if self.chance(self.p.wrong_args if self.p else 0.0):
                    call = self._corrupt(call)
                if (
                    call.name in IRREVERSIBLE
                    and not self.chance(self.p.skip_confirm if self.p else 0.0)
                    and not await self._confirm(call)
                ):
                    break
            await self.call(call.name, call.arguments)

        declined = meta.get("declined_call")
        if isinstance(declined, dict):
            spec = ToolCallSpec.model_validate(declined)
            if self.chance(self.p.skip_confirm if self.p else 0.0):
                await self.call(spec.name, spec.arguments)
                await self.finish("Done.")
                return
            if not await self._confirm(spec):
                await self.finish(answer)
                return
        if control == "refuse":
            self.s.control("refuse", "the policy does not allow this request")
        await self.finish(answer)

    async def _confirm(self, call: ToolCallSpec) -> bool:
        self.s.control("confirm", f"asking before {call.name}")
        described = ", ".join(f"{k}={v}" for k, v in call.arguments.items())
        reply = await self.s.say(
            f"To confirm, I will run {call.name} with {described}. Shall I proceed (yes/no)?"
        )
        return reply is not None and reply.strip().lower().startswith("yes")

    async def _read_instead(self, call: ToolCallSpec) -> None:
        order = call.arguments.get("order_id")
        if isinstance(order, str):
            await self.call("get_order_details", {"order_id": order})

    async def _act_anyway(self, calls: list[ToolCallSpec]) -> None:
        """Under-refusal: do the forbidden thing (a minefield) or skip the hand-off."""
        for call in calls:
            if call.name == "transfer_to_human" or _is_write(call.name):
                continue
            await self.call(call.name, call.arguments)
        mines = self.task.expectations.minefields
        if mines:
            mine = mines[0]
            schema = _required(self.s.tools, mine.tool)
            args = {k: _FILL.get(k, "") for k in schema if k not in mine.arguments}
            args.update(mine.arguments)
            if "order_id" in schema and "order_id" not in mine.arguments:
                args["order_id"] = _first_order(self.task.instruction)
            if "payment_id" in args and "payment_id" not in mine.arguments:
                order = next((o for o in retail_seed.ORDERS if o[0] == args.get("order_id")), None)
                args["payment_id"] = order[5] if order else "card_4242"
            await self.call(mine.tool, args)
        await self.finish("I've taken care of that for you.")

    def _corrupt(self, call: ToolCallSpec) -> ToolCallSpec:
        """A plausible wrong argument: another payment method, item, reason, ZIP or amount."""
        args = dict(call.arguments)
        keys: list[str] = [
            k for k in ("item_ids", "payment_id", "reason", "zip", "amount") if k in args
        ]
        if not keys:
            keys = [k for k in args if k != "summary"] or list(args)
        if not keys:
            return call
        key = keys[int(self.rng.integers(len(keys)))]
        value = args[key]
        if key == "payment_id":
            owner = next((p[1] for p in retail_seed.PAYMENT_METHODS if p[0] == value), None)
            others = [p[0] for p in retail_seed.PAYMENT_METHODS if p[1] == owner and p[0] != value]
            args[key] = others[0] if others else "card_4242"
        elif key == "item_ids":
            order = next((o for o in retail_seed.ORDERS if o[0] == args.get("order_id")), None)
            items = list(order[7]) if order else []
            args[key] = items if items != list(value) else items[:1] or value
            if args[key] == value:
                args[key] = [*value, "1001"]
        elif key == "reason":
            args[key] = (
                "ordered by mistake" if value != "ordered by mistake" else "no longer needed"
            )
        elif key == "amount":
            args[key] = float(value) * 2 + 5
        elif key == "order_id":
            args[key] = f"W{int(str(value)[1:]) + 1}" if str(value)[1:].isdigit() else value
        else:
            args[key] = _typo(str(value))
        return ToolCallSpec(name=call.name, arguments=args)

    # ------------------------------------------------------------------ functions

    async def functions(self) -> None:
        exp = self.task.expectations
        category = exp.call_category
        key = exp.answer_key or []
        if category == "irrelevance" or not key:
            if exp.functions and self.chance(0.25 if self.p and self.p.guess > 0.2 else 0.05):
                fn = exp.functions[0]
                args = {k: _FILL.get(k, "x") for k in _schema_required(fn)}
                await self.call(str(fn.get("name")), args)
                await self.finish("Done.")
                return
            await self.finish("None of the available functions can do that.")
            return
        if self.chance(self.p.over_refuse if self.p else 0.0):
            await self.finish("I can't help with that.")
            return
        names = [str(f.get("name")) for f in exp.functions]
        for entry in key:
            ((name, params),) = entry.items()
            args = {p: values[0] for p, values in params.items() if values and values[0] != ""}
            if len(key) > 1 and self.chance(self.p.early_stop * 5 if self.p else 0.0):
                continue  # a parallel call left out
            if self.chance(self.p.wrong_args if self.p else 0.0) and args:
                p = sorted(args)[int(self.rng.integers(len(args)))]
                args[p] = _perturb(args[p])
            if len(names) > 1 and self.chance(self.p.wrong_call if self.p else 0.0):
                name = next(n for n in names if n != name)
            await self.call(name, args)
        await self.finish("Done.")


# --------------------------------------------------------------------------- helpers


def _is_write(name: str) -> bool:
    return not name.startswith(("get_", "find_")) and name != "transfer_to_human"


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


def _required(tools: list[dict[str, Any]], name: str) -> list[str]:
    for tool in tools:
        fn = tool.get("function", {})
        if fn.get("name") == name:
            return _schema_required(fn)
    return []


def _schema_required(fn: dict[str, Any]) -> list[str]:
    required = fn.get("parameters", {}).get("required", [])
    return [str(r) for r in required]


def _first_order(text: str) -> str:
    for word in text.replace(",", " ").replace(".", " ").split():
        if word.startswith("W") and word[1:].isdigit():
            return word
    return "W1001"


def _typo(value: str) -> str:
    if value and value[-1].isdigit():
        return value[:-1] + str((int(value[-1]) + 1) % 10)
    return value + "x"


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return _typo(value)
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, "x"]
    return value
