"""Benchmark: all outcome metrics for 1,000,000 trials, and the per-task estimators.

100,000 tasks × 10 trials in 10,000 families of 10 tasks, every trial priced,
timed, with tokens and a judge cost, and 0.5% infra errors. Three timings, all
in this one run:

- ``vectorised (codes cached)``: `compute_metrics` on a `TrialTable` whose label
  columns are already coded (the generator's integer task and family keys given
  with `TrialTable.seed_codes`, as a repeated analysis of one table sees them).
  This is the figure the goals "≤ 1 s" and "≥ 20×" apply to.
- ``vectorised (cold)``: the same on a fresh table, so the time includes coding
  a million task-id strings (hash + numpy sort).
- ``python loop``: a straightforward per-task loop with ``math.comb`` computing
  the same figures from plain Python lists (the list conversion is not timed).

Every timing is the best of three interleaved rounds. The loop's figures are checked
against the vectorised ones before any time is printed.

Then the public per-task estimators on their own: ``agentgauge.pass_at_k`` and
``pass_hat_k`` on arrays of 100,000 tasks (n = 10 trials each, k = 1..10), against a
per-task ``math.comb`` loop over the same counts (goal ≥ 10×).

Run: ``python benchmarks/bench_metrics.py [--smoke]`` (``--smoke``: 2,000 tasks, one
round; the same code, figures not comparable).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from _report import Row, emit, row, smoke_flag
from agentgauge import TrialTable, pass_at_k, pass_hat_k
from agentgauge.metrics import compute_metrics

NAME = "bench_metrics"

N_TASKS = 100_000
TRIALS = 10
TASKS_PER_FAMILY = 10
KS = (1, 2, 4)


def build_columns(n_tasks: int = N_TASKS, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = n_tasks * TRIALS
    task = np.repeat(np.arange(n_tasks), TRIALS)
    rate = rng.beta(2.0, 1.5, n_tasks)
    success = rng.random(n) < rate[task]
    infra = rng.random(n) < 0.005
    task_names = np.array([f"task-{i:06d}" for i in range(n_tasks)], dtype=object)
    fam_names = np.array(
        [f"family-{i:05d}" for i in range(n_tasks // TASKS_PER_FAMILY)], dtype=object
    )
    return {
        "n": n,
        "task_codes": task,
        "family_codes": task // TASKS_PER_FAMILY,
        "task_names": task_names,
        "fam_names": fam_names,
        "task_id": task_names[task],
        "family": fam_names[task // TASKS_PER_FAMILY],
        "success": success & ~infra,
        "infra_error": infra,
        "agent": np.full(n, "bench-agent", dtype=object),
        "model": np.full(n, "bench-model", dtype=object),
        "cost_usd": np.round(rng.gamma(2.0, 0.01, n), 6),
        "judge_cost_usd": np.full(n, 0.0004),
        "latency_s": np.round(rng.lognormal(2.0, 0.5, n), 3),
        "input_tokens": rng.integers(500, 8000, n).astype(np.float64),
        "output_tokens": rng.integers(50, 900, n).astype(np.float64),
    }


def make_table(cols: dict[str, Any], *, seeded: bool) -> TrialTable:
    keys = (
        "task_id", "family", "success", "infra_error", "agent", "model", "cost_usd",
        "judge_cost_usd", "latency_s", "input_tokens", "output_tokens",
    )  # fmt: skip
    table = TrialTable.from_columns(cols["n"], **{k: cols[k] for k in keys})
    if seeded:
        table.seed_codes("task_id", cols["task_names"], cols["task_codes"])
        table.seed_codes("family", cols["fam_names"], cols["family_codes"])
        for key in ("agent", "model", "variant"):
            table.codes(key)
    return table


# ----------------------------------------------------------------- the Python loop


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def python_loop(rows: dict[str, list[Any]]) -> dict[str, Any]:
    trials: dict[str, list[bool]] = defaultdict(list)
    family: dict[str, str] = {}
    for task, fam, ok, bad in zip(
        rows["task_id"], rows["family"], rows["success"], rows["infra_error"], strict=True
    ):
        trials[task].append(ok and not bad)
        family.setdefault(task, fam)
    n_t = {t: len(v) for t, v in trials.items()}
    c_t = {t: sum(v) for t, v in trials.items()}
    p = {t: c_t[t] / n_t[t] for t in trials}
    n_tasks = len(p)
    mean = sum(p.values()) / n_tasks
    se = statistics.stdev(p.values()) / math.sqrt(n_tasks)
    sums: dict[str, float] = defaultdict(float)
    for t, pt in p.items():
        sums[family[t]] += pt - mean
    big_c = len(sums)
    se_cl = math.sqrt(big_c / (big_c - 1) * sum(s * s for s in sums.values())) / n_tasks
    z = statistics.NormalDist().inv_cdf(0.975)
    out: dict[str, Any] = {
        "value": mean,
        "se": se,
        "se_clustered": se_cl,
        "ci95": [max(0.0, mean - z * se_cl), min(1.0, mean + z * se_cl)],
    }
    for k in KS:
        at = [1 - math.comb(n_t[t] - c_t[t], k) / math.comb(n_t[t], k) for t in p]
        hat = [math.comb(c_t[t], k) / math.comb(n_t[t], k) for t in p]
        out[f"at{k}"] = sum(at) / n_tasks
        out[f"hat{k}"] = sum(hat) / n_tasks
        out[f"at{k}_se"] = statistics.stdev(at) / math.sqrt(n_tasks)
        out[f"hat{k}_se"] = statistics.stdev(hat) / math.sqrt(n_tasks)
    out["consistency"] = sum((2 * x - 1) ** 2 for x in p.values()) / n_tasks
    out["flaky"] = [t for t in p if 0 < c_t[t] < n_t[t]]
    out["infra"] = sum(rows["infra_error"])
    total = sum(rows["cost_usd"])
    out["per_trial"] = total / len(rows["cost_usd"])
    out["cost_of_pass"] = out["per_trial"] / mean
    out["judge_total"] = sum(rows["judge_cost_usd"])
    lat = sorted(rows["latency_s"])
    out["p50"], out["p95"] = quantile(lat, 0.5), quantile(lat, 0.95)
    out["input"] = sum(rows["input_tokens"]) / len(rows["input_tokens"])
    out["output"] = sum(rows["output_tokens"]) / len(rows["output_tokens"])
    return out


def check(ref: dict[str, Any], got: dict[str, Any], n_tasks: int) -> None:
    sr, cost = got["success_rate"], got["cost"]
    pairs = [
        (ref["value"], sr["value"]), (ref["se"], sr["se"]),
        (ref["se_clustered"], sr["se_clustered"]), (ref["ci95"][0], sr["ci95"][0]),
        (ref["ci95"][1], sr["ci95"][1]), (ref["consistency"], got["outcome_consistency"]),
        (ref["per_trial"], cost["per_trial"]), (ref["cost_of_pass"], cost["cost_of_pass"]),
        (ref["judge_total"], cost["judge_total"]), (ref["p50"], got["latency_s"]["p50"]),
        (ref["p95"], got["latency_s"]["p95"]), (ref["input"], got["tokens"]["input"]),
        (ref["output"], got["tokens"]["output"]),
    ]  # fmt: skip
    for k in KS:
        pairs += [
            (ref[f"at{k}"], got["pass_at_k"][str(k)]),
            (ref[f"hat{k}"], got["pass_hat_k"][str(k)]),
            (ref[f"at{k}_se"], got["pass_at_k_se"][str(k)]),
            (ref[f"hat{k}_se"], got["pass_hat_k_se"][str(k)]),
        ]
    for a, b in pairs:
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (a, b)
    assert ref["flaky"] == got["flaky_tasks"]
    assert ref["infra"] == got["infra_errors"]
    assert sr["ci_method"] == "normal" and got["n_clusters"] == n_tasks // TASKS_PER_FAMILY


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


ROUNDS = 3


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    args = parser.parse_args(argv)
    # 2,000 tasks: 200 families, the fewest for which the engine takes the normal
    # interval that the loop computes.
    n_tasks, rounds = (2_000, 1) if args.smoke else (N_TASKS, ROUNDS)
    cols = build_columns(n_tasks)
    n = cols["n"]
    print(f"{n:,} trials: {n_tasks:,} tasks × {TRIALS} trials, "
          f"{n_tasks // TASKS_PER_FAMILY:,} families, k = {KS}")  # fmt: skip

    cached = make_table(cols, seeded=True)
    rows = {
        key: cols[key].tolist()
        for key in (
            "task_id", "family", "success", "infra_error", "cost_usd", "judge_cost_usd",
            "latency_s", "input_tokens", "output_tokens",
        )
    }  # fmt: skip

    # Rounds interleave the three measurements so that load from other processes
    # weighs on all of them alike; each figure is the best of its rounds.
    t_cached = t_cold = t_loop = math.inf
    report: Any = None
    ref: Any = None
    for _ in range(rounds):
        for _ in range(2):
            t, report = timed(lambda: compute_metrics(cached, k=KS))
            t_cached = min(t_cached, t)
        fresh = make_table(cols, seeded=False)  # building the table is not timed
        t, _ = timed(lambda: compute_metrics(fresh, k=KS))  # noqa: B023
        t_cold = min(t_cold, t)
        t, ref = timed(lambda: python_loop(rows))
        t_loop = min(t_loop, t)
    check(ref, report.to_dict()["groups"][0], n_tasks)

    print("figures agree (rel. 1e-9) between the loop and the vectorised engine")
    print(f"vectorised (codes cached): {t_cached:8.3f} s   target <= 1 s")
    print(f"vectorised (cold, incl. coding task ids): {t_cold:8.3f} s")
    print(f"python loop (math.comb):   {t_loop:8.3f} s")
    print(f"ratio loop / cached: {t_loop / t_cached:6.1f}x   target >= 20x")
    print(f"ratio loop / cold:   {t_loop / t_cold:6.1f}x")
    loop = "per-task Python loop, math.comb"
    judged = not args.smoke  # the goals are for 1,000,000 trials, not the smoke size
    out = [
        row(
            NAME,
            f"all outcome metrics, {n:,} trials (codes cached)",
            t_cached,
            "s",
            reference=t_loop,
            reference_name=loop,
            goal="≤ 1 s; ≥ 20×",
            met=(t_cached <= 1.0 and t_loop / t_cached >= 20) if judged else None,
        ),
        row(
            NAME,
            f"all outcome metrics, {n:,} trials (cold: task ids coded too)",
            t_cold,
            "s",
            reference=t_loop,
            reference_name=loop,
        ),
    ]
    return [*out, estimators(n_tasks, rounds, judged)]


def estimators(n_tasks: int = N_TASKS, rounds: int = ROUNDS, judged: bool = True) -> Row:
    """pass@k and pass^k over 100,000 tasks, k = 1..10, against a math.comb loop."""
    rng = np.random.default_rng(1)
    n = np.full(n_tasks, 10)
    c = rng.binomial(n, rng.beta(2.0, 1.5, n_tasks))
    n_list, c_list = n.tolist(), c.tolist()
    ks = range(1, 11)

    def loop() -> list[list[float]]:
        out = []
        for k in ks:
            out.append(
                [
                    1 - math.comb(a - b, k) / math.comb(a, k)
                    for a, b in zip(n_list, c_list, strict=True)
                ]
            )
            out.append(
                [math.comb(b, k) / math.comb(a, k) for a, b in zip(n_list, c_list, strict=True)]
            )
        return out

    def arrays() -> list[Any]:
        return [f(n, c, k) for k in ks for f in (pass_at_k, pass_hat_k)]

    t_loop = t_arrays = math.inf
    for _ in range(rounds):
        t, ref = timed(loop)
        t_loop = min(t_loop, t)
        t, got = timed(arrays)
        t_arrays = min(t_arrays, t)
    for r, g in zip(ref, got, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-15)
    print(f"pass_at_k + pass_hat_k, {n_tasks:,} tasks × n = 10, k = 1..10 (figures agree):")
    print(f"  numpy arrays:              {t_arrays:8.4f} s")
    print(f"  python loop (math.comb):   {t_loop:8.4f} s")
    print(f"  ratio loop / arrays: {t_loop / t_arrays:6.1f}x   target >= 10x")
    return row(
        NAME,
        f"pass_at_k + pass_hat_k, {n_tasks:,} tasks, k = 1..10",
        t_arrays * 1e3,
        "ms",
        reference=t_loop * 1e3,
        reference_name="per-task Python loop, math.comb",
        goal="≥ 10×",
        met=t_loop / t_arrays >= 10 if judged else None,
    )


if __name__ == "__main__":
    emit(main())
