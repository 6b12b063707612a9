"""Simulation: the reported 95% interval covers a known rate 93–97.5% of the time.

Two designs, both seeded.

**The grid** (true rate ∈ {50, 70, 90, 97, 99}% × families ∈ {5, 10, 20, 50}, plus a
large cell of 250 families). A data-generating process with real heterogeneity
between families and between tasks, on the logit scale:

    logit p_t = μ + u_f + v_t,   u_f ~ N(0, 0.6²) per family,  v_t ~ N(0, 0.8²) per task,

each family holding 2–6 tasks and each task 1–4 trials (drawn uniformly, afresh in
every replication), trials Bernoulli(p_t). **The estimand** is the expected
task-averaged success rate of this process, τ = E[p_t] = E[expit(μ + u + v)]; μ is
solved for each τ by Gauss–Hermite quadrature, and the reported rate mean_t(c_t/n_t)
is unbiased for it. Each replication's interval is the one `success_interval` gives
(the function `compute_metrics` calls; `test_grid_goes_through_compute_metrics`
checks that they agree). 2,000 replications per cell: the Monte-Carlo SE of a
coverage near 95% is 0.5 point.

**The original design** (Beta-distributed family and task rates around 70%), kept
as it was, each replication through `compute_metrics`.

``python tests/metrics/test_coverage.py`` prints the grid as the table in
docs/metrics.md; ``python tests/metrics/test_coverage.py 20000`` prints it with 20,000
replications per cell (Monte-Carlo SE 0.15 point), the figures "Know its limits" quotes.
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import numpy.typing as npt
import pytest
from scipy import optimize, special

from agentgauge import TrialTable
from agentgauge.metrics import compute_metrics, success_interval

REPLICATIONS = 2000
MU = 0.7

RATES = (0.5, 0.7, 0.9, 0.97, 0.99)
FAMILIES = (5, 10, 20, 50)
SD_FAMILY, SD_TASK = 0.6, 0.8
TASKS_PER_FAMILY = (2, 6)
TRIALS_PER_TASK = (1, 4)


# --------------------------------------------------------------------------- the grid


@functools.cache
def logit_mean(rate: float) -> float:
    """μ such that E[expit(μ + s·Z)] = rate, s² = SD_FAMILY² + SD_TASK², Z ~ N(0, 1)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    s = float(np.hypot(SD_FAMILY, SD_TASK))

    def gap(mu: float) -> float:
        return float(special.expit(mu + s * nodes) @ weights) - rate

    return float(optimize.brentq(gap, -30.0, 30.0, xtol=1e-12))


Sample = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.intp]]


def draw(rate: float, n_families: int, rng: np.random.Generator) -> Sample:
    """One evaluation from the process: per task (trials, successes, family)."""
    mu = logit_mean(rate)
    sizes = rng.integers(TASKS_PER_FAMILY[0], TASKS_PER_FAMILY[1] + 1, n_families)
    family = np.repeat(np.arange(n_families), sizes)
    logit = mu + rng.normal(0.0, SD_FAMILY, n_families)[family]
    logit += rng.normal(0.0, SD_TASK, family.size)
    n = rng.integers(TRIALS_PER_TASK[0], TRIALS_PER_TASK[1] + 1, family.size)
    c = rng.binomial(n, special.expit(logit))
    return n.astype(np.int64), c.astype(np.int64), family


def cell_seed(rate: float, n_families: int) -> int:
    return 11_000 + 1000 * n_families + round(1000 * rate)


@functools.cache
def grid_cell(
    rate: float, n_families: int, replications: int = REPLICATIONS
) -> dict[str, float | set[str]]:
    """Coverage of one cell, the share of misses on each side, and the methods used."""
    rng = np.random.default_rng(cell_seed(rate, n_families))
    below = above = zero_width = 0
    methods: set[str] = set()
    for _ in range(replications):
        n, c, family = draw(rate, n_families, rng)
        ci, method, _why = success_interval(c / n, n, c, family)
        assert ci is not None and method is not None
        lo, hi = ci
        below += hi < rate  # the interval lies below the truth
        above += lo > rate
        zero_width += hi <= lo
        methods.add(method)
    r = replications
    return {
        "coverage": (r - below - above) / r,
        "miss_below": below / r,
        "miss_above": above / r,
        "zero_width": zero_width / r,
        "methods": methods,
    }


#: Cells where the interval is still measured to be conservative, above the 97.5% the
#: grid asks for, with the bound they keep. With 5 families (about 50 trials) from 90%
#: up, the widening for an SE estimated from 5 clusters (Student's t with 4 df) errs
#: on the safe side, and at 97% and 99% the data can almost never put
#: the lower bound above the truth, so all misses are on one side and an upper bound
#: a shade too high shows in full. No published rule we tried brings them inside
#: without pushing other cells out (docs/metrics.md, "Know its limits").
CONSERVATIVE = {(0.9, 5): 0.985, (0.97, 5): 0.985, (0.99, 5): 0.985}

CELLS = [
    pytest.param(
        rate,
        fam,
        marks=[pytest.mark.xfail(strict=True, reason="above 97.5%: see CONSERVATIVE")]
        if (rate, fam) in CONSERVATIVE
        else [],
    )
    for fam in FAMILIES
    for rate in RATES
]


@pytest.mark.parametrize(("rate", "n_families"), CELLS)
def test_grid_coverage(rate: float, n_families: int) -> None:
    cell = grid_cell(rate, n_families)
    cov = cell["coverage"]
    assert isinstance(cov, float)
    assert cell["methods"] == {"wilson_design_effect"}
    assert cell["zero_width"] == 0
    assert 0.93 <= cov <= 0.975, f"coverage {cov:.3f} at {rate:.0%} with {n_families} families"


@pytest.mark.parametrize(("rate", "n_families"), sorted(CONSERVATIVE))
def test_conservative_cells_stay_within_their_bound(rate: float, n_families: int) -> None:
    # The cells above 97.5% (their test_grid_coverage is an expected failure, strict:
    # a change that brings one inside turns it into an unexpected pass) must not get
    # wider still.
    cov = grid_cell(rate, n_families)["coverage"]
    assert isinstance(cov, float)
    assert 0.93 <= cov <= CONSERVATIVE[(rate, n_families)], f"coverage {cov:.3f}"


@pytest.mark.parametrize("rate", RATES)
def test_large_cell(rate: float) -> None:
    cell = grid_cell(rate, 250)
    cov = cell["coverage"]
    assert isinstance(cov, float)
    # The normal interval up to a 90% rate, the design-effect Wilson beyond (at a true
    # 90% the estimate falls on either side).
    expected = {0.5: {"normal"}, 0.7: {"normal"}, 0.9: {"normal", "wilson_design_effect"}}
    assert cell["methods"] <= expected.get(rate, {"wilson_design_effect"})
    assert 0.93 <= cov <= 0.975, f"coverage {cov:.3f} at {rate:.0%} with 250 families"


def test_grid_goes_through_compute_metrics() -> None:
    rng = np.random.default_rng(7)
    for rate, fam in [(0.97, 5), (0.5, 20), (0.99, 10)]:
        for _ in range(5):
            n, c, family = draw(rate, fam, rng)
            row = np.repeat(np.arange(n.size), n)
            success = np.concatenate([np.arange(k) < s for k, s in zip(n, c, strict=True)])
            table = TrialTable.from_columns(
                row.size,
                task_id=np.array([f"t{i:03d}" for i in row], dtype=object),
                family=np.array([f"f{family[i]}" for i in row], dtype=object),
                success=success,
            )
            g = compute_metrics(table, k=(1,), by=()).to_dict()["groups"][0]
            ci, method, _ = success_interval(c / n, n, c, family)
            assert g["success_rate"]["ci_method"] == method
            assert g["success_rate"]["ci95"] == pytest.approx(ci, abs=1e-12)


def test_all_passing_is_never_zero_width() -> None:
    # The case: 20 tasks × 3 trials, all passing (the percentile bootstrap gave [1, 1]).
    n = np.full(20, 3, dtype=np.int64)
    for clusters in (None, np.arange(20) // 4):
        ci, method, _ = success_interval(np.ones(20), n, n, clusters)
        assert method == "wilson_design_effect" and ci is not None
        assert ci[1] == 1.0 and ci[0] < 1.0
        # Wilson on the 60 trials (design effect 1): lower = 60 / (60 + z²) = 0.93983
        assert ci[0] == pytest.approx(60 / (60 + 1.959964**2), abs=1e-5)
    ci, _, _ = success_interval(np.zeros(20), n, np.zeros(20, dtype=np.int64), None)
    assert ci is not None and ci[0] == 0.0 and ci[1] > 0.0


# --------------------------------------------------------------------------- the original design


def coverage(n_fam: int, tasks_per: int, trials: int, *, families: bool, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    n_tasks = n_fam * tasks_per
    fam_of_task = np.repeat(np.arange(n_fam), tasks_per)
    task_ids = np.array([f"t{i}" for i in range(n_tasks)], dtype=object)
    fam_labels = np.array([f"f{i}" for i in fam_of_task], dtype=object)
    row_task = np.repeat(np.arange(n_tasks), trials)
    covered, methods = 0, set()
    for r in range(REPLICATIONS):
        q = rng.beta(MU * 8, (1 - MU) * 8, n_fam)
        p = rng.beta(q[fam_of_task] * 8, (1 - q[fam_of_task]) * 8)
        success = rng.random(row_task.size) < p[row_task]
        cols = {"task_id": task_ids[row_task], "success": success}
        if families:
            cols["family"] = fam_labels[row_task]
        table = TrialTable.from_columns(row_task.size, **cols)
        g = compute_metrics(table, k=(1,), by=(), seed=r).to_dict()["groups"][0]
        lo, hi = g["success_rate"]["ci95"]
        covered += lo <= MU <= hi
        methods.add(g["success_rate"]["ci_method"])
    return covered / REPLICATIONS, methods


@pytest.mark.parametrize(
    ("n_fam", "tasks_per", "trials", "families", "method"),
    [
        # few clusters: Wilson on the design-effect-adjusted effective n
        (10, 3, 4, True, "wilson_design_effect"),
        # 250 families: the normal interval on Miller's clustered SE
        (250, 2, 3, True, "normal"),
        # one trial per task, no families: Wilson
        (60, 1, 1, False, "wilson"),
    ],
)
def test_reported_interval_covers_known_rate(
    n_fam: int, tasks_per: int, trials: int, families: bool, method: str
) -> None:
    cov, methods = coverage(n_fam, tasks_per, trials, families=families, seed=2026)
    assert methods == {method}
    assert 0.93 <= cov <= 0.97, f"coverage {cov:.3f} with {method}"


# --------------------------------------------------------------------------- the docs table


def markdown_table(replications: int = REPLICATIONS) -> str:
    head = "| families | " + " | ".join(f"{r:.0%}" for r in RATES) + " |"
    rule = "|---:|" + "---:|" * len(RATES)
    lines = [head, rule]
    for fam in (*FAMILIES, 250):
        cells = [grid_cell(rate, fam, replications) for rate in RATES]
        cov = [f"{100 * float(c['coverage']):.1f}" for c in cells]  # type: ignore[arg-type]
        lines.append(f"| {fam} | " + " | ".join(cov) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    # An optional argument sets the replications per cell (the docs' table: 2,000, the
    # test's; a larger count, e.g. 20000, narrows the Monte-Carlo error).
    print(markdown_table(int(sys.argv[1]) if len(sys.argv) > 1 else REPLICATIONS))
    sys.exit(0)
