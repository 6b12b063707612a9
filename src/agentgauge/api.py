"""The Python twin of every ``agentgauge`` command that reads trials.

Each function does what its command does, short of printing: it reads its
inputs in any form a user holds them (a list of `Trial`, a `TrialTable`, or a
SOURCE: a trials JSONL file or ``DB:RUN_ID``), runs the pure engine
(`agentgauge.metrics`, `agentgauge.stats`), and logs in the store what must be
logged (every use of held-out tasks). The CLI (`agentgauge.cli`) parses
arguments and prints what these return; it holds no logic of its own.

=============  ==============================================================
command        twin
=============  ==============================================================
``metrics``    `metrics` (also ``agentgauge.metrics(...)``)
``compare``    `compare`; `compare_sources` adds the nine-line record
``horizon``    `horizon`
``gate``       `run_gates`
``plan``       `plan`
``grade``      `regrade`
``calibrate``  `calibrate`
``run``        `agentgauge.run` (`agentgauge.harness.runner`)
``report``     `agentgauge.report.build.build_report`
=============  ==============================================================
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from numbers import Integral
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from agentgauge.errors import InputError, real_number, whole_number
from agentgauge.facts import Facts
from agentgauge.metrics.baselines import Baseline
from agentgauge.metrics.compare import Comparison, NoSharedTask, select_rows
from agentgauge.metrics.compare import compare as compare_tables
from agentgauge.metrics.engine import MetricsReport, compute_metrics
from agentgauge.metrics.horizon import HorizonReport, Outcome
from agentgauge.metrics.horizon import horizon as fit_horizon
from agentgauge.metrics.outcome import task_success_counts
from agentgauge.metrics.validity import (
    HELDOUT_ACTION,
    HeldoutUsage,
    NullAgentCheck,
    heldout_usage,
)
from agentgauge.report.gates import (
    BlockingCheck,
    GateConfig,
    GateResult,
    blocking_check,
    evaluate_gates,
    gate_config,
    gate_ks,
    reads_behaviour,
)
from agentgauge.report.record import (
    ComparisonRecord,
    SystemInfo,
    build_record,
    grading_difference,
)
from agentgauge.schema import Trial
from agentgauge.stats.power import (
    DEFAULT_WITHIN_SHARE,
    Plan,
    components_from_pilot,
    components_from_pilot_pair,
    measured_within_share,
    paired_variance,
    pilot_variance,
    plan_from_assumptions,
    z_two_sided,
)
from agentgauge.stats.power import plan as plan_from_components
from agentgauge.table import TrialTable, group_keys

if TYPE_CHECKING:
    from agentgauge.components import ComponentDiff
    from agentgauge.graders.regrade import RegradeResult
    from agentgauge.store.database import GradeVersion

__all__ = [
    "CompareResult",
    "TrialsLike",
    "activate_grade_version",
    "blocking_failures",
    "calibrate",
    "check_alpha",
    "check_by",
    "check_ks",
    "check_margin",
    "check_qs",
    "compare",
    "compare_sources",
    "grade_versions",
    "horizon",
    "metrics",
    "plan",
    "regrade",
    "run_gates",
    "system_info",
    "table_given",
    "trial_list",
]

TrialsLike = Sequence[Trial] | TrialTable | str | PathLike[str]
"""Trials as a user holds them: a list of `Trial`, a `TrialTable`, or a SOURCE."""


def system_info(
    trials: TrialsLike,
    label: str,
    *,
    events: bool = True,
    grades: bool | None = None,
    grade_version: int | None = None,
) -> SystemInfo:
    """Resolve trials in any accepted form to a `SystemInfo` (with its run header,
    tasks and grade version when stored; ``trials`` is ``None`` for a bare
    `TrialTable`).

    ``events=False`` skips a store's transcripts, and its grades unless ``grades``
    (what only the outcomes need). ``grade_version`` is the store's grade version
    to read when the SOURCE names none (``#grade=N``); default, the run's active one.
    """
    if isinstance(trials, TrialTable):
        return SystemInfo(label=label, table=table_given(trials, label))
    if isinstance(trials, str | PathLike):
        # Imported here: sources pulls in the store, which pure metric users do not need.
        from agentgauge.sources import open_source

        src = open_source(str(trials), events=events, grades=grades, grade_version=grade_version)
        return SystemInfo(
            label=str(trials),
            table=src.table,
            run=src.run,
            tasks=src.tasks,
            trials=src.lazy_trials,  # a Parquet source builds them only if asked
            grading=src.grading,
            count_model_calls=src.count_model_calls,
            summarize_grades=src.summarize_grades,
        )
    items = trial_list(trials, label)
    return SystemInfo(label=label, table=TrialTable.from_trials(items), trials=items)


def trial_list(trials: Iterable[Trial], field: str) -> list[Trial]:
    """The trials of a list given in Python, each once: a trial there twice (the same
    task and trial index of one agent, model and variant: a list added to itself, or
    two reads of one run joined) is refused naming ``field``, as a JSONL file's
    duplicate line is, instead of being counted as two attempts (pass^4 reported from
    two trials a task, and an interval narrower than the data allow). Trials with no
    index are each an attempt of their own. An item that is no `Trial` (a dict read
    from JSON) is refused too; it was an AttributeError from deep inside."""
    from agentgauge.sources import family_reason, trial_cell_words

    items = list(trials)
    seen: dict[tuple[Any, ...], int] = {}
    families: dict[str, tuple[str, int]] = {}
    for i, trial in enumerate(items):
        if not isinstance(trial, Trial):
            raise InputError(
                f"item {i} is a {type(trial).__name__}, not a Trial: build each with "
                "agentgauge.Trial(...), or give the file's path as a SOURCE",
                field=field,
            )
        # As every reader of trials refuses it (`agentgauge.sources.two_families`): a
        # task is resampled within its one family; a trial naming none says nothing.
        if trial.family is not None:
            first_family, at = families.setdefault(trial.task_id, (trial.family, i))
            if first_family != trial.family:
                raise InputError(
                    family_reason(
                        trial.task_id,
                        first_family,
                        f"item {at} of the list",
                        trial.family,
                        f" here (item {i} of the list)",
                    ),
                    field=field,
                )
        if trial.trial is None:
            continue
        key = (trial.agent, trial.model, trial.variant, trial.task_id, trial.trial)
        first = seen.setdefault(key, i)
        if first != i:
            raise InputError(
                f"duplicate trial {trial.trial} of task {trial.task_id!r} for "
                f"{trial_cell_words(trial.agent, trial.model, trial.variant)} (items "
                f"{first} and {i} of the list): counted twice, it reads as two attempts. "
                "Keep one; two runs of one configuration are two SOURCEs to compare, not "
                "one list",
                field=field,
            )
    return items


def table_given(table: TrialTable, field: str) -> TrialTable:
    """A `TrialTable` given in Python, with a task under two families refused naming
    ``field`` and both rows, as `trial_list` refuses it of a list."""
    from agentgauge.sources import family_reason, two_families

    clash = two_families(table)
    if clash is None:
        return table
    a, b = clash
    raise InputError(
        family_reason(
            str(table.task_id[a]),
            table.family[a],
            f"row {a} of the table",
            table.family[b],
            f" here (row {b} of the table)",
        ),
        field=field,
    )


def _one_system(info: SystemInfo, side: str) -> None:
    """A side of a comparison is one system: refuse a pool of configurations."""
    from agentgauge.sources import require_one_configuration

    require_one_configuration(info.table, info.label, side=side)


# --------------------------------------------------------------------------- arguments
# What each command's options refuse, checked here so that the twin refuses it too, in
# the same one line naming the option (the CLI calls these, or passes its values on).


def _items(value: str | Iterable[str] | None) -> list[str]:
    """The items of a list option given in Python: a bare string is one item (as the
    option given once), not its characters (``"state"`` was graders s, t, a, t, e)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def check_margin(margin: float | None) -> float | None:
    """A non-inferiority margin: a rate difference in [0, 1] (a margin past 1 holds for
    any data); `InputError` naming ``--margin`` otherwise (NaN included)."""
    if margin is None:
        return None
    value = real_number(margin, "--margin")
    if not 0 <= value <= 1:
        raise InputError(
            f"must be a rate difference from 0 to 1, e.g. 0.02, got {value:g}", field="--margin"
        )
    return value


def check_alpha(alpha: float) -> float:
    """A test level in (0, 1); `InputError` naming ``--alpha`` otherwise."""
    value = real_number(alpha, "--alpha")
    if not 0 < value < 1:
        raise InputError(f"must be in (0, 1), got {value:g}", field="--alpha")
    return value


def check_by(by: str | Iterable[str]) -> tuple[str, ...]:
    """The grouping keys ``by`` names: a string is split at its commas as the CLI's
    ``--by`` splits it (``"agent,model"``; one key stays one key, ``""`` is one group of
    all trials; a key named twice counts once); `InputError` naming ``--by`` for a key
    trials cannot be grouped by."""
    try:
        return group_keys(by)  # the one rule, as `compute_metrics` reads ``by``
    except ValueError as exc:
        raise InputError(str(exc), field="--by") from None


def check_ks(k: int | Iterable[int]) -> list[int]:
    """The values of k for pass@k and pass^k (a string ``"1,2,4"`` is split as the CLI
    splits it); `InputError` naming ``--k`` unless each is a whole number >= 1 and there
    is at least one."""
    if isinstance(k, str):  # "1,2,4", as the CLI's --k reads it
        parts = [p.strip() for p in k.split(",") if p.strip()]
        ks: list[Any] = [int(p) if p.lstrip("-").isdigit() else p for p in parts]
    else:
        # One value that is not a list (2.0 too: it was "'float' object is not iterable").
        ks = list(k) if isinstance(k, Iterable) else [k]
    for v in ks:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise InputError(f"expected positive integers like 1,2,4, got {v!r}", field="--k")
    if not ks:
        raise InputError("give at least one k, like 1,2,4", field="--k")
    return [int(v) for v in ks]


def check_qs(q: str | float | Iterable[float | str]) -> list[float]:
    """The success probabilities q of a time horizon: a string ``"0.5,0.8"`` is split at
    its commas as the CLI's ``--q`` splits it (it was read character by character:
    "could not convert string to float: '.'"); `InputError` naming ``--q`` unless each
    is a number strictly between 0 and 1 and there is at least one. A q given twice is
    the fit's to refuse (`agentgauge.metrics.horizon.horizon`)."""
    if isinstance(q, str):  # "0.5,0.8", as the CLI's --q reads it
        given: list[Any] = [p.strip() for p in q.split(",") if p.strip()]
    else:
        given = list(q) if isinstance(q, Iterable) else [q]
    qs: list[float] = []
    for part in given:
        if isinstance(part, str):
            try:
                value, shown = float(part), part
            except ValueError:
                raise InputError(f"not a number: {part!r}", field="--q") from None
        else:
            value = real_number(part, "--q")
            shown = repr(value)
        if not 0 < value < 1:
            raise InputError(f"each q must lie strictly between 0 and 1, got {shown}", field="--q")
        qs.append(value)
    if not qs:
        raise InputError("give at least one q, e.g. --q 0.5,0.8", field="--q")
    return qs


# --------------------------------------------------------------------------- metrics


def metrics(
    trials: TrialsLike,
    *,
    k: int | Iterable[int] = (1, 2, 4),
    by: str | Sequence[str] = ("agent", "model", "variant"),
    exclude_infra_errors: bool = False,
    seed: int = 0,
    behaviour: bool = True,
    grade_version: int | None = None,
) -> MetricsReport:
    """``agentgauge metrics``: the metrics of trials in any form (`TrialsLike`).

    See `compute_metrics` for the figures and options; ``report.to_dict()`` is
    the ``agentgauge.metrics/1`` object.

    With ``behaviour`` (the default) and trials that carry transcripts and
    grades (a list of `Trial` or a SOURCE), the report adds per-group
    ``tool_use`` and ``control`` sections and per-configuration
    ``reliability`` (`agentgauge.metrics.behaviour`). A bare `TrialTable` has
    only outcomes, so those sections are absent. ``grade_version`` picks a
    stored run's grade version (default: the active one).

    A SOURCE with no trial raises `InputError` (as every command refuses it); an
    empty list or table gives a report with no group and the warning ``no trials:
    nothing was measured``.
    """
    from agentgauge.metrics.behaviour import behaviour_columns

    k, by, seed = check_ks(k), check_by(by), whole_number(seed, "--seed")
    facts: Facts | None = None
    if isinstance(trials, TrialTable):
        table = table_given(trials, "trials")  # no grades: which trials a judge graded is not known
    elif isinstance(trials, str | PathLike):
        from agentgauge.sources import open_source

        # A stored run is read as columns and facts: no Trial is built (docs/store.md).
        src = open_source(str(trials), events=behaviour, grade_version=grade_version)
        table = src.table
        facts = src.facts
    else:
        table, facts = behaviour_columns(trial_list(trials, "trials"))
    report = _measure(
        table, facts if behaviour else None, k=k, by=by,
        exclude_infra_errors=exclude_infra_errors, seed=seed,
        # Which trials a judge graded is a grade fact, read whether or not the behaviour
        # sections are: without it the judge's cost reads as unknown where `metrics` and
        # `gate` know it (judge_missing null beside n_judged 40).
        judged=facts["judged"] if facts is not None else None,
    )  # fmt: skip
    report.warnings.extend(_unrecorded_by(report))
    return report


#: Labels ``--by`` groups by unless told otherwise: a file that records no agent or
#: model is usual, and says nothing.
_DEFAULT_BY = ("agent", "model", "variant")


def _unrecorded_by(report: MetricsReport) -> list[str]:
    """A warning for each label of ``--by`` (beyond the default ones) that no trial
    records: grouping by it split nothing, which the one group's title cannot say.
    Named by the option, as the twins' refusals are (docs/cli.md)."""
    return [
        f"--by {key}: no trial records a {key}, so no group is split by it"
        for key in report.by
        if key not in _DEFAULT_BY and all(g.labels.get(key) is None for g in report.groups)
    ]


def metrics_of_columns(
    table: TrialTable,
    facts: Facts,
    *,
    k: int | Iterable[int] = (1, 2, 4),
    by: str | Sequence[str] = ("agent", "model", "variant"),
    seed: int = 0,
) -> MetricsReport:
    """`metrics` of trials already read as their table and facts (row for row), with
    the behaviour sections: what ``metrics(trials)`` gives of the trials they were read
    from, without building the columns again (the report measures one suite's columns
    several ways)."""
    k, by, seed = check_ks(k), check_by(by), whole_number(seed, "--seed")
    return _measure(table, facts, k=k, by=by, seed=seed, judged=facts["judged"])


def _measure(
    table: TrialTable,
    facts: Facts | None,
    *,
    k: int | Iterable[int],
    by: str | Sequence[str],
    exclude_infra_errors: bool = False,
    seed: int = 0,
    judged: npt.NDArray[np.bool_] | None = None,
) -> MetricsReport:
    """The metrics of a table, with the behaviour sections when its ``facts`` are given;
    ``judged`` as `compute_metrics` takes it. ``by`` is one key or several."""
    from agentgauge.metrics.behaviour import behaviour_and_reliability

    by = group_keys(by)
    report = compute_metrics(
        table, k=k, by=by, exclude_infra_errors=exclude_infra_errors, seed=seed, judged=judged
    )
    if facts is None:
        return report
    sections, reliability = behaviour_and_reliability(
        (table, facts), by, exclude_infra_errors=exclude_infra_errors, seed=seed
    )
    return dataclasses.replace(report, behaviour=sections, reliability=reliability)


# --------------------------------------------------------------------------- horizon


#: The fit's parameters that are `agentgauge horizon`'s options of the same name.
_HORIZON_OPTIONS = frozenset({"q", "bootstrap", "regularization", "outcome", "by"})


def horizon(
    trials: TrialsLike,
    q: str | float | Sequence[float] = (0.5, 0.8),
    bootstrap: int = 1000,
    seed: int = 0,
    regularization: float = 1e5,
    by: str | Sequence[str] | None = "agent",
    outcome: Outcome = "auto",
    variants: str | Sequence[str] | None = None,
) -> HorizonReport:
    """``agentgauge horizon``: time horizons of trials in any form (`TrialsLike`);
    see `agentgauge.metrics.horizon.horizon` for the fit and every option.

    ``variants`` picks the trials fitted, as the report's horizon does: by default
    each system's base variant (all of a system's trials when it has no ``base``
    trial); ``"all"`` pools every
    variant; variant names or kinds (``"paraphrase"``, ``["base", "fault:timeout"]``)
    keep those. The report's ``scope`` and ``variants`` say which were fitted.

    ``q``, ``by`` and ``variants`` given as text are split at their commas, as the
    command's ``--q``, ``--by`` and ``--variants`` are (``q="0.5,0.8"``).
    """
    from agentgauge.report.scope import variant_rows

    seed, bootstrap = whole_number(seed, "--seed"), whole_number(bootstrap, "--bootstrap")
    q = check_qs(q)
    regularization = real_number(regularization, "--regularization")  # its range: the fit's
    if by is not None:
        by = check_by(by)  # as `metrics` checks it, naming --by
    if isinstance(variants, str):  # "base,paraphrase", as the CLI's --variants reads it
        variants = [v.strip() for v in variants.split(",") if v.strip()]
    info = system_info(trials, "trials", events=False)
    table = info.table
    if len(table):  # an empty one is refused by the fit, with its reason
        keep, scope = variant_rows(table.variant, variants, (table.agent, table.model))
        table = table if keep.all() else table.take(keep)
    else:
        scope = None
    try:
        report = fit_horizon(
            table,
            q=q,
            bootstrap=bootstrap,
            seed=seed,
            regularization=regularization,
            by=by,
            outcome=outcome,
        )
    except InputError as exc:
        if exc.field in _HORIZON_OPTIONS:  # the fit names its parameter; say the option
            raise InputError(exc.reason, field=f"--{exc.field}") from None
        raise
    report.scope = scope
    report.variants = sorted({str(v) for v in table.variant})
    return report


# --------------------------------------------------------------------------- compare


def compare(
    a: TrialsLike,
    b: TrialsLike,
    *,
    margin: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    include_heldout: bool = False,
    grade_version: int | None = None,
) -> Comparison:
    """``agentgauge compare``: the paired comparison of B against A over the tasks
    both ran (Miller 2024; docs/compare-and-plan.md).

    ``verdict`` is the sentence ("B is better", "B is worse", "not
    distinguishable from noise with T tasks × K trials", or with ``margin`` the
    non-inferiority form; with fewer shared tasks, or families, than can tell a
    difference at ``alpha``, 6 at 0.05, the noise sentence with that reason:
    ``too_few_units``); ``to_dict()`` is ``agentgauge.compare/1``. Gates read
    ``non_inferior_at(margin)``.

    Each side must hold one (agent, model) configuration; a SOURCE holding
    several is narrowed with ``#agent=NAME`` (`agentgauge.sources`).
    ``grade_version`` applies to each stored side that names none itself. The
    verdict says "not attributable" when the runs differ in more than one component
    (`agentgauge.components`), as the command's does. Including held-out tasks of a
    stored run writes an audit entry in its store, as the command does.
    """
    from agentgauge.components import diff_components, with_configuration
    from agentgauge.store.database import write_may_follow

    with write_may_follow() if include_heldout else nullcontext():  # one note, as the command
        sa = system_info(a, "A", events=False, grade_version=grade_version)
        sb = system_info(b, "B", events=False, grade_version=grade_version)
        comp = _compare(
            sa, sb, margin=margin, alpha=alpha, seed=seed, include_heldout=include_heldout
        )
        # The verdict `agentgauge compare` prints: with the one-change caveat when the two
        # runs differ in more than one component (it said "B is worse" where the command
        # said "B is worse; not attributable: model and agent version both changed").
        result = with_configuration(comp, diff_components(_components(sa), _components(sb)))
        if include_heldout and _reads_heldout(comp, sa, sb):
            # Every use of held-out tasks is logged (docs/compare-and-plan.md): the twin
            # read them and logged nothing, so the held-out set's count of uses missed it.
            from agentgauge.sources import source_text

            sides = ((a, sa), (b, sb))
            stored = [(source_text(x), info) for x, info in sides if isinstance(x, str | PathLike)]
            _audit_heldout(_heldout_runs(stored))
    return result


def _compare(
    sa: SystemInfo,
    sb: SystemInfo,
    *,
    margin: float | None,
    alpha: float,
    seed: int,
    include_heldout: bool,
) -> Comparison:
    margin, alpha = check_margin(margin), check_alpha(alpha)
    seed = whole_number(seed, "--seed")
    for info, side in ((sa, "A"), (sb, "B")):
        if len(info.table) == 0:  # a SOURCE with none was refused when read
            raise InputError("no trials to compare", field=side)
        _one_system(info, side)
    try:
        # What is left to refuse is the data's: the sides share no task.
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
    except NoSharedTask as exc:
        # The data's, not one side's: no "B:" before it; held-out shared tasks name the
        # option that reads them.
        why = f"{exc}: give --include-heldout to compare them" if exc.heldout else str(exc)
        raise InputError(why) from exc
    except ValueError as exc:
        raise InputError(str(exc)) from exc


@dataclass(frozen=True)
class CompareResult:
    """A comparison with its nine-line record."""

    comparison: Comparison
    record: ComparisonRecord
    a: SystemInfo
    b: SystemInfo
    warnings: list[str] = dataclasses.field(default_factory=list)
    """What the user must know to read the result (a side compared on other variants
    than its base one, the sides graded differently)."""
    components: ComponentDiff | None = None
    """What differs between the two runs' configurations (`agentgauge.components`)."""
    baselines: dict[str, Baseline] = dataclasses.field(default_factory=dict)
    """The baselines found, by role (record line 5)."""
    null_agent: NullAgentCheck | None = None
    """The null agent's score and the tasks it passes, as record line 5 says them
    (``baselines["null"]`` names its run when it shares a task with A and B)."""


def _store_of(spec: str) -> tuple[Path, str] | None:
    from agentgauge.sources import is_store, parse_source

    path, run_id = parse_source(spec)
    if not is_store(path):
        return None
    return path, (run_id or "")


def _heldout_runs(specs: Sequence[tuple[str, SystemInfo]]) -> dict[Path, list[str]]:
    """The stored runs whose held-out tasks a comparison reads, by store (B's last),
    each store as the first SOURCE naming it spells it: the store's notes name it so,
    once (its absolute path was a second store to say the read's note of)."""
    by_store: dict[Path, list[str]] = {}
    spelt: dict[Path, Path] = {}
    for spec, info in specs:
        where = _store_of(spec)
        if where is not None and info.run is not None:
            path = spelt.setdefault(where[0].resolve(), where[0])
            by_store.setdefault(path, []).append(info.run.run_id)
    return by_store


def _heldout_entry(run_ids: list[str]) -> dict[str, Any]:
    return {"run_id": run_ids[-1], "detail": {"command": "compare", "runs": run_ids}}


def _heldout_usage_with_this(by_store: dict[Path, list[str]]) -> HeldoutUsage | None:
    """The usage in B's store (the last) counting this use, before it is logged: the
    entry is written only once the command has succeeded (`_audit_heldout`)."""
    from agentgauge.store import Store
    from agentgauge.store.rows import utc_now

    if not by_store:
        return None
    path, run_ids = list(by_store.items())[-1]
    with Store(path, readonly=True) as db:
        log = db.audit_log(HELDOUT_ACTION)
    this = {"at": utc_now(), "action": HELDOUT_ACTION, **_heldout_entry(run_ids)}
    return heldout_usage([*log, this])


def _audit_heldout(by_store: dict[Path, list[str]]) -> None:
    """Log this use of held-out tasks once per store involved."""
    from agentgauge.store import Store

    for path, run_ids in by_store.items():
        entry = _heldout_entry(run_ids)
        with Store(path, create=False) as db:
            db.audit(HELDOUT_ACTION, run_id=entry["run_id"], detail=entry["detail"])


def _reads_heldout(comp: Comparison, *sides: SystemInfo) -> bool:
    """Whether the comparison's tasks include a held-out one (``split: heldout``)."""
    tasks = list(comp.tasks)
    for side in sides:
        on = np.isin(side.table.task_id.astype(str), tasks)
        if any(v == "heldout" for v in side.table.split[on]):
            return True
    return False


def _heldout_usage(specs: Sequence[str]) -> HeldoutUsage | None:
    from agentgauge.store import Store

    for spec in specs:
        where = _store_of(spec)
        if where is not None:
            with Store(where[0], readonly=True) as db:
                return heldout_usage(db.audit_log(HELDOUT_ACTION))
    return None


def _components(info: SystemInfo) -> dict[str, Any]:
    return info.components()


def compare_sources(
    a: str | PathLike[str],
    b: str | PathLike[str],
    *,
    margin: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    include_heldout: bool = False,
    deployment_k: int | None = None,
    null: str | None = None,
    judge_kappa: float | None = None,
    grade_version: int | None = None,
    baselines: str | Sequence[str] = (),
    human_rate: float | None = None,
) -> CompareResult:
    """What ``agentgauge compare A B`` does: the comparison and its record from two SOURCEs.

    Record line 5's baselines (docs/compare-and-plan.md, "Baselines") come from
    ``baselines`` (each ``ROLE=SOURCE``, or the SOURCE of a run marked with a
    role; one as a string) and ``null`` (a SOURCE), else from the runs marked in B's store (the
    null agent also by its agent name, on the same suite version); the previous
    system is A unless one is marked. ``human_rate`` (USD per hour) prices the
    human's time. The runs' configurations are compared component by component
    (`agentgauge.components`): line 1 lists what differs, and when more than one
    component changed the verdict says the difference is not attributable.

    Including held-out tasks writes an audit entry in each store involved.
    ``warnings`` says when a side has no base-variant trial (all its trials are then
    compared: `Comparison.scope`), and when the two sides were graded differently
    (other graders, or a re-grade on one side only).
    """
    from agentgauge.baseline_runs import find_baselines
    from agentgauge.components import diff_components, with_configuration
    from agentgauge.report.record import agent_name
    from agentgauge.sources import source_text
    from agentgauge.store.database import write_may_follow

    a, b = source_text(a, "A"), source_text(b, "B")
    if deployment_k is not None:
        deployment_k = whole_number(deployment_k, "--k", least=1)
    if human_rate is not None and not human_rate > 0:
        raise InputError("must be a positive hourly rate in USD, e.g. 143.61", field="--human-rate")
    # A stale store's note, once: `--include-heldout` writes to the store (storing its
    # records anew, and saying so) only when held-out trials were read.
    with write_may_follow() if include_heldout else nullcontext():
        # Grades (record line 4, the grading check) but not transcripts: what the record
        # needs of the model calls is counted without them (`SystemInfo.model_calls`).
        sa = system_info(a, "A", events=False, grades=True, grade_version=grade_version)
        sb = system_info(b, "B", events=False, grades=True, grade_version=grade_version)
        comp = _compare(
            sa, sb, margin=margin, alpha=alpha, seed=seed, include_heldout=include_heldout
        )
        # A use is logged only when held-out trials were read: `--include-heldout` on a
        # suite with no held-out task (or none shared) spends nothing of the held-out set.
        reads_heldout = include_heldout and _reads_heldout(comp, sa, sb)
        # The record counts this use; the audit entry is written last, once nothing else
        # can fail (a misspelt --baseline logged a use of a comparison never made).
        heldout_runs = _heldout_runs([(a, sa), (b, sb)]) if reads_heldout else {}
        heldout = (
            _heldout_usage_with_this(heldout_runs) if reads_heldout else _heldout_usage([b, a])
        )
        given = [*_items(baselines), *([f"null={null}"] if null is not None else [])]
        null_check, found, absent = find_baselines(
            b, sa, sb, comp, given, include_heldout=include_heldout, human_rate=human_rate
        )
        # One sentence for line 1, the terminal's row and --json: with the agents named
        # when they differ and no recorded component does.
        changes = diff_components(
            _components(sa), _components(sb), agents=(agent_name(sa), agent_name(sb))
        )
        comp = with_configuration(comp, changes)
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
            baselines=found,
            absent_baselines=absent,
            human_rate=human_rate,
            configuration=changes.sentence(),
        )
        difference = grading_difference(sa, sb)
        _audit_heldout(heldout_runs)
        return CompareResult(
            comp,
            record,
            sa,
            sb,
            [*comp.scope_warnings, *([difference] if difference else [])],
            components=changes,
            baselines=found,
            null_agent=null_check,
        )


# --------------------------------------------------------------------------- gate


def _ks(config: GateConfig) -> list[int]:
    # pass^k is always reported at 1, 2 and 4 (as `agentgauge metrics` does).
    return sorted({1, 2, 4} | gate_ks(config))


def blocking_failures(trials: Sequence[Trial]) -> BlockingCheck | None:
    """What the trials' rubric grades say of their blocking criteria: how many failed
    one, decided them all, or left one undecided (`agentgauge.report.gates.blocking_check`);
    ``None`` when no rubric was graded."""
    return blocking_check(trials)


def run_gates(
    source: str | PathLike[str],
    config: GateConfig | Mapping[str, Any] | str | PathLike[str],
    *,
    baseline: TrialsLike | None = None,
    by: str | Sequence[str] = ("agent", "model"),
    seed: int = 0,
    if_no_baseline: Literal["error", "skip"] = "error",
    grade_version: int | None = None,
) -> list[GateResult]:
    """``agentgauge gate``: every gate of a config on SOURCE (and BASELINE for the
    non-inferiority gates): metrics with the k values the config names, the
    paired comparison against the baseline when a gate asks for one, and the
    count of trials whose blocking rubric criterion failed.

    Without a baseline a non-inferiority gate is an input error, unless
    ``if_no_baseline="skip"`` (a CI pipeline's first run, before any baseline
    exists): then it is returned unchecked (``checked=False``) and the others run.
    Gates hold per (agent, model) group; the non-inferiority comparison needs
    one configuration on each side (narrow a SOURCE with ``#agent=NAME``).
    ``grade_version`` applies to each stored SOURCE that names none itself.

    ``source`` is a SOURCE (a ``str`` or `pathlib.Path`), as the command's is: a gate
    on blocking rubric failures or on a behaviour section reads what only a SOURCE
    keeps whole, so a list of trials or a table is refused with `InputError` (write
    them to a trials JSONL file, or store them, first). ``baseline`` is read as a
    side of `compare` is, in any form (`TrialsLike`). ``config`` is a gates file's
    path, its dict form or a `GateConfig` (`agentgauge.report.gates.gate_config`).
    """
    from agentgauge.sources import source_text

    source = source_text(source)
    by, seed = check_by(by), whole_number(seed, "--seed")
    # A config given in Python is checked as a gates file is (`validate_gate_config`).
    cfg = gate_config(config)
    unchecked: list[GateResult] = []
    if baseline is not None and not any(g.type == "non_inferiority" for g in cfg.gates):
        # It was read by nothing, even a file that does not exist, and the run passed.
        raise InputError(
            "a baseline is for non_inferiority gates, and the config has none", field="--baseline"
        )
    needs = [i for i, g in enumerate(cfg.gates) if g.type == "non_inferiority"]
    if baseline is None and if_no_baseline == "error" and needs:
        # Before anything is measured, and at the gate's line, as the file's other errors:
        # it was found after the metrics, named "gates" alone.
        file, line = _config_line(config, ("gates", needs[0], "type"))
        raise InputError(
            "a non_inferiority gate needs a baseline: pass --baseline SOURCE (or "
            "--if-no-baseline skip on a pipeline's first run, before a baseline exists)",
            file=file,
            line=line,
            field=f"gates.{needs[0]}.type",
        )
    if baseline is None and if_no_baseline == "skip":
        k = cfg.deployment_k
        unchecked = [
            GateResult(g.label(k), "all", True, "not checked: no baseline yet", checked=False)
            for g in cfg.gates
            if g.type == "non_inferiority"
        ]
        cfg = cfg.model_copy(
            update={"gates": [g for g in cfg.gates if g.type != "non_inferiority"]}
        )
    # Imported here: sources pulls in the store, which pure metric users do not need.
    from agentgauge.sources import open_source

    # The outcome columns are all most gates read: the facts of the transcripts and
    # grades are read only for a gate on a behaviour section (`control.accuracy`) or on
    # cost (which trials a judge graded, without which `cost.judge_total` would be the
    # sum over the trials that record a judge cost, where `metrics` says the total is
    # unknown), and a stored run's trials are built only for a gate on blocking rubric
    # failures.
    behaviour = reads_behaviour(cfg)
    costs = any(
        g.type == "threshold" and (g.metric or "").partition(".")[0] == "cost" for g in cfg.gates
    )
    src = open_source(source, events=behaviour, grade_version=grade_version)
    table = src.table
    facts = src.facts if behaviour or costs else None
    keep = _gate_variants(table, cfg.variants, source, "variants", config=config)
    if keep is not None:
        table = table.take(keep)
        facts = None if facts is None else facts.take(keep)
    judged = None if facts is None else facts["judged"]
    report = _measure(
        table, facts if behaviour else None, k=_ks(cfg), by=by, seed=seed, judged=judged
    )
    comparison_dict = None
    margins = [g.margin or 0.0 for g in cfg.gates if g.type == "non_inferiority"]
    if baseline is not None:
        comparison_dict = _gate_comparison(
            baseline, source, table, cfg.variants, max(margins), seed, grade_version
        ).to_dict()
    needs_rubric = any(g.type == "no_blocking_failures" for g in cfg.gates)
    return unchecked + evaluate_gates(
        cfg,
        report.to_dict(),
        comparison=comparison_dict,
        blocking_failures=blocking_failures(
            [t for t in src.trials if _in_variants(t.variant, cfg.variants)]
        )
        if needs_rubric
        else None,
    )


def _in_variants(variant: str, variants: Sequence[str]) -> bool:
    """Whether a trial of ``variant`` is among a gates file's ``variants`` (names or
    kinds, as `run --variants` reads them; ``all`` for every one)."""
    from agentgauge.report.show import matches_variant

    return "all" in variants or any(matches_variant(variant, n) for n in variants)


def _gate_variants(
    table: TrialTable,
    variants: Sequence[str],
    source: str,
    field: str,
    *,
    config: GateConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
) -> npt.NDArray[np.bool_] | None:
    """The rows of ``table`` a gates file's ``variants`` keep (``None``: all of them),
    or `InputError` naming ``field`` when a name other than ``all`` matches no trial of
    ``source``: `[base, paraphrase]` gated the base variant alone, silently, while
    `[basee]` alone was refused, and `[all, paraphrse]` passed. Given ``config``, the
    gates file the names were read from, the refusal names its file and the name's
    line, as the file's other errors do (``g.yaml:1: variants: ...``)."""
    from agentgauge.report.show import matches_variant
    from agentgauge.spelling import quoted

    present = sorted({str(v) for v in set(table.variant.tolist())})
    for i, name in enumerate(variants):
        if name != "all" and not any(matches_variant(v, name) for v in present):
            file, line = _config_line(config, ("variants", i))
            raise InputError(
                f"no trials of variant {name!r} in {source} (it has {', '.join(quoted(present))})",
                file=file,
                line=line,
                field=field,
            )
    if "all" in variants:
        return None
    # Decided once per distinct variant, not once per trial (a run has a handful).
    kept = [v for v in present if _in_variants(v, variants)]
    return np.isin(table.variant, kept)


def _config_line(
    config: GateConfig | Mapping[str, Any] | str | PathLike[str] | None, path: tuple[Any, ...]
) -> tuple[str | None, int | None]:
    """The gates file and the line of ``path`` in it, to name in a refusal; ``(None,
    None)`` for a config given as a dict or a `GateConfig`, which has no file."""
    if not isinstance(config, str | PathLike):
        return None, None
    from agentgauge.yamlio import line_of, load_yaml

    # Read again for its lines on this path only: the config keeps none.
    return str(config), line_of(load_yaml(Path(config))[1], path)


def _gate_comparison(
    baseline: TrialsLike,
    source: str,
    table: TrialTable,
    variants: Sequence[str],
    margin: float,
    seed: int,
    grade_version: int | None,
) -> Comparison:
    """The paired comparison a non-inferiority gate reads: SOURCE's trials of the
    gates' ``variants`` (``table``, already kept) against the baseline's trials of the
    same variants. It read both runs' base variant, whatever ``variants`` said."""
    from agentgauge.sources import require_one_configuration

    try:
        base = system_info(baseline, "--baseline", events=False, grade_version=grade_version)
    except InputError as exc:
        # The baseline is read as a SOURCE is, and its errors named it so.
        if exc.field != "SOURCE":
            raise
        raise InputError(exc.reason, file=exc.file, line=exc.line, field="--baseline") from None
    base_table = base.table
    keep = _gate_variants(base_table, variants, base.label, "--baseline")
    if keep is not None:
        base_table = base_table.take(keep)
    sides = ((base_table, base.label, "--baseline"), (table, source, "SOURCE"))
    for side_table, label, field in sides:
        require_one_configuration(side_table, label, side=field, subject="it")
    try:
        return compare_tables(
            base_table,
            table,
            margin=margin,
            seed=seed,
            label_a="the baseline",
            label_b="SOURCE",
            base_only=False,
        )
    except ValueError as exc:  # the two share no task
        raise InputError(str(exc), field="--baseline") from exc


# --------------------------------------------------------------------------- plan


def _pilot_table(spec: str, side: str) -> tuple[TrialTable, str | None]:
    """The pilot's trials a plan reads (base variant, dev split), and a warning when it
    has no base-variant trial and all its variants are read, as compare warns."""
    from agentgauge.metrics.compare import variant_scope
    from agentgauge.sources import require_one_configuration

    table = system_info(spec, spec, events=False).table
    # One system's variance, as compare's sides: a pilot pooling two agents' trials is
    # a system that never existed (its σ², τ² and within-task share a mixture's).
    require_one_configuration(
        table,
        spec,
        side=side,
        subject="the pilot" if side == "--pilot" else "the second pilot",
        read_as="read as one system",
    )
    scope = variant_scope(table)
    table = select_rows(table)
    if len(table) == 0:
        raise InputError("the pilot has no trials (base variant, dev split)", file=spec)
    warning = None
    if scope is not None:
        warning = (
            f"{side} {spec} has no base-variant trial: the plan reads {scope}, while "
            "compare reads the base variant of runs that have one; pilot the base variant "
            "to plan from the variance compare will see"
        )
    return table, warning


def _rates(table: TrialTable) -> dict[str, tuple[int, float]]:
    """task → (trials, success rate); an infra error is a failure."""
    ids, n, c = task_success_counts(table.task_id, table.success & ~table.infra_error)
    return {t: (int(n[i]), c[i] / n[i]) for i, t in enumerate(ids)}


def _share_measured(pilot: str | None, share: float | None, given: float | None) -> None:
    """Refuse ``--within-share`` beside a pilot (``None``: a pair) that measures the split."""
    if given is None:
        return
    what, wins = ("the pilot", "the pilot would") if pilot else ("the pilots", "they would")
    measured = f" ({share:.2f})" if share is not None else ""
    raise InputError(
        f"{what} measure{'s' if pilot else ''} the within-task share{measured} from tasks "
        f"with two or more trials, and {wins} win; --within-share applies only where "
        "nothing measures it (--baseline, or a pilot with one trial per task): drop "
        "--within-share",
        file=pilot,
        field="--within-share",
    )


def _from_pilot(
    pilot: str,
    pilot_b: str | None,
    *,
    delta: float | None,
    tasks: int | None,
    trials: int,
    correlation: float,
    within_share: float | None,
    alpha: float,
    power: float,
) -> Plan:
    ta, warning = _pilot_table(pilot, "--pilot")
    warnings = [warning] if warning else []
    # The split of the pilot's variance into between- and within-task parts: measured
    # when it has several trials per task (`within_share`, `variance_split` "pilot"),
    # else --within-share's (or the default's) split of the whole observed variance.
    given = within_share
    share = DEFAULT_WITHIN_SHARE if given is None else given
    assumed = "--within-share" if given is not None else "default"
    inputs: dict[str, Any] = {"method": "pilot", "pilot": pilot}
    if pilot_b is None:
        _, idx = ta.task_index()
        try:
            pv = pilot_variance(idx, ta.success & ~ta.infra_error)
        except ValueError as exc:
            raise InputError(str(exc), file=pilot, field="--pilot") from exc
        if pv.mean_rate in (0.0, 1.0):
            # Every trial passed (or none did): no variance to plan from, and a plan from
            # it promised an effect of 0 detectable with 50 tasks, or 2 tasks for any δ.
            every = "passed" if pv.mean_rate == 1.0 else "failed"
            raise InputError(
                f"every trial of the pilot {every}: it shows no variance to plan from; plan "
                "from assumptions instead (--baseline RATE), or pilot on tasks the agent "
                "does not always pass or fail",
                file=pilot,
                field="--pilot",
            )
        split = pv.sigma2 is None
        rate = pv.mean_rate
        if not split:
            _share_measured(pilot, pv.within_share, given)
        comp = components_from_pilot(pv, correlation=correlation, within_share=share)
        # Echo the τ² and σ² the plan used. With one trial per task they are the pilot's
        # variance split by --within-share (σ² = ω²'s partner in `components_from_pilot`);
        # `pv.tau2` is then the whole variance, which is not what went into ω².
        inputs.update(
            within_share=share if split else pv.within_share,
            within_share_source=assumed if split else "pilot",
            correlation=correlation,
            pilot_tasks=pv.n_tasks,
            pilot_trials_per_task=pv.mean_trials,
            pilot_rate=pv.mean_rate,
            pilot_variance=pv.total,
            variance_split="within_share" if split else "pilot",
            tau2=(1 - share) * pv.total if split else pv.tau2,
            sigma2=comp.sigma2_a,
        )
    else:
        tb, warning_b = _pilot_table(pilot_b, "--pilot-b")
        warnings += [warning_b] if warning_b else []
        ra, rb = _rates(ta), _rates(tb)
        shared = sorted(set(ra) & set(rb))
        if len(shared) < 2:
            raise InputError("the two pilots share fewer than two tasks", field="--pilot-b")
        arr = {
            key: np.array([src[t][i] for t in shared], dtype=np.float64)
            for key, src, i in (("na", ra, 0), ("pa", ra, 1), ("nb", rb, 0), ("pb", rb, 1))
        }
        comp = components_from_pilot_pair(
            arr["na"], arr["pa"], arr["nb"], arr["pb"], within_share=share
        )
        if comp.per_task() == 0:
            # B − A is the same on every shared task and no trial varies within one (two
            # all-passing pilots, say): as for one pilot, a plan from zero variance
            # promised 2 tasks for any δ and an effect of 0 detectable with 50 tasks.
            d = arr["pb"][0] - arr["pa"][0]
            agree = all(bool(np.all((r == 0) | (r == 1))) for r in (arr["pa"], arr["pb"]))
            raise InputError(
                f"the two pilots show no variance to plan from: B − A is {d:+g} on every one "
                f"of the {len(shared)} shared tasks"
                + (", and every task's trials agree" if agree else "")
                + "; plan from assumptions instead (--baseline RATE), or pilot on tasks the "
                "agents do not always pass or fail",
                field="--pilot-b",
            )
        # Both pilots with a task of two or more trials: ω², σ_A² and σ_B² estimated
        # apart (`components_from_pilot_pair`), and --within-share had no part in them.
        _, sig_a, sig_b, var_d = paired_variance(arr["na"], arr["pa"], arr["nb"], arr["pb"])
        split = sig_a is None or sig_b is None
        measured = measured_within_share(comp.sigma2_a + comp.sigma2_b, comp.omega2)
        if not split:
            _share_measured(None, measured, given)
        rate = float(arr["pa"].mean())
        inputs.update(
            within_share=share if split else measured,
            within_share_source=assumed if split else "pilot",
            pilot_b=pilot_b,
            pilot_tasks=len(shared),
            pilot_rate=rate,
            pilot_variance=var_d,
            variance_split="within_share" if split else "pilot",
            method="pilot-pair",
        )
    inputs["trials"] = trials
    # A's rate (the pilot's; A's on the shared tasks for a pair) bounds the effect: B at
    # 149% is no plan, and an MDE past 1 − rate is nothing detectable.
    result = plan_from_components(
        comp,
        delta=delta,
        tasks=tasks,
        trials_a=trials,
        trials_b=trials,
        alpha=alpha,
        power=power,
        inputs=inputs,
        rate=rate,
        rate_name="the pilot's rate",
    )
    return dataclasses.replace(result, warnings=warnings)


def plan(
    *,
    baseline: float | None = None,
    delta: float | None = None,
    tasks: int | None = None,
    trials: int = 1,
    correlation: float | None = None,
    within_share: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    pilot: str | PathLike[str] | None = None,
    pilot_b: str | PathLike[str] | None = None,
) -> Plan:
    """``agentgauge plan``: the tasks needed to detect a difference ``delta`` (or,
    with ``tasks``, the smallest detectable difference), from assumptions (a
    ``baseline`` rate and a ``correlation``) or from the variance of a ``pilot``
    SOURCE (and a second system's ``pilot_b``, for a paired estimate). See
    `agentgauge.stats.power` and docs/compare-and-plan.md for the formula.
    ``correlation`` is 0 unless given; a paired pilot measures it, and a pilot
    replaces the baseline, so either given beside them is refused rather than
    dropped. ``within_share`` splits a variance nothing measured apart into its
    between- and within-task parts (`DEFAULT_WITHIN_SHARE` unless given); a pilot
    with several trials per task measures the split, and ``within_share`` given
    beside it is refused too. The tasks needed are never fewer than `compare` needs
    to give a verdict at ``alpha`` (6 at 0.05: ``min_tasks``, with ``n_tasks_reason``
    when the formula gave fewer), and with fewer ``tasks`` than that ``mde`` is
    ``None`` with ``mde_reason``. A pilot holding several (agent, model)
    configurations is refused, as a side of `compare` is. Bad inputs (a ``delta``
    too small for its square or the tasks needed to be a finite float, too) raise
    `InputError` naming the option."""
    # Types first, as the command's parser checks them: trials=2.5 planned for two and
    # a half trials a task, tasks=True printed "True task", baseline="0.8" a TypeError.
    for name, count in (("--trials", trials), ("--tasks", tasks)):
        if count is not None and (isinstance(count, bool) or not isinstance(count, Integral)):
            whole_number(count, name, least=1)
    for name, value in (
        ("--baseline", baseline),
        ("--delta", delta),
        ("--correlation", correlation),
        ("--within-share", within_share),
    ):
        if value is not None:
            real_number(value, name)
    real_number(alpha, "--alpha")  # these two have defaults: None is no number either
    real_number(power, "--power")
    # A pilot is a SOURCE, read as its text: a pathlib.Path made a plan whose to_dict()
    # held the Path (not JSON), and a list of trials was named by its whole repr in
    # every message about it.
    from agentgauge.sources import source_text

    pilot = None if pilot is None else source_text(pilot, "--pilot")
    pilot_b = None if pilot_b is None else source_text(pilot_b, "--pilot-b")
    alpha_ok = 0 < alpha < 1
    checks = [
        (not alpha_ok, "--alpha", "must be in (0, 1)"),
        (
            alpha_ok and not math.isfinite(z_two_sided(alpha)),
            "--alpha",
            f"{alpha!r} is too small: its normal quantile z_(1−α/2) is not a finite number",
        ),
        (not 0 < power < 1, "--power", "must be in (0, 1)"),
        (
            alpha_ok and 0 < power <= alpha,
            "--power",
            f"must be above --alpha ({alpha:g}): a two-sided test at level α rejects with "
            "probability α when B equals A and more when they differ, so no design has "
            "power at or below α",
        ),
        (trials < 1, "--trials", "must be at least 1"),
        (
            correlation is not None and not -1 <= correlation <= 1,
            "--correlation",
            "must be in [-1, 1]",
        ),
        (
            within_share is not None and not 0 <= within_share <= 1,
            "--within-share",
            "must be in [0, 1]",
        ),
        (tasks is not None and tasks < 1, "--tasks", "must be at least 1"),
        (delta is None and tasks is None, "--delta", "give --delta D, or --tasks N for the MDE"),
        (
            delta is not None and tasks is not None,
            "--tasks",
            "--delta D asks how many tasks detect D, --tasks N what N tasks can detect: give one",
        ),
        (
            delta is not None and not 0 < abs(delta) < 1,
            "--delta",
            "must be a non-zero difference B − A in (−1, 1) (negative: B worse than A)",
        ),
        (pilot_b is not None and pilot is None, "--pilot-b", "needs --pilot"),
        (pilot is None and baseline is None, "--baseline", "give --baseline P or --pilot SOURCE"),
        (
            pilot is not None and baseline is not None,
            "--baseline",
            "--pilot SOURCE measures the variance (and rate) that --baseline P assumes, "
            "and the pilot would win: give one of them",
        ),
        (
            pilot_b is not None and correlation is not None,
            "--correlation",
            "--pilot-b measures how the two systems' task rates go together (ω² from their "
            "paired differences), and the pilots would win: drop --correlation",
        ),
        (baseline is not None and not 0 <= baseline <= 1, "--baseline", "must be in [0, 1]"),
    ]
    for bad, name, why in checks:
        if bad:
            raise InputError(why, field=name)
    r = 0.0 if correlation is None else correlation
    try:
        if pilot is not None:
            return _from_pilot(
                pilot,
                pilot_b,
                delta=delta,
                tasks=tasks,
                trials=trials,
                correlation=r,
                within_share=within_share,
                alpha=alpha,
                power=power,
            )
        assert baseline is not None
        result = plan_from_assumptions(
            baseline,
            delta=None if tasks is not None else delta,
            tasks=tasks,
            trials=trials,
            correlation=r,
            within_share=DEFAULT_WITHIN_SHARE if within_share is None else within_share,
            alpha=alpha,
            power=power,
        )
        # Say where the share came from, beside it: the user's, or the assumed default.
        inputs: dict[str, Any] = {}
        for key, value in (result.inputs or {}).items():
            inputs[key] = value
            if key == "within_share":
                inputs["within_share_source"] = (
                    "default" if within_share is None else "--within-share"
                )
        return dataclasses.replace(result, inputs=inputs)
    except ValueError as exc:
        raise InputError(str(exc), field="--delta" if delta is not None else "--tasks") from exc


# --------------------------------------------------------------------------- grade


def regrade(
    source: str | PathLike[str],
    graders: str | Sequence[str] | None = None,
    *,
    store: str | Path | None = None,
    activate: bool = False,
) -> RegradeResult:
    """``agentgauge grade``: re-grade a stored run's transcripts as a new grade
    version (`agentgauge.graders.regrade.regrade`). ``source`` is ``DB:RUN_ID``,
    a store that holds exactly one run, or (with ``store``) a run id. ``graders``
    names the graders (text is split at its commas, as ``--graders`` is; default, and
    ``None``: each task's enabled code graders). An empty list is refused, as
    ``--graders ''`` is: it re-graded with the defaults, a version nobody asked for. The
    run reports the new version only with ``activate``."""
    from agentgauge.graders.regrade import regrade as regrade_run
    from agentgauge.store.database import write_follows

    names = (
        [g.strip() for g in graders.split(",") if g.strip()]
        if isinstance(graders, str)
        else _items(graders)
    )
    if graders is not None and not names:
        # An empty list (a shell variable that was not set) is not "the defaults".
        raise InputError(
            "names no grader; leave --graders out for each task's enabled code graders",
            field="--graders",
        )
    with write_follows():  # a store holding one run is read to find it
        db_path, run_id = _stored_run(source, store)
    try:
        return regrade_run(db_path, run_id, names or None, activate=activate)
    except InputError as exc:
        if exc.field != "graders":
            raise
        # The re-grade names its parameter; say the option, as the command does.
        raise InputError(exc.reason, file=exc.file, line=exc.line, field="--graders") from None


def activate_grade_version(
    source: str | PathLike[str], version: int, *, store: str | Path | None = None
) -> list[GradeVersion]:
    """``agentgauge grade --activate-version N``: make grade version ``version``
    (1 = as recorded) what the stored run reports; returns the run's versions. A run
    another session is writing is refused (`agentgauge.store.claims.RunClaimed`)."""
    from agentgauge.store import Store
    from agentgauge.store.claims import AGAIN, refuse_claimed
    from agentgauge.store.database import write_follows

    with write_follows():  # a store holding one run is read to find it
        db_path, run_id = _stored_run(source, store)
    with Store(db_path, create=False) as db:
        db.require_run(run_id)
        refuse_claimed(db.conn, run_id, then=AGAIN)  # at once, before waiting for a lock
        with db.transaction():  # no session claims the run before the change lands
            refuse_claimed(db.conn, run_id, then=AGAIN)
            db.activate_grade_version(run_id, version)
        return db.grade_versions(run_id)


def grade_versions(
    source: str | PathLike[str], *, store: str | Path | None = None
) -> list[GradeVersion]:
    """The grade versions of a stored run, oldest first, the active one marked."""
    from agentgauge.store import Store

    db_path, run_id = _stored_run(source, store)
    with Store(db_path, readonly=True) as db:
        db.require_run(run_id)
        return db.grade_versions(run_id)


def _stored_run(source: str | PathLike[str], store: str | Path | None) -> tuple[Path, str]:
    """The store and run ``grade`` works on: a whole run, so a ``#...`` selector (which
    picks trials or a grade version for reading) is refused rather than ignored (it
    used to re-grade every trial of the run)."""
    from agentgauge.sources import resolve_run, source_text, split_selector

    source = source_text(source)
    _, selector = split_selector(source)
    if not selector.empty:
        raise InputError(
            "grade works on a whole stored run: leave the #... selector out (a re-grade is "
            "a new grade version of every trial; pick versions with --activate-version N)",
            file=source,
            field="SOURCE",
        )
    if store is not None:
        from agentgauge.store import check_store_path

        check_store_path(store)
    if store is not None and not Path(source).exists() and ":" not in source:
        return Path(store), source
    return resolve_run(source)


# --------------------------------------------------------------------------- calibrate


def calibrate(
    labels: str | Path,
    *,
    judge: str | Path | None = None,
    judge_rater: str = "judge",
    against: str | Sequence[str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """``agentgauge calibrate``: judge-versus-human agreement from a labels file
    (JSONL or CSV with a ``rater`` column), with the judge's labels in it or in
    a separate ``judge`` file (`agentgauge.graders.calibration.calibrate` gives
    the figures). ``against`` names the human raters (one as a string; default:
    all). A judge label for an item the labels file already has from the judge is an
    error naming its line."""
    from agentgauge.graders.calibration import calibrate as calibrate_labels
    from agentgauge.graders.human import load_labels

    n_boot, seed = whole_number(n_boot, "--bootstrap"), whole_number(seed, "--seed")
    humans = _items(against)
    if against is not None and not humans:
        # An empty list (a shell variable that was not set) is not "every human rater".
        raise InputError(
            "names no rater; leave --against out to compare the judge with every human rater",
            field="--against",
        )
    found = load_labels(labels)
    if judge is not None:
        extra = load_labels(judge, rater=judge_rater)
        clash = {(*lb.item, lb.kind, lb.order) for lb in found if lb.rater == judge_rater}
        for lb in extra:
            if (*lb.item, lb.kind, lb.order) in clash:
                raise InputError(
                    f"the judge already labelled this item in {labels}",
                    file=judge,
                    line=lb.line,
                    field="task_id",
                )
        found = [*found, *extra]
    return calibrate_labels(
        found,
        judge_rater=judge_rater,
        humans=humans or None,
        n_boot=n_boot,
        seed=seed,
        source=str(labels),
    )
