"""Release gates: thresholds on metrics that decide a CI job (``agentgauge gate``).

A gate config is YAML::

    deployment_k: 4            # optional: what `pass_hat_k` means without a k
    variants: [base]           # optional: which variants' trials count (default base; [all])
    gates:
      - metric: success_rate   # dotted path into a `metrics --json` group
        min: 0.70
        bound: ci_lower        # value (default) | ci_lower | ci_upper
      - metric: pass_hat_k     # pass^k at the deployment k
        min: 0.50
      - metric: cost.cost_of_pass
        max: 2.00
      - type: non_inferiority  # needs --baseline
        margin: 0.03
      - type: no_blocking_failures

Every gate applies to every group the metrics report (optionally filtered
with ``where: {agent: ..., variant: ...}``), and must hold for each. A metric
that is ``null`` (undefined, price missing...) fails its gate with the reason the
metrics record: a gate that cannot be checked must not pass silently.
``no_blocking_failures`` passes only when every rubric-graded trial had its blocking
criteria decided (`blocking_check`).

`validate_gate_config` is the one check of a config, whatever its form (a gates
file, its dict form, a `GateConfig` built in Python, the pytest plugin's
``.check`` and marker): a gate that could never mean what it says (a metric the
metrics never hold, a bound that cannot be met, a setting its type ignores) is
refused before anything runs, naming file, line and field.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentgauge.errors import InputError
from agentgauge.report.formats import counted
from agentgauge.schema import json_int, json_number
from agentgauge.spelling import quoted
from agentgauge.table import GROUP_KEYS
from agentgauge.textio import is_digits
from agentgauge.yamlio import line_of, load_yaml, validate_yaml

if TYPE_CHECKING:
    import yaml

    from agentgauge.schema import Trial

__all__ = [
    "K_METRICS",
    "BlockingCheck",
    "Gate",
    "GateConfig",
    "GateResult",
    "blocking_check",
    "evaluate_gates",
    "gate_config",
    "gate_defect",
    "gate_ks",
    "known_metric",
    "load_gate_config",
    "metric_paths",
    "reads_behaviour",
    "validate_gate_config",
]


class Gate(BaseModel):
    """One gate."""

    # A bound of NaN fails every check, and one of infinity passes every check.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    type: Literal["threshold", "non_inferiority", "no_blocking_failures"] = "threshold"
    """What kind of check this is."""
    name: str | None = None
    """Label shown in the output (default: derived from the check)."""
    metric: str | None = None
    """Dotted path into a metrics group: ``success_rate``, ``pass_hat_k.4``,
    ``cost.cost_of_pass``, ``latency_s.p95``, ``outcome_consistency``..."""
    min: float | None = None
    """The value must be at least this."""
    max: float | None = None
    """The value must be at most this."""
    bound: Literal["value", "ci_lower", "ci_upper"] = "value"
    """Check the point value or a bound of its 95% CI (for metrics that have one)."""
    margin: float | None = Field(default=None, ge=0, le=1)
    """Non-inferiority margin δ: B may be worse than the baseline by at most δ."""
    where: dict[str, str] = Field(default_factory=dict)
    """Only groups whose labels match (``agent``, ``model``, ``variant``)."""

    # YAML's `true` would be read as 1 and "0.5" as 0.5: a bound must be written as a number.
    _numbers = field_validator("min", "max", "margin", mode="before")(json_number)

    @model_validator(mode="after")
    def _check(self) -> Gate:
        if self.type == "threshold":
            if not self.metric:
                raise ValueError("a threshold gate needs 'metric'")
            if self.min is None and self.max is None:
                raise ValueError("a threshold gate needs 'min' or 'max'")
        if self.type == "non_inferiority" and self.margin is None:
            raise ValueError("a non_inferiority gate needs 'margin'")
        return self

    def label(self, deployment_k: int | None) -> str:
        if self.name:
            return self.name
        if self.type == "non_inferiority":
            return f"non-inferiority (margin {_written(self.margin or 0.0)})"
        if self.type == "no_blocking_failures":
            return "no blocking rubric criterion failed"
        metric = _resolve_metric_name(self.metric or "", deployment_k)
        bound = "" if self.bound == "value" else f" [{self.bound}]"
        limits = " and ".join(
            s
            for s in (
                None if self.min is None else f">= {_written(self.min)}",
                None if self.max is None else f"<= {_written(self.max)}",
            )
            if s
        )
        return f"{metric}{bound} {limits}"


class GateConfig(BaseModel):
    """A gates file."""

    model_config = ConfigDict(extra="forbid")

    deployment_k: int | None = Field(default=None, ge=1)
    """The k that bare ``pass_hat_k``/``pass_at_k`` refer to."""
    variants: list[str] = Field(default_factory=lambda: ["base"])
    """Which variants' trials the gates read: ``[base]`` by default (perturbed trials
    are for robustness, not the headline); ``[all]`` for every trial."""
    gates: list[Gate] = Field(min_length=1)
    """The checks; all must pass."""

    _k = field_validator("deployment_k", mode="before")(json_int)

    @field_validator("variants")
    @classmethod
    def _some_variants(cls, variants: list[str]) -> list[str]:
        # `[]` read no trial: every gate failed with "no group matches 'where'".
        if not variants:
            raise ValueError(
                "names no variant: write [base] (the default), names or kinds, or [all]"
            )
        return variants


@dataclass(frozen=True)
class GateResult:
    """The outcome of one gate on one group."""

    gate: str
    group: str
    passed: bool
    detail: str
    checked: bool = True
    """False for a gate that was not evaluated (a non-inferiority gate with no baseline
    yet, when the caller allowed that); ``passed`` is then True so it does not block,
    and every display says it was not checked."""


@dataclass(frozen=True)
class BlockingCheck:
    """What the trials' rubric grades say of their blocking criteria (`blocking_check`)."""

    graded: int
    """Trials with a rubric grade."""
    failed: int
    """Trials with a blocking criterion answered "no"."""
    checked: int
    """Trials whose blocking criteria were all decided (those that failed included)."""
    undecided: int
    """Trials, none failed, with a criterion left unknown that is (or may be) blocking."""
    no_rubric: int = 0
    """Trials whose task has no rubric (no judge was asked): nothing to check on them."""
    no_blocking: int = 0
    """Trials whose rubric has no blocking criterion: nothing to check on them either."""
    causes: tuple[tuple[str, int], ...] = ()
    """The statuses of the undecided blocking criteria, with their counts, most first."""

    def result(self, label: str, group: str = "all trials") -> GateResult:
        """The gate's line: fails on a blocking failure anywhere; cannot check while a
        blocking criterion is undecided, or when no trial's rubric has a blocking
        criterion it decided (a check that checked nothing does not pass). ``group``:
        which trials were read, as the line names them."""
        if self.failed:
            more = (
                f"; on {self.undecided} more a blocking criterion is undecided"
                if self.undecided
                else ""
            )
            return GateResult(
                label,
                group,
                False,
                f"{self.failed} of {counted(self.graded, 'trial')} failed a blocking "
                f"criterion{more}",
            )
        if self.undecided:
            causes = ", ".join(f"{status} × {n}" for status, n in self.causes)
            rest = f"; none failed on the other {self.checked}" if self.checked else ""
            return GateResult(
                label,
                group,
                False,
                f"cannot check: a blocking criterion is undecided on {self.undecided} of "
                f"{counted(self.graded, 'trial')} ({causes}){rest}",
            )
        if not self.checked and self.no_blocking:
            return GateResult(
                label,
                group,
                False,
                "cannot check: no trial's rubric has a blocking criterion, so none of the "
                f"{counted(self.graded, 'rubric-graded trial')} could fail one",
            )
        if not self.checked:
            return GateResult(
                label,
                group,
                False,
                "cannot check: the "
                + (
                    "task of the one rubric-graded trial has"
                    if self.graded == 1
                    else f"tasks of all {self.graded} rubric-graded trials have"
                )
                + " no rubric (unknown:no_rubric): no judge was asked",
            )
        return GateResult(
            label, group, True, f"0 of {counted(self.checked, 'trial')} failed a blocking criterion"
        )


def blocking_check(trials: Iterable[Trial]) -> BlockingCheck | None:
    """Count the trials whose rubric (grade ``rubric``) failed a blocking criterion,
    decided all of them, or left one undecided; ``None`` when no trial has a rubric
    grade. A criterion left unknown counts as blocking unless its grade says it is
    not (``evidence.blocking``): the judge's unparseable answer on a blocking
    criterion is not a pass."""
    graded = failed = checked = undecided = no_rubric = no_blocking = 0
    causes: Counter[str] = Counter()
    for trial in trials:
        rubric = [g for g in trial.grades if g.grader == "rubric"]
        if not rubric:
            continue
        graded += 1
        # Each criterion's own grade (`rubric:<id>`), where its blocking flag is recorded.
        own = {
            g.grader.removeprefix("rubric:"): g
            for g in trial.grades
            if g.grader.startswith("rubric:")
        }
        state = "no_rubric"
        pending: list[str] = []
        for grade in rubric:
            evidence = grade.evidence if isinstance(grade.evidence, dict) else {}
            if evidence.get("blocking_failed"):
                state = "failed"
                break
            criteria = evidence.get("criteria")
            if not isinstance(criteria, list):
                pending.append(grade.status or "unknown")  # nothing says what was decided
                continue
            for item in _undecided_blocking(criteria, evidence.get("unknown"), own):
                pending.append(item or grade.status or "unknown")
            if any(_blocking_flag(item, own) is True for item in criteria):
                state = "checked"
            elif criteria and state == "no_rubric":
                # Criteria that are all non-blocking (a flag not recorded is not read as
                # blocking here): decided or not, no blocking failure could be seen.
                state = "no_blocking"
        if state == "failed":
            failed += 1
            checked += 1
        elif pending:
            undecided += 1
            causes.update(pending)
        elif state == "checked":
            checked += 1
        elif state == "no_blocking":
            no_blocking += 1
        else:
            no_rubric += 1
    if not graded:
        return None
    return BlockingCheck(
        graded,
        failed,
        checked,
        undecided,
        no_rubric=no_rubric,
        no_blocking=no_blocking,
        causes=tuple(causes.most_common()),
    )


def _blocking_flag(item: Any, own: Mapping[str, Any]) -> bool | None:
    """A rubric criterion's ``blocking`` flag as its grade records it (in the criterion's
    evidence, or its own ``rubric:<id>`` grade); ``None`` when not recorded."""
    if not isinstance(item, dict):
        return None
    evidence = item.get("evidence")
    blocking = (evidence if isinstance(evidence, dict) else item).get("blocking")
    if blocking is None:
        cid = str(item.get("id") or str(item.get("grader", "")).removeprefix("rubric:"))
        if cid in own and isinstance(own[cid].evidence, dict):
            blocking = own[cid].evidence.get("blocking")
    return blocking if isinstance(blocking, bool) else None


def _undecided_blocking(
    criteria: list[Any], unknown: Any, own: Mapping[str, Any]
) -> list[str | None]:
    """The status (``None`` when not recorded) of each criterion in a rubric grade's
    evidence that was left unknown and is, or may be, blocking."""
    out: list[str | None] = []
    ids = {str(u) for u in unknown} if isinstance(unknown, list) else set()
    for item in criteria:
        if not isinstance(item, dict):
            continue
        cid = str(item.get("id") or str(item.get("grader", "")).removeprefix("rubric:"))
        decided = item.get("passed", item.get("verdict")) is not None and cid not in ids
        if decided:
            continue
        if _blocking_flag(item, own) is not False:
            status = item.get("status")
            out.append(str(status) if status else None)
    return out


def load_gate_config(path: str | Path) -> GateConfig:
    """Read and validate a gates YAML file (errors name file, line and field)."""
    data, node = load_yaml(path)
    return validate_gate_config(data, file=path, node=node)


def gate_config(spec: GateConfig | Mapping[str, Any] | str | PathLike[str]) -> GateConfig:
    """A gate config in any form the Python callers take — a gates file's path, its
    dict form (errors name ``<gates>``), a `GateConfig` — checked by
    `validate_gate_config`; anything else is `InputError` naming ``--config`` (a dict
    was read as a path: "TypeError: expected str, bytes or os.PathLike object")."""
    if isinstance(spec, GateConfig):
        return validate_gate_config(spec)
    if isinstance(spec, Mapping):
        return validate_gate_config(spec, file="<gates>")
    if isinstance(spec, str | PathLike):
        return load_gate_config(Path(spec))
    raise InputError(
        f"expected a gates file (a path), its dict form or a GateConfig, got {type(spec).__name__}",
        field="--config",
    )


def validate_gate_config(
    config: GateConfig | Mapping[str, Any] | Any,
    *,
    file: str | Path | None = None,
    node: yaml.Node | None = None,
) -> GateConfig:
    """``config`` (a gates file's content, its dict form, or a `GateConfig`) checked as
    `agentgauge gate` checks it, or `InputError` naming the field (and, given the YAML
    ``node`` it was read from, the line): the keys and types, then `gate_defect` of
    every gate. The one check for the CLI, the API and the pytest plugin."""
    if not isinstance(config, GateConfig):
        if not isinstance(config, Mapping):
            line = None if node is None else 1
            raise InputError("expected a mapping with a 'gates' list", file=file, line=line)
        config = validate_yaml(GateConfig, dict(config), node, file=file)
    for i, gate in enumerate(config.gates):
        defect = gate_defect(gate, config.deployment_k)
        if defect is not None:
            key, reason = defect
            line = line_of(node, ("gates", i, key)) if node is not None else None
            raise InputError(reason, file=file, line=line, field=f"gates.{i}.{key}")
    return config


#: A group's labels, not metrics.
_LABELS = ("agent", "model", "variant", "cluster_unit")

#: Metrics that are rates in [0, 1]: a bound outside it can never be met (or always is).
_RATES = ("success_rate", "pass_at_k", "pass_hat_k", "outcome_consistency")
#: The behaviour sections' rates and shares, by path (``*``: any key), the same rule.
#: Counts (``control.counts``, the confusion matrix), ``recovery.recovery_ratio`` (a
#: ratio of two rates) and severities are not among them.
_RATE_PATHS = (
    "control.accuracy",
    "control.missed_confirmation",
    "control.over_refusal",
    "control.under_refusal",
    "control.unnecessary_ask",
    "control.per_state.*.precision",
    "control.per_state.*.recall",
    "recovery.with_tool_error",
    "recovery.recovered",
    "recovery.success_with_recovery",
    "recovery.success_without_recovery",
    "recovery.*.value",
    "tool_use.action_precision",
    "tool_use.action_recall",
    "tool_use.ast_match_rate.per_task",
    "tool_use.ast_match_rate.per_trial",
    "tool_use.irrelevance_pass_rate",
    "tool_use.milestone_score",
    "tool_use.minefield_hit_rate",
    "tool_use.trajectory_match_rate.*",
)


def is_rate(metric: str) -> bool:
    """Whether a gate's metric path is a rate or share in [0, 1]."""
    if metric.partition(".")[0] in _RATES:
        return True
    parts = metric.split(".")
    return any(
        len(p) == len(parts) and all(a in (_ANY, b) for a, b in zip(p, parts, strict=True))
        for p in (q.split(".") for q in _RATE_PATHS)
    )


#: What each kind of gate reads besides ``type`` and ``name``: any other key set on it
#: would be ignored, so it is refused (a margin on a threshold gate did nothing).
_KEYS = {
    "threshold": ("metric", "min", "max", "bound", "where"),
    "non_inferiority": ("margin",),
    "no_blocking_failures": (),
}


def gate_defect(gate: Gate, deployment_k: int | None) -> tuple[str, str] | None:
    """What is wrong with a gate that its model alone does not catch, as ``(key, reason)``:
    a setting its type ignores, bounds no value can meet or every value meets (``min``
    above ``max``, a rate's bound outside [0, 1], a bound below 0: no figure is
    negative), a metric the metrics never
    hold (a typo, named with the nearest metric), a per-k metric with no k. Each used to
    load and then fail, or pass, when the gate ran, naming no line."""
    for key in ("metric", "min", "max", "bound", "where", "margin"):
        if key in gate.model_fields_set and key not in _KEYS[gate.type]:
            if gate.type == "threshold":
                return key, "a margin is for a non_inferiority gate; a threshold gate has min/max"
            return key, f"a {gate.type} gate takes no {key!r}" + (
                " (only 'margin')" if gate.type == "non_inferiority" else ""
            )
    for key in gate.where:
        if key not in GROUP_KEYS:
            near = difflib.get_close_matches(key, GROUP_KEYS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            return "where", (
                f"cannot select groups by {key!r}{hint} (a group's labels: {', '.join(GROUP_KEYS)})"
            )
    if gate.type != "threshold" or not gate.metric:
        return None
    if gate.min is not None and gate.max is not None and gate.min > gate.max:
        return (
            "min",
            f"min {_written(gate.min)} is above max {_written(gate.max)}: no value can pass",
        )
    head, dot, tail = gate.metric.partition(".")
    if head in K_METRICS:
        if dot and not (is_digits(tail) and int(tail) >= 1):
            return "metric", f"{head} takes a k of 1 or more: {head}.K, got {gate.metric!r}"
        if not dot and deployment_k is None:
            return "metric", f"{gate.metric!r} needs a k: write {gate.metric}.K or set deployment_k"
    elif not known_metric(gate.metric):
        names = sorted(metric_paths() | set(K_METRICS))
        near = difflib.get_close_matches(gate.metric, names, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else " (docs/metrics.md lists them)"
        return "metric", f"unknown metric {gate.metric!r}{hint}"
    if gate.bound != "value" and not has_interval(gate.metric):
        with_ci = sorted(_engine_paths()[2])
        return "bound", (
            f"{gate.metric} has no confidence interval to take the {gate.bound} of "
            f"(those with one: {', '.join(with_ci)}); gate its value"
        )
    if is_rate(gate.metric):
        name = head if head in _RATES else gate.metric
        for key, bound in (("min", gate.min), ("max", gate.max)):
            if bound is not None and not 0 <= bound <= 1:
                return (
                    key,
                    f"{name} is a rate in [0, 1]; a {key} of {_written(bound)} cannot be meant",
                )
    # Every other figure a group holds is an amount, a time, a count or a ratio of them,
    # never negative: a max below 0 (`max_cost_of_pass=-1`, `latency_s.p95` `max: -3`)
    # loaded and failed every run, and a min below 0 passed every value.
    if gate.max is not None and gate.max < 0:
        return (
            "max",
            f"{gate.metric} is at least 0; a max of {_written(gate.max)}: no value can pass",
        )
    if gate.min is not None and gate.min < 0:
        return (
            "min",
            f"{gate.metric} is at least 0; a min of {_written(gate.min)} passes every value, "
            "so the gate checks nothing (min: 0 asks only that it was measured)",
        )
    return None


#: Maps keyed by what the data hold (an error type, a trajectory mode, a grader's name),
#: not by the engine: a gate may name any key there (``recovery.error_types.timeout.in_failed``).
_KEYED_BY_DATA = (
    "tool_use.error_types",
    "tool_use.trajectory_match_rate",
    "tool_use.n_unknown",
    "recovery.error_types",
)
_ANY = "*"


def metric_paths() -> frozenset[str]:
    """Every path a threshold gate can read in a group of ``agentgauge.metrics/1``
    (``success_rate``, ``cost.cost_of_pass``, ``control.accuracy``...), with ``*`` for a
    key the data choose (``tool_use.error_types.*``). Per-k metrics (`K_METRICS`) are
    apart. See `_engine_paths`."""
    return _engine_paths()[0]


def known_metric(path: str) -> bool:
    """Whether ``path`` is one of `metric_paths` (a ``*`` there matching any key)."""
    paths = metric_paths()
    if path in paths:
        return True
    parts = path.split(".")
    return any(
        len(p) == len(parts) and all(a in (_ANY, b) for a, b in zip(p, parts, strict=True))
        for p in (q.split(".") for q in paths if _ANY in q)
    )


def reads_behaviour(config: GateConfig) -> bool:
    """Whether a gate of ``config`` reads a section that needs the trials' transcripts
    and grades (``tool_use``, ``control``, ``recovery``, ``turns``)."""
    sections = _engine_paths()[1]
    return any(
        g.type == "threshold" and (g.metric or "").partition(".")[0] in sections
        for g in config.gates
    )


@functools.cache
def _engine_paths() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The paths of a metrics group, the heads of its behaviour sections, and the
    paths of the figures that carry a 95% interval (``ci95``), taken from the engine's
    own metrics of `_sample_trials` (whose every section has a value), so that the
    lists are the engine's, whatever it adds later."""
    from agentgauge.metrics.behaviour import behaviour_by_group, behaviour_columns
    from agentgauge.metrics.engine import compute_metrics

    table, facts = behaviour_columns(_sample_trials())
    outcome = compute_metrics(table, k=(1,), by=())
    behaviour = behaviour_by_group((table, facts), ())
    [group] = dataclasses.replace(outcome, behaviour=behaviour).to_dict()["groups"]
    paths: set[str] = set()
    with_ci: set[str] = set()

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if key == "null_reasons" or (not prefix and (key in _LABELS or key in K_METRICS)):
                continue
            if path in _KEYED_BY_DATA and isinstance(value, dict):
                walk({_ANY: next(iter(value.values()), None)}, f"{path}.")
            elif isinstance(value, dict):
                if "value" in value:
                    paths.add(path)
                    if "ci95" in value:
                        with_ci.add(path)
                walk(value, f"{path}.")
            elif value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
                paths.add(path)

    walk(group, "")
    heads = {key for extra in behaviour.values() for key in extra if key != "null_reasons"}
    return frozenset(paths), frozenset(heads), frozenset(with_ci)


def has_interval(path: str) -> bool:
    """Whether the figure at ``path`` carries a 95% interval a gate's ``bound`` can
    read (``success_rate``...); per-k metrics and plain numbers carry none."""
    if path.partition(".")[0] in K_METRICS:
        return False
    return path in _engine_paths()[2]


def _sample_trials() -> list[Trial]:
    """Two trials with every figure a group can report: prices, latencies, tokens and
    counts; a control decision; a grade of every grader the behaviour sections read;
    a tool error recovered in one and not in the other."""
    from agentgauge.schema import Trial

    events: list[dict[str, Any]] = [
        {"type": "message", "role": "assistant", "content": "on it"},
        {"type": "tool_call", "name": "lookup", "call_id": "1"},
        {"type": "tool_result", "call_id": "1", "content": "rate limit", "is_error": True},
        {"type": "tool_call", "name": "lookup", "call_id": "2"},
        {"type": "tool_result", "call_id": "2", "content": "found"},
    ]
    grades: list[dict[str, Any]] = [
        {"grader": "tool_calls", "passed": False, "status": "wrong_arguments"},
        {"grader": "trajectory", "passed": True, "evidence": {"mode": "in_order",
                                                               "precision": 1.0, "recall": 1.0}},
        {"grader": "milestones", "passed": True, "score": 1.0},
        {"grader": "minefields", "passed": False, "evidence": {"max_severity": 1.0,
                                                               "hits": [{"severity": 1.0}]}},
        {"grader": "control", "passed": True, "evidence": {"irreversible_calls": 1,
                                                           "unconfirmed_irreversible": 0}},
        {"grader": "checkpoints", "passed": True,
         "evidence": {"checkpoints": [{"turn": 1, "verdict": "pass"}]}},
    ]  # fmt: skip
    common: dict[str, Any] = {
        "cost_usd": 0.01, "judge_cost_usd": 0.001, "input_tokens": 10, "output_tokens": 2,
        "latency_s": 1.0, "tool_calls": 2, "model_calls": 1, "expected_control": "act",
        "control": "act", "grades": grades,
    }  # fmt: skip
    return [
        Trial.model_validate({"task_id": "a", "success": True, "events": events, **common}),
        Trial.model_validate({"task_id": "b", "success": False, "events": events[:3], **common}),
    ]


#: Metrics reported per k (``pass_hat_k.4``); bare, they mean the deployment k.
K_METRICS = ("pass_at_k", "pass_hat_k", "pass_at_k_se", "pass_hat_k_se")


def _resolve_metric_name(metric: str, deployment_k: int | None) -> str:
    """The path a gate reads: a bare per-k metric gets the deployment k."""
    head, dot, tail = metric.partition(".")
    if head not in K_METRICS:
        return metric
    if not dot:
        if deployment_k is None:
            raise InputError(
                f"'{metric}' needs a k: write {metric}.K or set deployment_k", field="metric"
            )
        return f"{metric}.{deployment_k}"
    if is_digits(tail) and int(tail) >= 1:
        return f"{head}.{int(tail)}"  # the key the metrics object uses ("04" is "4")
    return metric


def gate_ks(config: GateConfig) -> set[int]:
    """Every k the gates of ``config`` read, so the metrics are computed at each:
    the deployment k and the k of every per-k metric path (``pass_hat_k_se.3``).
    The one rule for ``agentgauge gate`` and the pytest plugin."""
    ks = {config.deployment_k} if config.deployment_k is not None else set()
    for gate in config.gates:
        if gate.type != "threshold" or not gate.metric:
            continue
        head, _, tail = _resolve_metric_name(gate.metric, config.deployment_k).partition(".")
        if head in K_METRICS and is_digits(tail):
            ks.add(int(tail))
    return ks


def _lookup(group: dict[str, Any], path: str) -> Any:
    """The node at ``path``; ``None`` when a section on the way is null (a group with
    no control decisions has ``control: null``); `KeyError` when it is not there."""
    node: Any = group
    for part in path.split("."):
        if node is None:
            return None
        if not isinstance(node, dict) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def _null_reason(group: dict[str, Any], path: str) -> str | None:
    """Why ``path`` is null: the reason the metrics record for it, else for the nearest
    section that holds it (``latency_s.p95`` is null because of ``latency_s``: "no
    trial records a latency")."""
    reasons = group.get("null_reasons") or {}
    parts = path.split(".")
    section = group.get(parts[0])
    own = section.get("null_reasons") if isinstance(section, dict) else None
    for n in range(len(parts), 0, -1):
        reason = reasons.get(".".join(parts[:n]))
        if reason is None and isinstance(own, dict) and n > 1:
            # A section's own reasons (control.per_state.stop.precision), by its names.
            reason = own.get(".".join(parts[1:n]))
        if reason is not None:
            return str(reason)
        if n == 2 and parts[0] == "success_rate" and parts[1] in reasons:
            # The success rate's own figures are keyed by their names: "se", "ci95".
            return str(reasons[parts[1]])
    if len(parts) == 2 and parts[0] in ("pass_at_k_se", "pass_hat_k_se"):
        # No pass@k, no SE of it: the metrics give the reason once, for the value.
        return _null_reason(group, f"{parts[0].removesuffix('_se')}.{parts[1]}")
    return None


def _metric_value(group: dict[str, Any], metric: str, bound: str) -> tuple[float | None, str]:
    """The number a gate checks, or None with why."""
    try:
        node = _lookup(group, metric)
    except KeyError:
        if not known_metric(metric):
            raise InputError(f"unknown metric {metric!r}", field="metric") from None
        # A key the data choose (an error type no trial had), or a section this source
        # cannot have: there is nothing to check, and the gate fails.
        return None, f"{metric} is not in the metrics of these trials"
    if node is None:  # the figure, or a section on the way to it, is null
        return None, _null_reason(group, metric) or f"{metric} is null"
    if isinstance(node, dict):
        if bound != "value":
            ci = node.get("ci95")
            if not ci:
                why = _null_reason(group, f"{metric}.ci95")
                return None, f"{metric} has no confidence interval" + (f": {why}" if why else "")
            return ci[0 if bound == "ci_lower" else 1], ""
        node = node.get("value")
    elif bound != "value":
        return None, f"{metric} has no confidence interval"
    if node is None:
        return None, _null_reason(group, metric) or f"{metric} is null"
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise InputError(f"metric {metric!r} is not a number", field="metric")
    return float(node), ""


def _is_se(metric: str) -> bool:
    """Whether ``metric`` is a standard error across tasks (or families): ``success_rate.
    se``, ``success_rate.se_clustered``, ``pass_hat_k_se.4``, ``recovery.recovered.se``."""
    parts = metric.split(".")
    return parts[0] in ("pass_at_k_se", "pass_hat_k_se") or parts[-1] in ("se", "se_clustered")


def _no_spread(metric: str) -> str:
    """Why an SE of 0 is no measurement (docs/metrics.md, "No spread, no ± 0"): every
    task (or family) has the same value, so there is no spread to estimate an SE from,
    which says nothing of how precise the figure is. A `max` on it passed as if the
    figure were exact (eight tasks all passing: ``success_rate.se = 0``)."""
    alike = (
        "every family has the same rate (families alike)"
        if metric.endswith("se_clustered")
        else "every task has the same value"
    )
    read = (
        "; gate its 95% interval instead (success_rate with bound: ci_lower or ci_upper)"
        if metric.split(".")[0] == "success_rate"
        else ""
    )
    return (
        f"{metric} is 0: {alike}, so there is no spread to estimate a standard error from, "
        f"which says nothing of how precise the figure is{read}"
    )


def _written(bound: float) -> str:
    """A gate's bound as the file wrote it: ``30`` for 30.0, else the shortest text
    that reads back as the same number (``0.7500001``; ``:g`` showed 0.75)."""
    return str(int(bound)) if bound.is_integer() and abs(bound) < 1e15 else repr(bound)


def _beside(value: float, bounds: Iterable[float], spec: str = "g", digits: int = 4) -> str:
    """``value`` formatted as ``{value:.{p}<spec>}`` (``spec`` "g", or "+f"...) at the
    fewest digits ``p`` from ``digits`` up that read on the same side of every bound as
    ``value`` is, and equal to one only when it is: a latency of 30.004 against
    ``max: 30`` showed as "= 30" on a line that failed."""
    sign, kind = spec[:-1], spec[-1]
    for p in range(digits, 18):
        text = f"{value:{sign}.{p}{kind}}"
        shown = float(text)
        if all((shown > b) - (shown < b) == (value > b) - (value < b) for b in bounds):
            return text
    return repr(value)


def _group_label(group: dict[str, Any]) -> str:
    # Every label the groups are split by (`--by agent,family`): eleven lines reading
    # "agent=builtin:careful, variant=base" could not say which family failed.
    parts = [f"{k}={group[k]}" for k in GROUP_KEYS if group.get(k) is not None]
    return ", ".join(parts) or "all trials"


def _where_label(where: Mapping[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in where.items())


def _listed(values: Iterable[str]) -> str:
    """The first ten of ``values``, quoted as the CLI's lists quote names (`quoted`:
    ``'base '`` and ``'base'`` read apart), and how many more."""
    values = list(values)
    more = f" and {len(values) - 10} more" if len(values) > 10 else ""
    return ", ".join(quoted(values[:10])) + more


def _read_variants(variants: Sequence[str]) -> str | None:
    """Which variants' trials the gates read, as their lines name them (``variants
    'base', 'paraphrase'``); ``None`` for every variant (``[all]``)."""
    if "all" in variants:
        return None
    if list(variants) == ["base"]:
        return "the base variant"
    return f"variants {_listed(variants)}"


def _unmatched(gate: Gate, metrics: dict[str, Any], variants: Sequence[str]) -> str:
    """Why no group matches a gate's ``where``, naming what it asked for: the first
    label no group carries (not among ``--by``, or among it and recorded by no trial) or
    whose value no group has, with the values the groups do have, or, when each value
    is some group's but none has them all, the groups' labels; and the variants the
    gates read when not all (a ``where`` on a variant the config leaves out, or on an
    agent that ran only perturbed trials, said only "they have 'base'")."""
    groups = metrics["groups"]
    by = metrics.get("by")
    head = f"no group matches 'where' ({_labelled(gate.where, gate.where)})"
    read = _read_variants(variants)
    scope = f"; the gates read {read} only (the config's 'variants'; [all] reads every one)"
    scope = scope if read else ""
    for key, value in gate.where.items():
        present = sorted({str(g[key]) for g in groups if g.get(key) is not None})
        if not present:
            if by is not None and key in by:
                # `--by agent,model` on trials that record no model: it is not --by's fault.
                return f"{head}: no trial records a {key}"
            return f"{head}: the groups are not split by {key!r} (add it to --by)"
        if value not in present:
            return f"{head}: no group has that {key} (they have {_listed(present)}){scope}"
    # Each value is some group's, but no group has them all: the groups' labels of the
    # keys asked for show which go together.
    held = list(dict.fromkeys(_labelled(gate.where, g) for g in groups))
    more = f" and {len(held) - 10} more" if len(held) > 10 else ""
    return (
        f"{head}: no group has them all at once (the groups: {'; '.join(held[:10])}{more}){scope}"
    )


def _labelled(keys: Iterable[str], labels: Mapping[str, Any]) -> str:
    """``agent 'careful', variant 'base'``: the ``keys`` of ``labels``, values quoted."""
    keys = list(keys)
    values = quoted(str(labels.get(key)) for key in keys)
    return ", ".join(f"{key} {v}" for key, v in zip(keys, values, strict=True))


def evaluate_gates(
    config: GateConfig,
    metrics: dict[str, Any],
    *,
    comparison: dict[str, Any] | None = None,
    blocking_failures: BlockingCheck | None = None,
) -> list[GateResult]:
    """Check every gate against a ``agentgauge.metrics/1`` object.

    ``comparison`` is an ``agentgauge.compare/1`` object against the baseline
    (needed by non-inferiority gates); ``blocking_failures`` is the `blocking_check`
    of the trials (``None`` when no rubric ran).
    """
    results: list[GateResult] = []
    k = config.deployment_k
    # The variants the gates read (both sides, for a comparison), when not the default base.
    scope = None
    if "all" in config.variants:
        scope = "all variants"
    elif config.variants != ["base"]:
        scope = _read_variants(config.variants)
    versus = "B vs baseline" + (f", {scope}" if scope else "")
    for gate in config.gates:
        label = gate.label(k)
        if gate.type == "non_inferiority":
            if comparison is None:
                raise InputError(
                    "a non_inferiority gate needs a baseline: pass --baseline SOURCE", field="gates"
                )
            assert gate.margin is not None
            ci = comparison.get("ci95")
            if ci is None or ci[0] is None:
                # One shared task (or one family) gives no interval: a gate that cannot
                # be checked fails, it does not pass.
                design = comparison.get("design")
                why = "no interval of the difference" + (f" from {design}" if design else "")
                results.append(GateResult(label, versus, False, f"cannot check: {why}"))
                continue
            units = comparison.get("n_units", comparison.get("n_tasks"))
            if units is not None:
                from agentgauge.metrics.compare import too_few_units

                # The gate reads the 95% interval: a two-sided α of 0.05, a one-sided
                # 0.025 for "not worse by more than δ". With fewer tasks (or families)
                # than the exact sign test needs to reach it, no interval of their
                # trials can show non-inferiority, and the gate fails unchecked.
                few = too_few_units(int(units), str(comparison.get("unit", "tasks")), 0.05)
                if few is not None:
                    design = comparison.get("design")
                    why = f"{design}: {few}" if design else few
                    results.append(GateResult(label, versus, False, f"cannot check: {why}"))
                    continue
            lo = ci[0]
            ok = lo > -gate.margin
            shown = _beside(lo, (-gate.margin,), "+f", 3)
            results.append(
                GateResult(
                    label,
                    versus,
                    ok,
                    f"paired difference {comparison['mean_diff']:+.3f}, 95% CI lower bound "
                    f"{shown} {'>' if ok else '<='} {_written(-gate.margin)}",
                )
            )
            continue
        if gate.type == "no_blocking_failures":
            # The trials of the variants the gates read ("all trials" of the base one
            # read as if of every variant).
            group = f"trials of {scope or 'the base variant'}"
            if blocking_failures is None:
                results.append(
                    GateResult(label, group, False, "cannot check: no rubric grades found")
                )
            else:
                results.append(blocking_failures.result(label, group))
            continue
        metric = _resolve_metric_name(gate.metric or "", k)
        groups = [
            g
            for g in metrics["groups"]
            # A label no trial records is null, which no `where` names ("None" matched it).
            if all(
                g.get(key) is not None and str(g[key]) == value for key, value in gate.where.items()
            )
        ]
        if not groups:
            results.append(
                GateResult(
                    label,
                    _where_label(gate.where),
                    False,
                    _unmatched(gate, metrics, config.variants),
                )
            )
        for group in groups:
            value, why = _metric_value(group, metric, gate.bound)
            name = _group_label(group)
            if scope and group.get("variant") is None:
                # A group pooling several variants has no variant label: "agent=B" alone
                # read as its base trials.
                name += f", {scope}"
            if value is None or not math.isfinite(value):
                results.append(GateResult(label, name, False, f"cannot check: {why}"))
                continue
            if value == 0 and gate.bound == "value" and _is_se(metric):
                results.append(
                    GateResult(label, name, False, f"cannot check: {_no_spread(metric)}")
                )
                continue
            ok = (gate.min is None or value >= gate.min) and (gate.max is None or value <= gate.max)
            what = metric if gate.bound == "value" else f"{metric} {gate.bound}"
            limits = [b for b in (gate.min, gate.max) if b is not None]
            shown = _beside(value, limits)
            results.append(GateResult(label, name, ok, f"{what} = {shown}"))
    return results
