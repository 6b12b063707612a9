"""What ``agentgauge show`` shows, as data: the failing cells of a source, or the
trials of one task with their transcripts and grades (docs/show.md).

`failures_document` and `trials_document` build the ``agentgauge.show/1``
document that ``show --json`` prints and the terminal renders
(`agentgauge.report.show_terminal`); the rows are `agentgauge.report.explain`'s,
so the viewer's JSON carries the same shapes. `select_trials` picks a task's
trials the way the flags name them, and a name that matches nothing is an
`InputError` that names the flag and some values that exist.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, TypeVar

from agentgauge.errors import InputError
from agentgauge.report.explain import Outcome, failure_rows, trial_view
from agentgauge.report.formats import plural
from agentgauge.schema import Trial
from agentgauge.spelling import quoted

__all__ = [
    "SCHEMA",
    "failures_document",
    "matches_variant",
    "select_trials",
    "trials_document",
]

SCHEMA = "agentgauge.show/1"

_O = TypeVar("_O", bound=Outcome)

#: How many existing values an error suggests when a flag names none.
_SUGGEST = 5


def matches_variant(variant: str, wanted: str) -> bool:
    """``--variant`` names one variant (``paraphrase:1``) or, without a ``:``, all of a
    kind (``paraphrase``, ``fault``), as ``run --variants`` does."""
    return variant == wanted or (":" not in wanted and variant.split(":", 1)[0] == wanted)


def _some(values: Sequence[str], near: str) -> str:
    """A few of ``values``: those closest to what was typed first, then the first ones,
    each quoted so that ``'add '`` and ``'add'`` read apart (`quoted`)."""
    close = difflib.get_close_matches(near, values, n=_SUGGEST, cutoff=0.5)
    rest = [v for v in values if v not in close]
    shown = [*close, *rest][:_SUGGEST]
    more = len(values) - len(shown)
    return ", ".join(quoted(shown)) + (f" and {more:,} more" if more > 0 else "")


def select_trials(
    trials: Sequence[_O],
    *,
    task: str | None = None,
    trial: int | None = None,
    variant: str | None = None,
    failed: bool = False,
) -> list[_O]:
    """The trials the flags name, in the source's order. A ``task``, ``trial`` or
    ``variant`` that no trial has raises `InputError` naming the flag and values
    that exist; ``failed`` then keeps the trials that did not pass (possibly none;
    an infra error never passes: `Trial.passed`)."""
    if trial is not None and task is None:
        raise InputError(
            "a trial index needs --task (trial 0 exists in every task)", field="--trial"
        )
    chosen = list(trials)
    if task is not None:
        chosen = [t for t in chosen if t.task_id == task]
        if not chosen:
            ids = list(dict.fromkeys(t.task_id for t in trials))
            raise InputError(
                f"no task {task!r} in this source ({len(ids):,} {plural(len(ids), 'task')}; "
                f"e.g. {_some(ids, task)})",
                field="--task",
            )
    if variant is not None:
        kept = [t for t in chosen if matches_variant(t.variant, variant)]
        if not kept:
            names = sorted({t.variant for t in chosen})
            where = f"task {task!r}" if task is not None else "this source"
            raise InputError(
                f"no variant {variant!r} in {where} (it has {', '.join(quoted(names))})",
                field="--variant",
            )
        chosen = kept
    if trial is not None:
        kept = [t for t in chosen if t.trial == trial]
        if not kept:
            indices = sorted({t.trial for t in chosen if t.trial is not None})
            raise InputError(
                f"no trial {trial} of task {task!r} (its trials: {', '.join(map(str, indices))})",
                field="--trial",
            )
        chosen = kept
    if failed:
        chosen = [t for t in chosen if not t.passed]
    return chosen


def _cell(t: Outcome) -> tuple[Any, ...]:
    return (t.agent, t.model, t.task_id, t.variant)


def failures_document(
    trials: Sequence[Outcome], *, source: str, variant: str | None = None
) -> dict[str, Any]:
    """The failing cells (agent, model, task, variant) of ``trials``, most failures
    first: each `failure_rows` row plus ``flaky`` (the cell also passed). Reads only
    the trials' keys and outcomes: a stored run's `TrialSource.outcomes` serve without
    building the trials."""
    if variant is not None:
        trials = select_trials(trials, variant=variant)
    rows = [{**r, "flaky": 0 < r["failed"] < r["n"]} for r in failure_rows(trials)]
    return {
        "schema": SCHEMA,
        "view": "failures",
        "source": source,
        "variant": variant,
        "n_trials": len(trials),
        "n_failed_trials": sum(not t.passed for t in trials),
        "n_cells": len({_cell(t) for t in trials}),
        "n_failed_cells": len(rows),
        "n_flaky_cells": sum(r["flaky"] for r in rows),
        "failures": rows,
    }


def trials_document(
    trials: Sequence[Trial],
    *,
    source: str,
    task: str,
    trial: int | None = None,
    variant: str | None = None,
    failed: bool = False,
) -> dict[str, Any]:
    """The trials of ``task`` the flags name, each as `trial_view` (header, transcript
    rows, grades with their evidence as sentences)."""
    # The selection before --failed: "every selected trial passed (N trials)" counts it.
    selected = select_trials(trials, task=task, trial=trial, variant=variant)
    chosen = [t for t in selected if not t.passed] if failed else selected
    of_task = [t for t in trials if t.task_id == task]
    return {
        "schema": SCHEMA,
        "view": "trials",
        "source": source,
        "task_id": task,
        "trial": trial,
        "variant": variant,
        "failed_only": failed,
        "n_task_trials": len(of_task),
        "n_selected": len(selected),
        "variants": sorted({t.variant for t in chosen}),
        "trials": [trial_view(t) for t in chosen],
    }
