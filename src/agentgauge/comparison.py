"""`agentgauge.compare(a, b)`: the Python twin of ``agentgauge compare A B``.

docs/compare-and-plan.md describes the comparison and its record.

Accepts trials however the user holds them (a list of `Trial`, a `TrialTable`,
or a SOURCE string: trials JSONL or ``DB:RUN_ID``), resolves them, logs any use
of held-out tasks in the store's audit log, and hands the arrays to the pure
`agentgauge.metrics.compare.compare`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from agentgauge.errors import InputError
from agentgauge.metrics.compare import Comparison
from agentgauge.metrics.compare import compare as compare_tables
from agentgauge.metrics.validity import (
    HELDOUT_ACTION,
    HeldoutUsage,
    NullAgentCheck,
    heldout_usage,
    null_agent_check,
)
from agentgauge.report.record import ComparisonRecord, SystemInfo, build_record
from agentgauge.schema import Trial
from agentgauge.table import TrialTable

__all__ = ["CompareResult", "compare", "compare_sources", "system_info"]

TrialsLike = Sequence[Trial] | TrialTable | str | PathLike[str]


def system_info(trials: TrialsLike, label: str, *, events: bool = True) -> SystemInfo:
    """Resolve trials in any accepted form to a `SystemInfo` (with run header when stored).

    ``events=False`` skips a store's transcripts and grades (the comparison needs
    neither; the record reads grades).
    """
    if isinstance(trials, TrialTable):
        return SystemInfo(label=label, table=trials)
    if isinstance(trials, str | PathLike):
        # Imported here: sources pulls in the store, which pure metric users do not need.
        from agentgauge.sources import open_source

        src = open_source(str(trials), events=events)
        return SystemInfo(
            label=str(trials), table=src.table, run=src.run, tasks=src.tasks, trials=src.trials
        )
    items = list(trials)
    return SystemInfo(label=label, table=TrialTable.from_trials(items), trials=items)


def compare(
    a: TrialsLike,
    b: TrialsLike,
    *,
    margin: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    include_heldout: bool = False,
) -> Comparison:
    """Paired comparison of B against A over the tasks both ran (Miller 2024).

    ``verdict`` is the sentence ("B is better", "B is worse", "not
    distinguishable from noise with T tasks × K trials", or with ``margin`` the
    non-inferiority form); ``to_dict()`` is ``agentgauge.compare/1``. Gates read
    ``non_inferior_at(margin)``.
    """
    sa, sb = system_info(a, "A", events=False), system_info(b, "B", events=False)
    return _compare(sa, sb, margin=margin, alpha=alpha, seed=seed, include_heldout=include_heldout)


def _compare(
    sa: SystemInfo,
    sb: SystemInfo,
    *,
    margin: float | None,
    alpha: float,
    seed: int,
    include_heldout: bool,
) -> Comparison:
    try:
        return compare_tables(
            sa.table,
            sb.table,
            margin=margin,
            alpha=alpha,
            seed=seed,
            label_a=sa.label,
            label_b=sb.label,
            include_heldout=include_heldout,
        )
    except ValueError as exc:
        raise InputError(str(exc), field="B") from exc


@dataclass(frozen=True)
class CompareResult:
    """A comparison with its nine-line record."""

    comparison: Comparison
    record: ComparisonRecord
    a: SystemInfo
    b: SystemInfo


def _store_of(spec: str) -> tuple[Path, str] | None:
    from agentgauge.sources import _is_sqlite, parse_source

    path, run_id = parse_source(spec)
    if not _is_sqlite(path):
        return None
    return path, (run_id or "")


def _audit_heldout(specs: Sequence[tuple[str, SystemInfo]]) -> HeldoutUsage | None:
    """Log this use of held-out tasks once per store involved; return the usage in B's store."""
    from agentgauge.store import Store

    by_store: dict[Path, list[str]] = {}
    for spec, info in specs:
        where = _store_of(spec)
        if where is not None and info.run is not None:
            by_store.setdefault(where[0].resolve(), []).append(info.run.run_id)
    usage = None
    for path, run_ids in by_store.items():
        with Store(path, create=False) as db:
            db.audit(
                HELDOUT_ACTION,
                run_id=run_ids[-1],
                detail={"command": "compare", "runs": run_ids},
            )
            usage = heldout_usage(db.audit_log(HELDOUT_ACTION))
    return usage


def _heldout_usage(specs: Sequence[str]) -> HeldoutUsage | None:
    from agentgauge.store import Store

    for spec in specs:
        where = _store_of(spec)
        if where is not None:
            with Store(where[0], readonly=True) as db:
                return heldout_usage(db.audit_log(HELDOUT_ACTION))
    return None


def _null_from_store(spec: str, info: SystemInfo) -> NullAgentCheck | None:
    """A ``null`` agent's run on the same suite version in B's store, when there is one."""
    from agentgauge.store import Store

    where = _store_of(spec)
    if where is None or info.run is None:
        return None
    with Store(where[0], readonly=True) as db:
        for run in reversed(db.list_runs()):
            if (
                run.agent in ("null", "builtin:null")
                and run.suite_version == info.run.suite_version
            ):
                return null_agent_check(db.table(run.run_id))
    return None


def compare_sources(
    a: str,
    b: str,
    *,
    margin: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    include_heldout: bool = False,
    deployment_k: int | None = None,
    null: str | None = None,
    judge_kappa: float | None = None,
) -> CompareResult:
    """What ``agentgauge compare A B`` does: the comparison and its record from two SOURCEs.

    The null-agent line reads ``null`` (a SOURCE) or else a ``null`` agent's run
    on the same suite version in B's store. Including held-out tasks writes an
    audit entry in each store involved (docs/compare-and-plan.md).
    """
    sa, sb = system_info(a, "A"), system_info(b, "B")
    comp = _compare(sa, sb, margin=margin, alpha=alpha, seed=seed, include_heldout=include_heldout)
    heldout = _audit_heldout([(a, sa), (b, sb)]) if include_heldout else _heldout_usage([b, a])
    if null is not None:
        null_check: NullAgentCheck | None = null_agent_check(system_info(null, "null").table)
    else:
        null_check = _null_from_store(b, sb)
    record = build_record(
        comp,
        sa,
        sb,
        deployment_k=deployment_k,
        null_agent=null_check,
        judge_kappa=judge_kappa,
        heldout=heldout,
        include_heldout=include_heldout,
        seed=seed,
    )
    return CompareResult(comp, record, sa, sb)
