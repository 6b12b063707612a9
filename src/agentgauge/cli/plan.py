"""``agentgauge plan``: tasks needed for a difference δ, or what N tasks can detect."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import JsonOption, console, err_console, print_json
from agentgauge.defaults import DEFAULT_WITHIN_SHARE
from agentgauge.display import terminal_warning
from agentgauge.report.formats import counted

if TYPE_CHECKING:
    from rich.text import Text

    from agentgauge.stats.power import Plan


_SHARE_FROM = {
    "pilot": "measured by the pilot",
    "--within-share": "--within-share",
    "default": "default, assumed",
}


def _effect(x: float) -> str:
    """A detectable effect: four decimals, or three significant digits below 0.001,
    where four decimals read "0.0000", an effect of nothing (a trillion tasks)."""
    return f"{x:.4f}" if abs(x) >= 0.001 else f"{x:.3g}"


def _points(x: float) -> str:
    """An effect in percentage points: one decimal, or three significant digits below
    0.1 point ("0.0 percentage points" said the effect was none)."""
    return f"{100 * x:.1f}" if abs(x) >= 0.001 else f"{100 * x:.3g}"


def _explain(p: Plan) -> str:
    from agentgauge.stats.power import round_up_tasks

    c = p.components
    z_a = p.z - _z_beta(p.power)
    var = f"({c.omega2:.4f} + {c.sigma2_a:.4f}/{p.trials_a} + {c.sigma2_b:.4f}/{p.trials_b})"
    per_task = c.per_task(p.trials_a, p.trials_b)
    lines = ["  n = (z_{1−α/2} + z_{1−β})² · (ω² + σ_A²/K_A + σ_B²/K_B) / δ²"]
    if p.tasks is None:
        assert p.delta is not None and p.n_tasks_exact is not None
        # (-0.03)²: "/ -0.03²" read as dividing by −0.0009.
        d = f"({p.delta:g})" if p.delta < 0 else f"{p.delta:g}"
        # The formula's count; a plan raised to the fewest tasks compare needs says so.
        n = round_up_tasks(p.n_tasks_exact) if p.n_tasks_reason else p.n_tasks
        lines += [
            f"    = ({z_a:.4f} + {_z_beta(p.power):.4f})² · {var} / {d}²",
            f"    = {p.z**2:.4f} · {per_task:.4f} / {p.delta**2:.6g}"
            f" = {p.n_tasks_exact:.1f} → {n} task{'s' if n != 1 else ''}",
        ]
        if p.n_tasks_reason:
            lines.append(f"    → {counted(p.n_tasks, 'task')}: {p.n_tasks_reason}")
    else:
        lines[0] = "  δ = (z_{1−α/2} + z_{1−β}) · √((ω² + σ_A²/K_A + σ_B²/K_B) / n)"
        # The effect the headline gives first: the improvement, else the drop (whose
        # variance the components are, from assumptions).
        shown = p.mde if p.mde is not None else p.mde_drop
        if shown is not None:
            lines.append(
                f"    = {p.z:.4f} · √({per_task:.4f} / {p.tasks}) = {_effect(shown)}"
                f" ({_points(shown)} percentage points)"
            )
    return "\n".join(lines)


def _detectable(p: Plan) -> Text:
    """What ``--tasks N`` can detect: the smallest improvement and the smallest drop, or
    which of them none is and why. Near 100% no improvement exists to detect, yet a
    drop may be detectable: "no detectable effect" read as if nothing could be."""
    from rich.text import Text

    with_tasks = f" with {counted(p.tasks, 'task')}"
    if p.mde is not None:
        # The drop beside it when it differs (from assumptions B's variance moves with δ).
        drop = p.mde_drop
        if drop is None:
            beside = f"; {p.mde_drop_reason}"
        else:
            beside = f"; as a drop, {_effect(drop)}" if _effect(drop) != _effect(p.mde) else ""
        return Text.assemble(
            (f"minimum detectable effect {_effect(p.mde)}", "bold"), with_tasks, beside
        )
    if p.mde_drop is not None:
        return Text.assemble(
            (f"minimum detectable drop {_effect(p.mde_drop)}", "bold"),
            with_tasks,
            f"; {p.mde_reason}",
        )
    reasons = [p.mde_reason] + ([p.mde_drop_reason] if p.mde_drop_reason != p.mde_reason else [])
    return Text.assemble(("no detectable effect", "bold"), ": " + "; ".join(map(str, reasons)))


def _z_beta(power: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(power))


@app.command("plan")
def plan_cmd(
    baseline: Annotated[
        float | None,
        typer.Option("--baseline", help="A's success rate (assumption mode; not with --pilot)."),
    ] = None,
    delta: Annotated[
        float | None, typer.Option("--delta", help="Difference to detect (B − A, a rate).")
    ] = None,
    trials: Annotated[int, typer.Option("--trials", help="Trials per task in each run.")] = 1,
    correlation: Annotated[
        float | None,
        typer.Option(
            "--correlation",
            help="Correlation of the two systems' task rates (default 0; not with --pilot-b).",
        ),
    ] = None,
    within_share: Annotated[
        float | None,
        typer.Option(
            "--within-share",
            help=f"Share of trial variance within tasks (0–1; default {DEFAULT_WITHIN_SHARE:g}"
            "; not with a pilot of several trials per task, which measures it).",
        ),
    ] = None,
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
    from agentgauge.api import plan

    result = plan(
        baseline=baseline,
        delta=delta,
        tasks=tasks,
        trials=trials,
        correlation=correlation,
        within_share=within_share,
        alpha=alpha,
        power=power,
        pilot=pilot,
        pilot_b=pilot_b,
    )
    # Warnings go to stderr so that stdout stays the plan or the JSON alone, as compare's.
    for w in result.warnings:
        err_console().print(terminal_warning(w))
    if json_out:
        print_json(result.to_dict())
        return
    from rich.text import Text

    out = console()
    if result.tasks is None:
        out.print(
            Text.assemble(
                (counted(result.n_tasks, "task"), "bold"), f" to detect δ = {result.delta:g}"
            )
        )
    else:
        out.print(_detectable(result))
    out.print(_explain(result), markup=False, highlight=False, soft_wrap=True)
    inputs = dict(result.inputs or {})
    # "within_share 0.5 (default)": the share and where it came from, as one input.
    where = _SHARE_FROM.get(inputs.pop("within_share_source", None))
    shown = ", ".join(
        (f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}")
        + (f" ({where})" if k == "within_share" and where else "")
        for k, v in inputs.items()
    )
    out.print(
        f"  from {shown}; α {alpha:g}, power {power:g}; "
        f"ω² {result.components.omega2:.4f}, σ_A² {result.components.sigma2_a:.4f}, "
        f"σ_B² {result.components.sigma2_b:.4f}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
