"""Variants of a trial's environment, and `make_env`, the one factory the harness calls.

A variant names what was changed for a trial:

- ``base``: the task as written;
- ``paraphrase:N``: the user's first message is the task's N-th paraphrase (1-based),
  for prompt robustness;
- ``fault:KIND`` or ``fault:KIND@RATE``: each tool call fails with probability RATE
  (default 0.2) with an injected ``tool_error``, ``timeout`` or ``rate_limit``
  result; the call is not executed, so retrying is the right recovery (fault
  robustness, ReliabilityBench-style fault injection);
- ``env:KIND``: tool results keep their meaning but change shape — ``rename_keys``
  (snake_case keys become camelCase), ``wrap`` (results inside ``{"data": ...,
  "status": "ok"}``), ``reorder`` (keys in reverse order) — for environment
  robustness (Rabanser et al. 2026, structural perturbations).

Injected faults come from a generator seeded by the trial's seed alone, so the
same (task, variant, seed) sees the same faults at the same calls.

Faults and perturbations wrap a world's tool calls and need nothing else from it, so
they apply to any environment: `with_variants` gives them to a factory of one's own
(the harness does, for every factory that does not say it applies variants itself,
``applies_variants = True``, as `make_env` does). It gives such a world the
paraphrases too (`ParaphrasedEnv`): a world that opens with the task's instruction, or
holds it in its opening message, opens with the paraphrase instead. One whose opening
is its own, holding neither, cannot be given it: `paraphrase_refusal` says so before a
run starts, and the harness refuses the variant rather than run the instruction under
the paraphrase's name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgauge.envs.base import (
    EnvFactory,
    Environment,
    ToolOutcome,
    TurnTaking,
    opening_message,
    user_turns,
)
from agentgauge.envs.builtin import BUILTIN_ENVIRONMENTS, builtin_environment
from agentgauge.errors import InputError
from agentgauge.report.formats import counted
from agentgauge.schema import Task
from agentgauge.textio import is_digits

__all__ = [
    "DEFAULT_FAULT_RATE",
    "ENV_KINDS",
    "FAULT_KINDS",
    "VARIANT_KINDS",
    "FaultyEnv",
    "ParaphraseNotApplied",
    "ParaphrasedEnv",
    "PerturbedEnv",
    "Variant",
    "applied_kinds",
    "apply_variant",
    "make_env",
    "paraphrase_refusal",
    "parse_variant",
    "with_variants",
]

FAULT_KINDS = ("tool_error", "timeout", "rate_limit")
ENV_KINDS = ("rename_keys", "wrap", "reorder")
DEFAULT_FAULT_RATE = 0.2
#: The kinds of variant besides ``base``, as a factory's ``applies_variants`` names them.
VARIANT_KINDS = ("paraphrase", "fault", "env")

_FAULT_TEXT = {
    "tool_error": "Error: internal error in {name} (transient); no changes were made. Retry.",
    "timeout": "Error: {name} timed out after 30 s; no changes were made.",
    "rate_limit": "Error: 429 Too Many Requests for {name}; retry after 1 s.",
}


@dataclass(frozen=True)
class Variant:
    """A parsed variant string."""

    kind: str
    """``base``, ``paraphrase``, ``fault`` or ``env``."""
    detail: str | None = None
    """Paraphrase number, fault kind or perturbation kind."""
    rate: float | None = None
    """Fault rate, for ``fault`` variants."""


def parse_variant(variant: str) -> Variant:
    """Parse ``base``, ``paraphrase:N``, ``fault:KIND[@RATE]`` or ``env:KIND``.

    Raises `InputError` (field ``variant``) for anything else.
    """
    if variant == "base":
        return Variant("base")
    kind, _, detail = variant.partition(":")
    if kind == "paraphrase" and is_digits(detail) and int(detail) >= 1:
        return Variant("paraphrase", detail)
    if kind == "fault":
        name, _, rate_text = detail.partition("@")
        if name in FAULT_KINDS:
            try:
                rate = float(rate_text) if rate_text else DEFAULT_FAULT_RATE
            except ValueError:
                rate = -1.0
            if 0.0 <= rate <= 1.0:
                return Variant("fault", name, rate)
            raise InputError(f"fault rate must be a number in [0, 1], got {rate_text!r}",
                             field="variant")  # fmt: skip
    if kind == "env" and detail in ENV_KINDS:
        return Variant("env", detail)
    raise InputError(
        f"unknown variant {variant!r}; expected base, paraphrase:N, "
        f"fault:{{{'|'.join(FAULT_KINDS)}}}[@RATE] or env:{{{'|'.join(ENV_KINDS)}}}",
        field="variant",
    )


def make_env(task: Task, variant: str = "base", seed: int = 0) -> Environment:
    """A fresh environment for one trial of ``task`` under ``variant``.

    The world is the task's built-in environment (`agentgauge.envs.builtin`).
    Raises `InputError` for an unknown environment or variant, or a paraphrase
    the task does not have.
    """
    parsed = parse_variant(variant)
    paraphrase = int(parsed.detail) if parsed.kind == "paraphrase" and parsed.detail else None
    if paraphrase is not None and paraphrase > len(task.paraphrases):
        raise InputError(
            f"task {task.id!r} has {counted(len(task.paraphrases), 'paraphrase')}; "
            f"{variant!r} does not exist",
            field="variant",
        )
    world = builtin_environment(task)
    if world is None:
        raise InputError(
            f"task {task.id!r}: unknown environment {task.environment!r} "
            f"(built in: {', '.join(BUILTIN_ENVIRONMENTS)})",
            field="environment",
        )
    return apply_variant(world.make(task, seed, paraphrase), variant, seed)


#: `make_env` applies the fault and perturbation variants itself (`with_variants`).
make_env.applies_variants = True  # type: ignore[attr-defined]


def apply_variant(env: Environment, variant: str, seed: int) -> Environment:
    """``env`` under ``variant``'s faults (`FaultyEnv`) or perturbation (`PerturbedEnv`);
    unchanged for ``base`` and ``paraphrase:N`` (the world's own first message)."""
    parsed = parse_variant(variant)
    if parsed.kind == "fault":
        assert parsed.detail is not None and parsed.rate is not None
        return FaultyEnv(env, kind=parsed.detail, rate=parsed.rate, seed=seed)
    if parsed.kind == "env":
        assert parsed.detail is not None
        return PerturbedEnv(env, kind=parsed.detail)
    return env


def applied_kinds(factory: Any) -> frozenset[str]:
    """The kinds of variant ``factory`` applies itself, by its ``applies_variants``:
    ``True`` for all of them (`VARIANT_KINDS`), or some of them by name
    (``{"paraphrase"}``, ``("fault", "env")``, or one name); absent or false for none.

    Raises `InputError` (field ``environment``) for a kind that is not one of them, so
    a misspelt declaration fails before a trial instead of wrapping a world twice."""
    declared = getattr(factory, "applies_variants", False)
    if declared is True:
        return frozenset(VARIANT_KINDS)
    if not declared:
        return frozenset()
    if isinstance(declared, str):
        declared = [declared]
    kinds = frozenset(declared) if isinstance(declared, Iterable) else frozenset([declared])
    unknown = sorted(repr(kind) for kind in kinds if kind not in VARIANT_KINDS)
    if unknown:
        raise InputError(
            f"applies_variants holds {', '.join(unknown)}, not a kind of variant: give "
            f"True, or some of {', '.join(map(repr, VARIANT_KINDS))}",
            field="environment",
        )
    return kinds


def with_variants(factory: EnvFactory) -> EnvFactory:
    """``factory`` whose environments get the variants it does not apply itself
    (`applied_kinds`): ``paraphrase:N`` (`ParaphrasedEnv`: the opening message is the
    paraphrase), ``fault:KIND`` and ``env:KIND`` (`apply_variant`). A world of one's own
    used to run them unchanged: a fault variant reported perfect robustness, and a
    paraphrase trial was a base trial under the paraphrase's name. The factory still
    receives the variant. One that applies every variant itself says so with
    ``factory.applies_variants = True`` and is returned as it is."""
    applied = applied_kinds(factory)
    if applied == frozenset(VARIANT_KINDS):
        return factory

    def make(task: Task, *, variant: str, seed: int) -> Environment:
        parsed = parse_variant(variant)
        env = factory(task, variant=variant, seed=seed)
        if parsed.kind in applied:
            return env
        if parsed.kind == "paraphrase":
            assert parsed.detail is not None
            return ParaphrasedEnv(env, task, int(parsed.detail))
        return apply_variant(env, variant, seed)

    wrapped: Callable[..., Environment] = make
    wrapped.applies_variants = True  # type: ignore[attr-defined]
    # What the harness reads of a factory before the first trial (its scenario keys).
    wrapped.scenario = getattr(factory, "scenario", None)  # type: ignore[attr-defined]
    return make


def paraphrase_refusal(factory: EnvFactory, task: Task, variant: str, seed: int) -> str | None:
    """Why ``factory`` (one `with_variants` wrapped) cannot give ``task`` the paraphrase
    ``variant``, or ``None`` when it can or cannot be told.

    Builds one environment and reads its opening message (`ParaphrasedEnv`), before
    any trial. A factory or an opening message that fails is left to the trials, which
    record it as the environment's error."""
    try:
        env = factory(task, variant=variant, seed=seed)
    except Exception:
        return None
    try:
        if isinstance(env, ParaphrasedEnv):
            env.first_message()
    except ParaphraseNotApplied as exc:
        return str(exc)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            env.close()
    return None


class _Wrapper:
    """Delegates everything but `call_tool` to the wrapped environment."""

    def __init__(self, inner: Environment) -> None:
        self.inner = inner

    @property
    def policy(self) -> str:
        return self.inner.policy

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.inner.tools

    def first_message(self) -> str:
        return self.inner.first_message()

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        return self.inner.call_tool(name, arguments)

    def user_reply(self, message: str) -> str | None:
        return self.inner.user_reply(message)

    def final_state(self) -> dict[str, Any]:
        return self.inner.final_state()

    def close(self) -> None:
        self.inner.close()

    @property
    def user_turns(self) -> int:
        return user_turns(self.inner)

    @property
    def user_turn(self) -> int:
        return self.inner.user_turn if isinstance(self.inner, TurnTaking) else 1


class ParaphraseNotApplied(ValueError):
    """A world's opening message holds neither the task's instruction nor the
    paraphrase, so the paraphrase cannot be put in it (`ParaphrasedEnv`)."""


class ParaphrasedEnv(_Wrapper):
    """A world of one's own under ``paraphrase:N``: its opening message is the task's
    N-th paraphrase (1-based), as in the built-in worlds.

    The world's own opening message decides how: the paraphrase, or a message that
    holds it, is kept (the world applied the variant); the task's instruction becomes
    the paraphrase; a message that holds the instruction (``"Hi, I'm Ana. " +
    instruction``) has it replaced by the paraphrase. Any other opening is the world's
    own, which the paraphrase cannot be put in: `ParaphraseNotApplied`. The simulated
    user's replies and follow-ups are the world's, unchanged, as in the built-in worlds,
    where a paraphrase rewords the opening message only."""

    def __init__(self, inner: Environment, task: Task, paraphrase: int) -> None:
        super().__init__(inner)
        self.instruction = task.instruction
        self.paraphrase = opening_message(task, paraphrase)
        self.number = paraphrase
        self.task_id = task.id
        self._first: str | None = None

    def first_message(self) -> str:
        if self._first is None:
            self._first = self._paraphrased(self.inner.first_message())
        return self._first

    def _paraphrased(self, opening: str) -> str:
        paraphrase, instruction = self.paraphrase, self.instruction
        if not isinstance(opening, str) or opening.strip() == paraphrase.strip():
            return opening  # not text: the session refuses it, as from any world
        if opening.strip() == instruction.strip():
            return paraphrase
        holds_paraphrase = bool(paraphrase.strip()) and paraphrase in opening
        # A paraphrase that is a piece of the instruction shows nothing while the
        # instruction is there too.
        if holds_paraphrase and paraphrase not in instruction:
            return opening
        if instruction.strip() and instruction in opening:
            return opening.replace(instruction, paraphrase)
        if holds_paraphrase:
            return opening
        shown = opening if len(opening) <= 80 else opening[:77] + "..."
        raise ParaphraseNotApplied(
            f"task {self.task_id!r}: the environment opens with {shown!r}, which holds "
            f"neither the task's instruction nor its paraphrase {self.number}, so the "
            "paraphrase cannot be put in it"
        )


class FaultyEnv(_Wrapper):
    """Each tool call fails with probability ``rate`` before reaching the world."""

    def __init__(self, inner: Environment, *, kind: str, rate: float, seed: int) -> None:
        super().__init__(inner)
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}")
        self.kind = kind
        self.rate = rate
        # Its own stream: the agent's session rng is default_rng(seed), the user's [seed, 2].
        self._rng = np.random.default_rng([seed, 0xFA])
        self.injected = 0
        """How many faults this environment has injected."""
        self.calls = 0
        """How many tool calls it has seen."""

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.calls += 1
        if self._rng.random() < self.rate:
            self.injected += 1
            return ToolOutcome(content=_FAULT_TEXT[self.kind].format(name=name), is_error=True)
        return self.inner.call_tool(name, arguments)


class PerturbedEnv(_Wrapper):
    """Tool results change shape (not meaning): renamed keys, wrapped, or reordered."""

    def __init__(self, inner: Environment, *, kind: str) -> None:
        super().__init__(inner)
        if kind not in ENV_KINDS:
            raise ValueError(f"unknown perturbation {kind!r}")
        self.kind = kind

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        outcome = self.inner.call_tool(name, arguments)
        if outcome.is_error:
            return outcome
        content = outcome.content
        if self.kind == "rename_keys":
            content = _map_keys(content, _camel)
        elif self.kind == "reorder":
            content = _reverse(content)
        else:
            content = {"data": content, "status": "ok"}
        return ToolOutcome(content=content, is_error=False, irreversible=outcome.irreversible)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _map_keys(value: Any, rename: Any) -> Any:
    if isinstance(value, dict):
        return {rename(str(k)): _map_keys(v, rename) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_keys(v, rename) for v in value]
    return value


def _reverse(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reverse(v) for v in value]
    return value
