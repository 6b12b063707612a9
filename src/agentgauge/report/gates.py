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
that is ``null`` (undefined, price missing...) fails its gate: a gate that
cannot be checked must not pass silently.
"""

from __future__ import annotations

import difflib
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentgauge.errors import InputError
from agentgauge.yamlio import line_of, load_yaml, validate_yaml

__all__ = [
    "K_METRICS",
    "Gate",
    "GateConfig",
    "GateResult",
    "evaluate_gates",
    "gate_ks",
    "load_gate_config",
]


class Gate(BaseModel):
    """One gate."""

    model_config = ConfigDict(extra="forbid")

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
            return f"non-inferiority (margin {self.margin:g})"
        if self.type == "no_blocking_failures":
            return "no blocking rubric criterion failed"
        metric = _resolve_metric_name(self.metric or "", deployment_k)
        bound = "" if self.bound == "value" else f" [{self.bound}]"
        limits = " and ".join(
            s
            for s in (
                None if self.min is None else f">= {self.min:g}",
                None if self.max is None else f"<= {self.max:g}",
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


def load_gate_config(path: str | Path) -> GateConfig:
    """Read and validate a gates YAML file (errors name file, line and field)."""
    data, node = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError("expected a mapping with a 'gates' list", file=path, line=1)
    config = validate_yaml(GateConfig, data, node, file=path)
    for i, gate in enumerate(config.gates):
        defect = _metric_defect(gate)
        if defect is not None:
            key, reason = defect
            raise InputError(
                reason, file=path, line=line_of(node, ("gates", i, key)), field=f"gates.{i}.{key}"
            )
    return config


#: A group's labels, not metrics.
_LABELS = ("agent", "model", "variant", "cluster_unit")

#: Metrics that are rates in [0, 1]: a bound outside it can never be met (or always is).
_RATES = ("success_rate", "pass_at_k", "pass_hat_k", "outcome_consistency")


def _metric_defect(gate: Gate) -> tuple[str, str] | None:
    """What is wrong with a threshold gate's metric or bounds, as ``(key, reason)``:
    a metric the metrics object does not have (a typo that used to fail only when the
    gate ran, with no line), or a rate's bound outside [0, 1]."""
    if gate.type != "threshold" or not gate.metric:
        return None
    head, dot, tail = gate.metric.partition(".")
    if head in K_METRICS:
        if dot and not (tail.isdigit() and int(tail) >= 1):
            return "metric", f"{head} takes a k of 1 or more: {head}.K, got {gate.metric!r}"
    elif gate.metric not in metric_paths():
        names = sorted(metric_paths() | set(K_METRICS))
        near = difflib.get_close_matches(gate.metric, names, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else " (docs/metrics.md lists them)"
        return "metric", f"unknown metric {gate.metric!r}{hint}"
    if head in _RATES:
        for key, bound in (("min", gate.min), ("max", gate.max)):
            if bound is not None and not 0 <= bound <= 1:
                return key, f"{head} is a rate in [0, 1]; a {key} of {bound:g} cannot be meant"
    return None


@functools.cache
def metric_paths() -> frozenset[str]:
    """Every path a threshold gate can read in a group of ``agentgauge.metrics/1``
    (``success_rate``, ``cost.cost_of_pass``, ``latency_s.p95``...), taken from the
    metrics of two trials so that the list is the engine's own."""
    from agentgauge.metrics.engine import compute_metrics
    from agentgauge.table import TrialTable

    table = TrialTable.from_columns(2, task_id=["a", "b"], success=[True, False])
    [group] = compute_metrics(table, k=(1,), by=()).to_dict()["groups"]
    paths: set[str] = set()

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if key in ("null_reasons", *_LABELS) or path.split(".")[0] in K_METRICS:
                continue
            if isinstance(value, dict):
                if "value" in value:
                    paths.add(path)
                walk(value, f"{path}.")
            elif value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
                paths.add(path)

    walk(group, "")
    return frozenset(paths)


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
    if tail.isdigit() and int(tail) >= 1:
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
        if head in K_METRICS and tail.isdigit():
            ks.add(int(tail))
    return ks


def _lookup(group: dict[str, Any], path: str) -> Any:
    node: Any = group
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def _metric_value(group: dict[str, Any], metric: str, bound: str) -> tuple[float | None, str]:
    """The number a gate checks, or None with why."""
    try:
        node = _lookup(group, metric)
    except KeyError:
        raise InputError(f"unknown metric {metric!r}", field="metric") from None
    if isinstance(node, dict):
        if bound != "value":
            ci = node.get("ci95")
            if not ci:
                return None, f"{metric} has no confidence interval"
            return ci[0 if bound == "ci_lower" else 1], ""
        node = node.get("value")
    elif bound != "value":
        return None, f"{metric} has no confidence interval"
    if node is None:
        reasons = group.get("null_reasons", {})
        return None, reasons.get(metric, f"{metric} is null")
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise InputError(f"metric {metric!r} is not a number", field="metric")
    return float(node), ""


def _group_label(group: dict[str, Any]) -> str:
    parts = [f"{k}={group[k]}" for k in ("agent", "model", "variant") if group.get(k) is not None]
    return ", ".join(parts) or "all trials"


def evaluate_gates(
    config: GateConfig,
    metrics: dict[str, Any],
    *,
    comparison: dict[str, Any] | None = None,
    blocking_failures: int | None = None,
) -> list[GateResult]:
    """Check every gate against a ``agentgauge.metrics/1`` object.

    ``comparison`` is an ``agentgauge.compare/1`` object against the baseline
    (needed by non-inferiority gates); ``blocking_failures`` is the number of
    trials with a failed blocking rubric criterion (``None`` when no rubric ran).
    """
    results: list[GateResult] = []
    k = config.deployment_k
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
                results.append(GateResult(label, "B vs baseline", False, f"cannot check: {why}"))
                continue
            lo = ci[0]
            ok = lo > -gate.margin
            results.append(
                GateResult(
                    label,
                    "B vs baseline",
                    ok,
                    f"paired difference {comparison['mean_diff']:+.3f}, 95% CI lower bound "
                    f"{lo:+.3f} {'>' if ok else '<='} -{gate.margin:g}",
                )
            )
            continue
        if gate.type == "no_blocking_failures":
            if blocking_failures is None:
                results.append(
                    GateResult(label, "all trials", False, "no rubric grades found to check")
                )
            else:
                results.append(
                    GateResult(
                        label,
                        "all trials",
                        blocking_failures == 0,
                        f"{blocking_failures} trial(s) failed a blocking criterion",
                    )
                )
            continue
        metric = _resolve_metric_name(gate.metric or "", k)
        groups = [
            g
            for g in metrics["groups"]
            if all(str(g.get(key)) == value for key, value in gate.where.items())
        ]
        if not groups:
            results.append(GateResult(label, str(gate.where), False, "no group matches 'where'"))
        for group in groups:
            value, why = _metric_value(group, metric, gate.bound)
            name = _group_label(group)
            if value is None or not math.isfinite(value):
                results.append(GateResult(label, name, False, f"cannot check: {why}"))
                continue
            ok = (gate.min is None or value >= gate.min) and (gate.max is None or value <= gate.max)
            what = metric if gate.bound == "value" else f"{metric} {gate.bound}"
            results.append(GateResult(label, name, ok, f"{what} = {value:.4g}"))
    return results
