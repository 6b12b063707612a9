"""Which trials each table of a report is computed on, so that every face (terminal,
HTML report, viewer) shows the same number for the same scope (docs/show.md,
"Scope of each table").

- the outcome table (success rate, pass@k, pass^k, cost, latency) per agent and
  model, and the tool-call, trajectory and control tables: the **base variant**;
- reliability: robustness compares each perturbed variant with the base one, safety
  reads all variants, and consistency, calibration and AUROC the base variant (all
  the variants of a system with none, by the rule below);
- outcome per variant: a table of its own, one row per variant.

A system (agent and model) with no ``base`` trial (an import that names its
variants otherwise, a run of paraphrases only) has no base to take: its rows of the
base-variant tables use all its trials, and the title and `SystemScope.fallback` say
so. The rule is each system's: one system's base trials never hide another system
that has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentgauge.api import metrics as compute_metrics
from agentgauge.metrics import MetricsReport
from agentgauge.schema import Trial
from agentgauge.table import TrialTable, group_codes

__all__ = [
    "ALL_VARIANTS",
    "BASE_VARIANT",
    "SOME_BASE",
    "RowScope",
    "ScopedMetrics",
    "SystemScope",
    "base_trials",
    "scoped_metrics",
    "system_base_rows",
    "system_base_scope",
    "system_base_trials",
    "variant_rows",
]

BASE_VARIANT = "base variant"
ALL_VARIANTS = "all variants"
_NO_BASE = "all variants: no base variant in the data"


def base_trials(trials: Sequence[Trial]) -> tuple[list[Trial], str]:
    """The trials of the base-variant tables, and the scope's title."""
    base = [t for t in trials if t.variant == "base"]
    if base:
        return base, BASE_VARIANT
    return list(trials), _NO_BASE


#: The title when some systems have base trials and some have none.
SOME_BASE = "base variant (all variants where a system has none)"


@dataclass(frozen=True)
class SystemScope:
    """The trials of the base-variant tables, by the rule of `base_trials` applied to
    each system (agent and model) on its own."""

    trials: list[Trial]
    scope: str
    """The tables' title: `BASE_VARIANT`, `SOME_BASE`, or all variants when no system
    has a base trial."""
    fallback: dict[tuple[str | None, str | None], list[str]]
    """Each system with no base trial, and the variants of its trials (all of them
    taken), while some other system has base trials; empty otherwise (the title says it)."""


def system_base_trials(trials: Sequence[Trial]) -> SystemScope:
    """Each system's base-variant trials, or all its trials when it has no base trial:
    pooled, the rule of `base_trials` dropped a system whose trials are all paraphrases
    whenever another system had base trials."""
    with_base = {(t.agent, t.model) for t in trials if t.variant == "base"}
    if not with_base:
        return SystemScope(list(trials), _NO_BASE, {})
    kept = [t for t in trials if t.variant == "base" or (t.agent, t.model) not in with_base]
    fallback: dict[tuple[str | None, str | None], set[str]] = {}
    for t in trials:
        if (t.agent, t.model) not in with_base:
            fallback.setdefault((t.agent, t.model), set()).add(t.variant)
    return SystemScope(
        kept,
        SOME_BASE if fallback else BASE_VARIANT,
        {system: sorted(variants) for system, variants in fallback.items()},
    )


@dataclass(frozen=True)
class RowScope:
    """`SystemScope` read from a table: the rows of the base-variant tables."""

    rows: npt.NDArray[np.bool_]
    scope: str
    fallback: dict[tuple[str | None, str | None], list[str]]
    """As `SystemScope.fallback`, the systems in the order their first row comes."""


def system_base_scope(table: TrialTable) -> RowScope:
    """`system_base_trials` on a table's columns, without building a trial (a report of
    a stored run): each system's base-variant rows, or all its rows when it has none."""
    variants, variant = table.codes("variant")
    base = np.array([v == "base" for v in variants.tolist()], dtype=bool)[variant]
    if not base.any():
        return RowScope(np.ones(len(table), dtype=bool), _NO_BASE, {})
    system, first = group_codes(table, ("agent", "model"))
    with_base = np.zeros(len(first), dtype=bool)
    with_base[system[base]] = True
    fallback: dict[tuple[str | None, str | None], list[str]] = {}
    for s in np.flatnonzero(~with_base).tolist():
        row = int(first[s])
        held = np.unique(variant[system == s]).tolist()
        fallback[(table.agent[row], table.model[row])] = sorted(variants[held].tolist())
    return RowScope(base | ~with_base[system], SOME_BASE if fallback else BASE_VARIANT, fallback)


def system_base_rows(
    variants: npt.NDArray[np.object_],
    agents: npt.NDArray[np.object_],
    models: npt.NDArray[np.object_],
) -> tuple[npt.NDArray[np.bool_], str]:
    """`system_base_trials` on a table's columns: the rows of each system's base
    variant, or all of a system's rows when it has none, and the scope's title."""
    base = np.asarray([str(v) == "base" for v in variants], dtype=bool)
    if not base.any():
        return np.ones(len(base), dtype=bool), _NO_BASE
    # Each system by its labels as they are: an agent nobody named (None) and one named
    # "None" are two systems (their text would join them).
    systems = np.asarray(
        [f"{a!r}\x00{m!r}" for a, m in zip(agents, models, strict=True)], dtype=object
    )
    keep = base | ~np.isin(systems, np.unique(systems[base]))
    return keep, SOME_BASE if bool((keep & ~base).any()) else BASE_VARIANT


def variant_rows(
    variants: npt.NDArray[np.object_],
    wanted: str | Sequence[str] | None,
    systems: tuple[npt.NDArray[np.object_], npt.NDArray[np.object_]] | None = None,
) -> tuple[npt.NDArray[np.bool_], str]:
    """The rows of a table's ``variant`` column that a command's ``--variants`` keeps,
    and the scope's title, by the rule of `base_trials`.

    ``None`` (the default of the commands that follow this rule): the base variant, or
    every variant when there is no ``base`` trial (and the title says so). ``all``:
    every variant. Otherwise variant names, or kinds without a ``:`` (``paraphrase``,
    ``fault``) as ``run --variants`` and ``show --variant`` read them; naming none
    that the trials have raises `InputError` listing those they have.

    ``systems`` (the agent and model columns) makes the default each system's, as
    `system_base_rows`: a system with no base trial keeps all its rows.
    """
    from agentgauge.errors import InputError
    from agentgauge.report.show import matches_variant

    if wanted is None and systems is not None:
        return system_base_rows(variants, *systems)
    values = [str(v) for v in variants]
    if wanted is None:
        base = np.array([v == "base" for v in values], dtype=bool)
        if base.any():
            return base, BASE_VARIANT
        return np.ones(len(values), dtype=bool), _NO_BASE
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise InputError("give a variant, a kind of variant or all", field="--variants")
    if "all" in names:
        return np.ones(len(values), dtype=bool), ALL_VARIANTS
    # Decided once per distinct variant, not once per trial (a run has a handful).
    kept = [v for v in set(values) if any(matches_variant(v, n) for n in names)]
    keep = np.isin(np.asarray(values, dtype=object), kept)
    if not keep.any():
        found = ", ".join(sorted(set(values))) or "none"
        raise InputError(
            f"no trials of variant {', '.join(names)} (the trials have: {found})",
            field="--variants",
        )
    return keep, ("variant " if len(names) == 1 else "variants ") + ", ".join(names)


@dataclass(frozen=True)
class ScopedMetrics:
    """One metrics report per scope, each with the title its tables carry."""

    base: MetricsReport
    """Per configuration on the base variant: outcome, tool calls, control."""
    base_scope: str
    all: MetricsReport
    """Per configuration over all variants: reliability."""
    per_variant: MetricsReport
    """Per configuration and variant: the outcome-per-variant table."""


def scoped_metrics(
    trials: Sequence[Trial],
    *,
    k: Sequence[int] = (1, 2, 4),
    by: Sequence[str] = ("agent", "model"),
    seed: int = 0,
) -> ScopedMetrics:
    """The three reports the scope rule asks for, grouped ``by`` configuration."""
    base = system_base_trials(trials)
    return ScopedMetrics(
        base=compute_metrics(base.trials, k=k, by=by, seed=seed),
        base_scope=base.scope,
        all=compute_metrics(list(trials), k=k, by=by, seed=seed),
        per_variant=compute_metrics(list(trials), k=k, by=(*by, "variant"), seed=seed),
    )
