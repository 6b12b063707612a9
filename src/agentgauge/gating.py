"""Gates as a Python API: the twin of ``agentgauge gate`` (SPEC 7).

`run_gates` computes exactly what a gate config needs — metrics with the k
values it names, the paired comparison against a baseline when a
non-inferiority gate asks for one, and the count of trials whose blocking
rubric criterion failed — and evaluates every gate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from agentgauge.errors import InputError
from agentgauge.metrics.api import metrics as compute_metrics
from agentgauge.report.gates import GateConfig, GateResult, evaluate_gates, load_gate_config
from agentgauge.schema import Trial
from agentgauge.sources import open_source

__all__ = ["blocking_failures", "run_gates"]

_K = re.compile(r"^pass_(?:hat|at)_k\.(\d+)$")


def _ks(config: GateConfig) -> list[int]:
    ks = {1, 2, 4}
    if config.deployment_k is not None:
        ks.add(config.deployment_k)
    for g in config.gates:
        m = _K.match(g.metric or "")
        if m:
            ks.add(int(m.group(1)))
    return sorted(ks)


def blocking_failures(trials: Sequence[Trial]) -> int | None:
    """Trials with a failed blocking rubric criterion; ``None`` when no rubric was graded."""
    graded = [t for t in trials if any(g.grader == "rubric" for g in t.grades)]
    if not graded:
        return None
    return sum(
        1
        for t in graded
        for g in t.grades
        if g.grader == "rubric"
        and isinstance(g.evidence, dict)
        and g.evidence.get("blocking_failed")
    )


def run_gates(
    source: str,
    config: GateConfig | str | Path,
    *,
    baseline: str | None = None,
    by: Sequence[str] = ("agent", "model"),
    seed: int = 0,
) -> list[GateResult]:
    """Evaluate a gate config on SOURCE (and BASELINE for non-inferiority gates)."""
    cfg = config if isinstance(config, GateConfig) else load_gate_config(config)
    src = open_source(source)
    trials = src.trials
    if "all" not in cfg.variants:
        trials = [t for t in trials if t.variant in cfg.variants]
        if not trials:
            found = sorted({t.variant for t in src.trials})
            raise InputError(
                f"no trials of variants {cfg.variants} in {source} (it has {found})",
                field="variants",
            )
    report = compute_metrics(trials, k=_ks(cfg), by=by, seed=seed, behaviour=False)
    comparison = None
    margins = [g.margin for g in cfg.gates if g.type == "non_inferiority"]
    if baseline is not None and margins:
        from agentgauge.comparison import compare

        # compare() reads each run's base variant, as the gates do by default.
        comparison = compare(baseline, source, margin=max(m or 0.0 for m in margins), seed=seed)
        comparison_dict = comparison.to_dict()
    else:
        comparison_dict = None
    needs_rubric = any(g.type == "no_blocking_failures" for g in cfg.gates)
    return evaluate_gates(
        cfg,
        report.to_dict(),
        comparison=comparison_dict,
        blocking_failures=blocking_failures(trials) if needs_rubric else None,
    )
