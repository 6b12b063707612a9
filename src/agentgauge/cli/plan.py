"""``agentgauge plan``: tasks needed for a difference δ, or what N tasks can detect (SPEC 5.8)."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
import typer

from agentgauge.cli import app
from agentgauge.cli.common import JsonOption, console, print_json
from agentgauge.errors import InputError
from agentgauge.metrics.compare import select_rows
from agentgauge.metrics.outcome import task_success_counts
from agentgauge.sources import open_source
from agentgauge.stats.power import (
    DEFAULT_WITHIN_SHARE,
    Plan,
    components_from_pilot,
    components_from_pilot_pair,
    pilot_variance,
    plan,
    plan_from_assumptions,
)
from agentgauge.table import TrialTable


def _pilot_table(spec: str) -> TrialTable:
    table = select_rows(open_source(spec, events=False).table)
    if len(table) == 0:
        raise InputError("the pilot has no trials (base variant, dev split)", file=spec)
    return table


def _rates(table: TrialTable) -> dict[str, tuple[int, float]]:
    """task → (trials, success rate); an infra error is a failure (SPEC 5.1)."""
    ids, n, c = task_success_counts(table.task_id, table.success & ~table.infra_error)
    return {t: (int(n[i]), c[i] / n[i]) for i, t in enumerate(ids)}


def _from_pilot(
    pilot: str,
    pilot_b: str | None,
    *,
    delta: float | None,
    tasks: int | None,
    trials: int,
    correlation: float,
    within_share: float,
    alpha: float,
    power: float,
) -> Plan:
    ta = _pilot_table(pilot)
    inputs: dict[str, Any] = {"method": "pilot", "pilot": pilot, "within_share": within_share}
    if pilot_b is None:
        _, idx = ta.task_index()
        try:
            pv = pilot_variance(idx, ta.success & ~ta.infra_error)
        except ValueError as exc:
            raise InputError(str(exc), file=pilot, field="--pilot") from exc
        comp = components_from_pilot(pv, correlation=correlation, within_share=within_share)
        inputs.update(
            correlation=correlation,
            pilot_tasks=pv.n_tasks,
            pilot_trials_per_task=pv.mean_trials,
            pilot_rate=pv.mean_rate,
            tau2=pv.tau2,
            sigma2=pv.sigma2,
        )
    else:
        ra, rb = _rates(ta), _rates(_pilot_table(pilot_b))
        shared = sorted(set(ra) & set(rb))
        if len(shared) < 2:
            raise InputError("the two pilots share fewer than two tasks", field="--pilot-b")
        arr = {
            key: np.array([src[t][i] for t in shared], dtype=np.float64)
            for key, src, i in (("na", ra, 0), ("pa", ra, 1), ("nb", rb, 0), ("pb", rb, 1))
        }
        comp = components_from_pilot_pair(
            arr["na"], arr["pa"], arr["nb"], arr["pb"], within_share=within_share
        )
        inputs.update(method="pilot-pair", pilot_b=pilot_b, pilot_tasks=len(shared))
    inputs["trials"] = trials
    return plan(
        comp,
        delta=delta,
        tasks=tasks,
        trials_a=trials,
        trials_b=trials,
        alpha=alpha,
        power=power,
        inputs=inputs,
    )


def _explain(p: Plan) -> str:
    c = p.components
    z_a = p.z - _z_beta(p.power)
    var = f"({c.omega2:.4f} + {c.sigma2_a:.4f}/{p.trials_a} + {c.sigma2_b:.4f}/{p.trials_b})"
    per_task = c.per_task(p.trials_a, p.trials_b)
    lines = ["  n = (z_{1−α/2} + z_{1−β})² · (ω² + σ_A²/K_A + σ_B²/K_B) / δ²"]
    if p.tasks is None:
        assert p.delta is not None and p.n_tasks_exact is not None
        lines += [
            f"    = ({z_a:.4f} + {_z_beta(p.power):.4f})² · {var} / {p.delta:g}²",
            f"    = {p.z**2:.4f} · {per_task:.4f} / {p.delta**2:.6g}"
            f" = {p.n_tasks_exact:.1f} → {p.n_tasks} tasks",
        ]
    else:
        lines[0] = "  δ = (z_{1−α/2} + z_{1−β}) · √((ω² + σ_A²/K_A + σ_B²/K_B) / n)"
        if p.mde is not None:
            lines.append(
                f"    = {p.z:.4f} · √({per_task:.4f} / {p.tasks}) = {p.mde:.4f}"
                f" ({100 * p.mde:.1f} percentage points)"
            )
    return "\n".join(lines)


def _z_beta(power: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(power))


@app.command("plan")
def plan_cmd(
    baseline: Annotated[
        float | None, typer.Option("--baseline", help="A's success rate (assumption mode).")
    ] = None,
    delta: Annotated[
        float | None, typer.Option("--delta", help="Difference to detect (B − A, a rate).")
    ] = None,
    trials: Annotated[int, typer.Option("--trials", help="Trials per task in each run.")] = 1,
    correlation: Annotated[
        float, typer.Option("--correlation", help="Correlation of the two systems' task rates.")
    ] = 0.0,
    within_share: Annotated[
        float,
        typer.Option("--within-share", help="Share of trial variance within tasks (0–1)."),
    ] = DEFAULT_WITHIN_SHARE,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided test level.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Power 1 − β.")] = 0.8,
    tasks: Annotated[
        int | None, typer.Option("--tasks", help="Tasks available: give the detectable effect.")
    ] = None,
    pilot: Annotated[
        str | None, typer.Option("--pilot", help="Estimate the variance from a pilot SOURCE.")
    ] = None,
    pilot_b: Annotated[
        str | None, typer.Option("--pilot-b", help="Second system's pilot (paired estimate).")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Tasks needed to detect a difference δ (or, with --tasks, the smallest detectable δ)."""
    checks = [
        (not 0 < alpha < 1, "--alpha", "must be in (0, 1)"),
        (not 0 < power < 1, "--power", "must be in (0, 1)"),
        (trials < 1, "--trials", "must be at least 1"),
        (not -1 <= correlation <= 1, "--correlation", "must be in [-1, 1]"),
        (not 0 <= within_share <= 1, "--within-share", "must be in [0, 1]"),
        (tasks is not None and tasks < 2, "--tasks", "must be at least 2"),
        (delta is None and tasks is None, "--delta", "give --delta D, or --tasks N for the MDE"),
        (delta is not None and (delta == 0 or abs(delta) >= 1), "--delta", "must be in (0, 1)"),
        (pilot_b is not None and pilot is None, "--pilot-b", "needs --pilot"),
        (pilot is None and baseline is None, "--baseline", "give --baseline P or --pilot SOURCE"),
        (baseline is not None and not 0 <= baseline <= 1, "--baseline", "must be in [0, 1]"),
    ]
    for bad, name, why in checks:
        if bad:
            raise InputError(why, field=name)
    try:
        if pilot is not None:
            result = _from_pilot(
                pilot,
                pilot_b,
                delta=delta,
                tasks=tasks,
                trials=trials,
                correlation=correlation,
                within_share=within_share,
                alpha=alpha,
                power=power,
            )
        else:
            assert baseline is not None
            result = plan_from_assumptions(
                baseline,
                delta=None if tasks is not None else delta,
                tasks=tasks,
                trials=trials,
                correlation=correlation,
                within_share=within_share,
                alpha=alpha,
                power=power,
            )
    except ValueError as exc:
        raise InputError(str(exc), field="--delta" if delta is not None else "--tasks") from exc
    if json_out:
        print_json(result.to_dict())
        return
    out = console()
    if result.tasks is None:
        out.print(f"[bold]{result.n_tasks} tasks[/] to detect δ = {result.delta:g}")
    elif result.mde is not None:
        out.print(f"[bold]minimum detectable effect {result.mde:.4f}[/] with {result.tasks} tasks")
    else:
        out.print(f"[bold]no detectable effect[/]: {result.mde_reason}")
    out.print(_explain(result), markup=False, highlight=False)
    inputs = result.inputs or {}
    shown = ", ".join(
        f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in inputs.items()
    )
    out.print(
        f"  from {shown}; α {alpha:g}, power {power:g}; "
        f"ω² {result.components.omega2:.4f}, σ_A² {result.components.sigma2_a:.4f}, "
        f"σ_B² {result.components.sigma2_b:.4f}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
