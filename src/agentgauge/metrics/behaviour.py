"""Metrics that need transcripts and grades, not just outcomes.

The outcome engine (`agentgauge.metrics.engine`) reads only columns. What an
agent *did* — its tool calls and control decisions (docs/graders.md, "Metrics
from the graders") and how consistently and robustly it behaved (Rabanser et
al. 2026) — needs each trial's events and grades. This module gathers those per
metrics group and per configuration:

- ``tool_use``, ``control`` and ``recovery`` (from tool errors, HAL) per group
  (same grouping as the outcome table);
- ``turns`` per group: the pass rate per user turn (`agentgauge.metrics.turns`);
- ``reliability`` per configuration (agent, model), across its variants,
  because robustness compares a configuration's base trials with its
  perturbed ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agentgauge.metrics.control import control_metrics
from agentgauge.metrics.recovery import recovery_metrics, trial_recovery
from agentgauge.metrics.reliability import reliability_from_trials
from agentgauge.metrics.toolcalls import toolcall_metrics
from agentgauge.metrics.turns import NO_CHECKPOINTS, turns_from_trials
from agentgauge.schema import MessageEvent, Trial

__all__ = ["behaviour_by_group", "reliability_by_configuration"]

_TOOL_GRADERS = frozenset({"tool_calls", "trajectory", "milestones", "minefields"})


def _turns(trial: Trial) -> float:
    """Assistant turns in the transcript; NaN (unknown) for a trial without one."""
    if not trial.events:
        return float("nan")
    return sum(1 for e in trial.events if isinstance(e, MessageEvent) and e.role == "assistant")


def _control_counts(trial: Trial) -> tuple[int | None, int | None]:
    for g in trial.grades:
        if g.grader == "control" and isinstance(g.evidence, dict):
            irr = g.evidence.get("irreversible_calls")
            unc = g.evidence.get("unconfirmed_irreversible")
            return (
                None if irr is None else int(irr),
                None if unc is None else int(unc),
            )
    return None, None


def _tool_use(trials: Sequence[Trial]) -> dict[str, Any] | None:
    if not any(g.grader in _TOOL_GRADERS for t in trials for g in t.grades):
        return None
    return toolcall_metrics(
        [t.grades for t in trials],
        task_ids=[t.task_id for t in trials],
        # An unrecorded count is unknown (NaN, left out of the mean), not zero calls.
        tool_calls=np.array([np.nan if t.tool_calls is None else t.tool_calls for t in trials]),
        turns=np.array([_turns(t) for t in trials], dtype=float),
    )


def _control(trials: Sequence[Trial]) -> dict[str, Any] | None:
    graded = [t for t in trials if t.expected_control is not None]
    if not graded:
        return None
    counts = [_control_counts(t) for t in graded]
    # Missed confirmations need both counts of every trial; a missing one is not 0.
    irreversible = [irr for irr, _ in counts if irr is not None]
    unconfirmed = [unc for _, unc in counts if unc is not None]
    have_counts = len(irreversible) == len(unconfirmed) == len(counts)
    return control_metrics(
        [t.expected_control for t in graded],
        [t.control for t in graded],
        irreversible=irreversible if have_counts else None,
        unconfirmed=unconfirmed if have_counts else None,
    )


def _recovery(trials: Sequence[Trial]) -> tuple[dict[str, Any] | None, str | None]:
    """The recovery section, or ``None`` and why."""
    # A trial without a transcript may have had errors nobody recorded: it is left out,
    # not counted as error-free.
    seen = [t for t in trials if t.events]
    if not seen:
        return None, "no trial has a transcript"
    facts = [trial_recovery(t.events) for t in seen]
    if not any(f.n_results for f in facts):
        # Tools that never ran cannot have failed: "0% with an error" would say they did.
        return None, "no transcript has a tool result"
    section = recovery_metrics(
        [t.task_id for t in seen],
        [bool(t.success) and not t.is_infra_error for t in seen],
        [f.n_errors > 0 for f in facts],
        [f.recovered for f in facts],
        [f.error_types for f in facts],
    )
    section["n_without_transcript"] = len(trials) - len(seen)
    return section, None


def _keep(trials: Sequence[Trial], exclude_infra_errors: bool) -> list[Trial]:
    return [t for t in trials if not (exclude_infra_errors and t.is_infra_error)]


def behaviour_by_group(
    trials: Sequence[Trial], by: Sequence[str], *, exclude_infra_errors: bool = False
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """``{group labels: {"tool_use": ..., "control": ..., "recovery": ..., "turns": ...,
    "null_reasons": ...}}`` for each group in ``by``.

    Labels are the values of ``by`` in order, as the outcome engine groups.
    A section is ``None`` when no trial of the group carries what it needs, and
    ``null_reasons`` says why.
    """
    groups: dict[tuple[Any, ...], list[Trial]] = {}
    for t in _keep(trials, exclude_infra_errors):
        groups.setdefault(tuple(getattr(t, key) for key in by), []).append(t)
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for key, members in groups.items():
        tool_use, control = _tool_use(members), _control(members)
        recovery, no_recovery = _recovery(members)
        reasons = {}
        if tool_use is None:
            reasons["tool_use"] = "no trial has tool-call, trajectory or minefield grades"
        if control is None:
            reasons["control"] = "no trial names the control decision it expects"
        if no_recovery is not None:
            reasons["recovery"] = no_recovery
        elif recovery is not None:
            reasons.update({f"recovery.{k}": v for k, v in recovery["null_reasons"].items()})
        turns = turns_from_trials(members)
        if turns is None:
            reasons["turns"] = NO_CHECKPOINTS
        out[key] = {
            "tool_use": tool_use,
            "control": control,
            "recovery": recovery,
            "turns": turns,
            "null_reasons": reasons,
        }
    return out


def reliability_by_configuration(
    trials: Sequence[Trial], *, exclude_infra_errors: bool = False, seed: int = 0
) -> list[dict[str, Any]]:
    """Reliability (Rabanser et al. 2026) per (agent, model), over all its variants."""
    configs: dict[tuple[str | None, str | None], list[Trial]] = {}
    for t in _keep(trials, exclude_infra_errors):
        configs.setdefault((t.agent, t.model), []).append(t)
    return [
        {"agent": agent, "model": model, **reliability_from_trials(members, seed=seed).to_dict()}
        for (agent, model), members in configs.items()
    ]
