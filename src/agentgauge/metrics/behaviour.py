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

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.facts import FAILED, PASSED, UNKNOWN, Coded, Facts, recorded_control
from agentgauge.metrics.control import control_metrics
from agentgauge.metrics.recovery import recovery_metrics
from agentgauge.metrics.reliability import Reliability, reliability
from agentgauge.metrics.safety import violation_severity
from agentgauge.metrics.toolcalls import toolcall_metrics_from_facts
from agentgauge.metrics.turns import NO_CHECKPOINTS, checkpoint_turns_by_task, turns_from_facts
from agentgauge.schema import Trial
from agentgauge.table import TrialTable, group_codes, trial_order

__all__ = [
    "behaviour_and_reliability",
    "behaviour_by_group",
    "behaviour_columns",
    "reliability_by_configuration",
    "reliability_of_configuration",
]

IntpArray = npt.NDArray[np.intp]
#: The errors by type of a trial without any (one object, shared).
_NO_ERRORS: dict[str, int] = {}
#: What a configuration is: reliability compares its variants.
_CONFIGURATION = ("agent", "model")


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
    expected, expected_codes = table.codes("expected_control")
    named = np.array([v is not None for v in expected.tolist()], dtype=bool)
    graded = np.flatnonzero(named[expected_codes])
    if not graded.size:
        return None
    taken = _taken(table, facts, graded)
    # A trial without the control grade's counts (NaN) is left out of missed
    # confirmations, and counted: a missing count is not 0.
    return control_metrics(
        Coded(expected_codes[graded], expected.tolist()),
        taken,
        irreversible=facts["ctl_irreversible"][graded],
        unconfirmed=facts["ctl_unconfirmed"][graded],
    )


def _taken(table: TrialTable, facts: Facts, rows: IntpArray) -> Coded:
    """The decision each of ``rows`` took, as the control grader reads it first
    (`recorded_control`): the trial's ``control`` field, else its control events. Each
    distinct (field, events, expected) combination is read once."""
    field, field_codes = table.codes("control")
    events = facts.coded("control_decisions")
    expected, expected_codes = table.codes("expected_control")
    n_events, n_expected = max(len(events.values), 1), max(len(expected), 1)
    key = field_codes[rows].astype(np.int64) * n_events + events.codes[rows]
    key = key * n_expected + expected_codes[rows]
    combos, inverse = np.unique(key, return_inverse=True)
    values = []
    for k in combos.tolist():
        rest, e = divmod(k, n_expected)
        f, d = divmod(rest, n_events)
        values.append(recorded_control(field[f], events.values[d] or (), expected[e]))
    return Coded(inverse.reshape(-1).astype(np.intp), values)


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
    types = facts.coded("error_types").take(seen)
    uniques, codes = table.codes("task_id")
    section = recovery_metrics(
        table.task_id[seen],
        table.success[seen] & ~table.infra_error[seen],
        facts["tool_errors"][seen] > 0,
        facts["recovered"][seen],
        Coded(types.codes, [_NO_ERRORS if t is None else t for t in types.values]),
        task_codes=(uniques, codes[seen]),
    )
    section["n_without_transcript"] = len(table) - int(seen.size)
    return section, None


def _group_rows(table: TrialTable, by: Sequence[str]) -> list[tuple[tuple[Any, ...], IntpArray]]:
    """The rows of each group of ``by``, groups in label order (`group_codes`), each
    group's rows in trial order (`trial_order`): every figure below sums its rows in
    one order, so the same trials stored in another order give the same last digits."""
    everything = np.arange(len(table), dtype=np.intp)
    if not by:
        return [((), trial_order(table, everything))]
    group, first = group_codes(table, by)
    if first.size <= 1:
        if not len(table):  # every trial left out (all infra errors, excluded): no group
            return []
        labels = tuple(getattr(table, key)[0] for key in by)
        return [(labels, trial_order(table, everything))]
    if first.size <= 64:  # a pass per group beats sorting ten million rows
        parts = [np.flatnonzero(group == g) for g in range(first.size)]
    else:
        order = np.argsort(group, kind="stable")
        parts = np.split(order, np.cumsum(np.bincount(group, minlength=first.size))[:-1])
    return [
        (tuple(getattr(table, key)[int(i)] for key in by), trial_order(table, rows.astype(np.intp)))
        for i, rows in zip(first.tolist(), parts, strict=True)
    ]


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
    declared = checkpoint_turns_by_task(table.task_id, facts)
    return {
        key: _sections(sub, f, declared)
        for key, sub, f in _subsets(table, facts, _group_rows(table, by))
    }


def _subsets(
    table: TrialTable, facts: Facts, groups: list[tuple[tuple[Any, ...], IntpArray]]
) -> Iterator[tuple[tuple[Any, ...], TrialTable, Facts]]:
    """Each group's rows of the table and the facts, one group at a time (so that no
    more than one group's copy is held at once)."""
    for key, rows in groups:
        if len(rows) == len(table) and bool(np.all(rows == np.arange(len(rows)))):
            yield key, table, facts  # one group, in trial order: no copy (codes kept)
        else:
            yield key, table.take(rows), facts.take(rows)


def _sections(sub: TrialTable, f: Facts, declared: dict[Any, list[int]]) -> dict[str, Any]:
    """The behaviour sections of one group; ``declared``: the turns each task has
    checkpoints at, over every group (`checkpoint_turns_by_task`), so that a group whose
    trials of a task all ended in an error still counts them."""
    tool_use = toolcall_metrics_from_facts(sub, f)
    control = _control(sub, f)
    recovery, no_recovery = _recovery(sub, f)
    reasons = {}
    if tool_use is None:
        reasons["tool_use"] = "no trial has tool-call, trajectory or minefield grades"
    else:  # evidence left out (`agentgauge.evidence`): said under every table
        reasons.update({f"tool_use.{k}": v for k, v in tool_use["null_reasons"].items()})
    if control is None:
        reasons["control"] = "no trial names the control decision it expects"
    else:
        # Per-state precision and recall keep theirs in the section: a state no trial
        # took is common, and a line for each under every table would bury the rest.
        reasons.update(
            {
                f"control.{k}": v
                for k, v in control["null_reasons"].items()
                if not k.startswith("per_state.")
            }
        )
    if no_recovery is not None:
        reasons["recovery"] = no_recovery
    elif recovery is not None:
        reasons.update({f"recovery.{k}": v for k, v in recovery["null_reasons"].items()})
    turns = turns_from_facts(sub.task_id, f, declared)
    if turns is None:
        reasons["turns"] = NO_CHECKPOINTS
    elif turns["n_ungraded"]:
        n = turns["n_ungraded"]
        whose = "1 trial" if n == 1 else f"{n} trials"
        reasons["turns.n_ungraded"] = (
            f"{whose} of tasks with checkpoints ended in an error or a timeout without a "
            "checkpoints grade (no turn record, or stored before such trials were graded: "
            "agentgauge grade grades them): unknown at every checkpoint turn, not rated; "
            "each counts as a failure in the success rate"
        )
    if turns is not None and turns.get("n_left_out"):
        n = turns["n_left_out"]
        whose = "1 checkpoint names" if n == 1 else f"{n} checkpoints name"
        reasons["turns.per_turn"] = f"{whose} no user turn (below 1, or past 2^63): left out"
    return {
        "tool_use": tool_use,
        "control": control,
        "recovery": recovery,
        "turns": turns,
        "null_reasons": reasons,
    }


def behaviour_and_reliability(
    trials: Sequence[Trial] | tuple[TrialTable, Facts],
    by: Sequence[str],
    *,
    exclude_infra_errors: bool = False,
    seed: int = 0,
) -> tuple[dict[tuple[Any, ...], dict[str, Any]], list[dict[str, Any]]]:
    """`behaviour_by_group` and `reliability_by_configuration` together. When each
    configuration is one group (one variant per agent and model, or ``by`` grouping no
    finer), each group's rows are taken once for both."""
    table, facts = _kept(*_columns(trials), exclude_infra_errors)
    groups = _group_rows(table, by)
    configurations = _group_rows(table, _CONFIGURATION)
    declared = checkpoint_turns_by_task(table.task_id, facts)
    if not set(_CONFIGURATION) <= set(by) or len(groups) != len(configurations):
        return (
            behaviour_by_group((table, facts), by),
            reliability_by_configuration((table, facts), seed=seed),
        )
    # ``by`` refines the configurations and has as many groups: the same partition.
    behaviour: dict[tuple[Any, ...], dict[str, Any]] = {}
    reliability: list[dict[str, Any]] = []
    for (key, sub, f), (config, _) in zip(
        _subsets(table, facts, groups), configurations, strict=True
    ):
        behaviour[key] = _sections(sub, f, declared)
        rel = reliability_of_configuration(sub, f, seed=seed)
        reliability.append({"agent": config[0], "model": config[1], **rel.to_dict()})
    return behaviour, reliability


def reliability_of_configuration(
    table: TrialTable, facts: Facts, *, n_boot: int = 1000, seed: int = 0
) -> Reliability:
    """`reliability` of one configuration's rows: its table, action sequences and
    minefield verdicts. Safety counts only the trials whose minefields grade was
    decided: a trial nobody checked, or one the grader could not decide (unknown), is
    not a compliant one (as `tool_use.minefield_hit_rate` counts them)."""
    state = facts["mine_state"]
    graded = (state == PASSED) | (state == FAILED)
    violation = state == FAILED
    severity = np.where(
        violation,
        violation_severity(facts["mine_max_severity"], facts["mine_hit_severity"]),
        np.nan,
    )
    rel = reliability(
        table,
        _actions(facts),
        violation=violation if graded.any() else None,
        severity=severity,
        graded=graded,
        n_boot=n_boot,
        seed=seed,
    )
    unknown = int(np.count_nonzero(state == UNKNOWN))
    if rel.safety is None and unknown:
        why = f"no minefields grade was decided ({unknown} unknown)"
        return dataclasses.replace(rel, safety_reason=why)
    return rel


def _actions(facts: Facts) -> Coded:
    return facts.coded("actions")


def reliability_by_configuration(
    trials: Sequence[Trial] | tuple[TrialTable, Facts],
    *,
    exclude_infra_errors: bool = False,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Reliability (Rabanser et al. 2026) per (agent, model), over all its variants."""
    table, facts = _kept(*_columns(trials), exclude_infra_errors)
    out = []
    for (agent, model), sub, f in _subsets(table, facts, _group_rows(table, _CONFIGURATION)):
        rel = reliability_of_configuration(sub, f, seed=seed)
        out.append({"agent": agent, "model": model, **rel.to_dict()})
    return out
