"""Metrics that need transcripts and grades, not just outcomes.

The outcome engine (`agentgauge.metrics.engine`) reads only columns. What an
agent *did* — its tool calls and control decisions (docs/graders.md, "Metrics
from the graders") and how consistently and robustly it behaved (Rabanser et
al. 2026) — needs each trial's transcript and grades, which it reads as the
facts derived from them once (`agentgauge.facts`), columns beside the trials'
`TrialTable`. This module gathers those per metrics group and per configuration:

- ``tool_use``, ``control`` and ``recovery`` (from tool errors, HAL) per group
  (same grouping as the outcome table);
- ``turns`` per group: the pass rate per user turn (`agentgauge.metrics.turns`);
- ``reliability`` per configuration (agent, model), across its variants,
  because robustness compares a configuration's base trials with its
  perturbed ones.

Each takes either validated trials or a table and its facts (a store's or a
Parquet file's columns); the trials are turned into the latter first, so every
source is measured by the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.facts import ABSENT, FAILED, Facts, decoded
from agentgauge.metrics.control import control_metrics
from agentgauge.metrics.recovery import recovery_metrics
from agentgauge.metrics.reliability import Reliability, reliability
from agentgauge.metrics.toolcalls import toolcall_metrics_from_facts
from agentgauge.metrics.turns import NO_CHECKPOINTS, turns_from_facts
from agentgauge.schema import Trial
from agentgauge.table import TrialTable

__all__ = [
    "behaviour_by_group",
    "behaviour_columns",
    "reliability_by_configuration",
    "reliability_of_configuration",
]

IntpArray = npt.NDArray[np.intp]
#: The errors by type of a trial without any (one object, shared).
_NO_ERRORS: dict[str, int] = {}


def behaviour_columns(trials: Sequence[Trial]) -> tuple[TrialTable, Facts]:
    """The table and the facts of validated trials (what the functions below read)."""
    return TrialTable.from_trials(trials), Facts.from_trials(trials)


def _columns(
    trials: Sequence[Trial] | tuple[TrialTable, Facts],
) -> tuple[TrialTable, Facts]:
    if isinstance(trials, tuple):
        return trials
    return behaviour_columns(trials)


def _control(table: TrialTable, facts: Facts) -> dict[str, Any] | None:
    graded = np.flatnonzero(table.expected_control != None)  # noqa: E711 (elementwise)
    if not graded.size:
        return None
    irr = facts["ctl_irreversible"][graded]
    unc = facts["ctl_unconfirmed"][graded]
    # Missed confirmations need both counts of every trial; a missing one is not 0.
    have_counts = not (np.isnan(irr).any() or np.isnan(unc).any())
    return control_metrics(
        table.expected_control[graded],
        table.control[graded],
        irreversible=irr.astype(np.int64) if have_counts else None,
        unconfirmed=unc.astype(np.int64) if have_counts else None,
    )


def _recovery(table: TrialTable, facts: Facts) -> tuple[dict[str, Any] | None, str | None]:
    """The recovery section, or ``None`` and why."""
    # A trial without a transcript may have had errors nobody recorded: it is left out,
    # not counted as error-free.
    seen = np.flatnonzero(facts["has_events"])
    if not seen.size:
        return None, "no trial has a transcript"
    if not (facts["tool_results"][seen] > 0).any():
        # Tools that never ran cannot have failed: "0% with an error" would say they did.
        return None, "no transcript has a tool result"
    types = facts["error_types"][seen]
    section = recovery_metrics(
        table.task_id[seen],
        table.success[seen] & ~table.infra_error[seen],
        facts["tool_errors"][seen] > 0,
        facts["recovered"][seen],
        [_NO_ERRORS if t is None else t for t in decoded(types)],
    )
    section["n_without_transcript"] = len(table) - int(seen.size)
    return section, None


def _group_rows(table: TrialTable, by: Sequence[str]) -> list[tuple[tuple[Any, ...], IntpArray]]:
    """The rows of each group of ``by``, groups in order of first appearance."""
    if not by:
        return [((), np.arange(len(table), dtype=np.intp))]
    coded = [table.codes(key) for key in by]
    key = np.zeros(len(table), dtype=np.int64)
    for uniques, codes in coded:
        key = key * max(len(uniques), 1) + codes
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rows_of = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(first)))
    starts = np.concatenate(([0], bounds[:-1]))
    out = []
    for g in order:
        rows = rows_of[starts[g] : bounds[g]].astype(np.intp)
        i = int(rows[0])
        out.append((tuple(uniques[codes[i]] for uniques, codes in coded), rows))
    return out


def _kept(table: TrialTable, facts: Facts, exclude_infra_errors: bool) -> tuple[TrialTable, Facts]:
    if not exclude_infra_errors or not table.infra_error.any():
        return table, facts
    keep = ~table.infra_error
    return table.take(keep), facts.take(keep)


def behaviour_by_group(
    trials: Sequence[Trial] | tuple[TrialTable, Facts],
    by: Sequence[str],
    *,
    exclude_infra_errors: bool = False,
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """``{group labels: {"tool_use": ..., "control": ..., "recovery": ..., "turns": ...,
    "null_reasons": ...}}`` for each group in ``by``.

    Labels are the values of ``by`` in order, as the outcome engine groups.
    A section is ``None`` when no trial of the group carries what it needs, and
    ``null_reasons`` says why.
    """
    table, facts = _kept(*_columns(trials), exclude_infra_errors)
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for key, rows in _group_rows(table, by):
        sub, f = table.take(rows), facts.take(rows)
        tool_use = toolcall_metrics_from_facts(sub, f)
        control = _control(sub, f)
        recovery, no_recovery = _recovery(sub, f)
        reasons = {}
        if tool_use is None:
            reasons["tool_use"] = "no trial has tool-call, trajectory or minefield grades"
        if control is None:
            reasons["control"] = "no trial names the control decision it expects"
        if no_recovery is not None:
            reasons["recovery"] = no_recovery
        elif recovery is not None:
            reasons.update({f"recovery.{k}": v for k, v in recovery["null_reasons"].items()})
        turns = turns_from_facts(sub.task_id, f)
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


def reliability_of_configuration(
    table: TrialTable, facts: Facts, *, n_boot: int = 1000, seed: int = 0
) -> Reliability:
    """`reliability` of one configuration's rows: its table, action sequences and
    minefield verdicts. Safety counts only the trials graded for minefields: a trial
    nobody checked is not a compliant one."""
    state = facts["mine_state"]
    graded = state != ABSENT
    violation = state == FAILED
    # A violation's severity: the grade's max_severity, else its worst hit's, else 1.0.
    severity = np.where(
        violation,
        np.where(
            np.isnan(facts["mine_max_severity"]),
            np.where(np.isnan(facts["mine_hit_severity"]), 1.0, facts["mine_hit_severity"]),
            facts["mine_max_severity"],
        ),
        np.nan,
    )
    return reliability(
        table,
        _actions(facts),
        violation=violation if graded.any() else None,
        severity=severity,
        graded=graded,
        n_boot=n_boot,
        seed=seed,
    )


def _actions(facts: Facts) -> list[tuple[str, ...] | None]:
    return decoded(facts["actions"])


def reliability_by_configuration(
    trials: Sequence[Trial] | tuple[TrialTable, Facts],
    *,
    exclude_infra_errors: bool = False,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Reliability (Rabanser et al. 2026) per (agent, model), over all its variants."""
    table, facts = _kept(*_columns(trials), exclude_infra_errors)
    out = []
    for (agent, model), rows in _group_rows(table, ("agent", "model")):
        rel = reliability_of_configuration(table.take(rows), facts.take(rows), seed=seed)
        out.append({"agent": agent, "model": model, **rel.to_dict()})
    return out
