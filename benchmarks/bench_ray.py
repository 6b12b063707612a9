"""The Ray backend against the local one: trials per second, the same runs side by side
(docs/ray.md, "What it costs").

(a) The built-in retail suite with the simulated ``builtin:careful`` agent: trials
    of a few milliseconds, so Ray's per-task cost (scheduling, pickling the cell
    and the trial, the result's trip back) is most of each trial.
(b) A CPU-bound Python agent (about 20 ms of pure-Python work per trial, then the
    counter task): one local process runs it on one core whatever the concurrency
    (the GIL); Ray's worker processes use every CPU it was given.

Ray is started once (``num_cpus`` = the machine's CPUs, ``--cpus``), and its start-up
is printed apart; each figure is the best of ``--repeat`` runs, every run printed.
Figures depend on the machine and its load; the script prints the load average
beside them.

Run: ``python benchmarks/bench_ray.py [--smoke]`` (needs ``pip install 'agentgauge[ray]'``;
without it the script reports a row saying so).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import Row, emit, row, smoke_flag
from agentgauge.agents.base import Session
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.testing.worlds import counting_agent


async def busy_agent(session: Session) -> None:
    """About 20 ms of pure-Python work (it holds the GIL), then solves the counter task."""
    total = 0
    for i in range(400_000):
        total += i * i
    session.record_cost(0.0)
    await counting_agent(session)


def counter_tasks(n: int) -> list[Task]:
    return [
        Task(
            id=f"t{i}",
            instruction=f"please add {i % 7 + 1}",
            environment="agentgauge.testing.worlds:make_counter_env",
            expectations={"final_state": {"counter": i % 7 + 1}},
        )
        for i in range(n)
    ]


def timed(suite: Any, agent: Any, backend: str, folder: Path, **kw: Any) -> tuple[float, int]:
    store = folder / f"{backend}-{time.monotonic_ns()}.db"
    start = time.perf_counter()
    header = run(suite, agent, store=store, progress=False, backend=backend, **kw)
    return time.perf_counter() - start, header.n_trials


NAME = "ray"


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    smoke_flag(parser)
    parser.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    repeat = 1 if args.quick else args.repeat
    try:
        import ray
    except ImportError:
        return [row(NAME, "Ray backend", None, "trials/s", note="ray not installed")]
    rows: list[Row] = []

    start = time.perf_counter()
    ray.init(
        num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR"
    )
    print(f"Ray {ray.__version__} local instance, {args.cpus} CPUs: "
          f"started in {time.perf_counter() - start:.1f} s")  # fmt: skip
    workloads: list[tuple[str, Any, Any, dict[str, Any]]] = [
        (
            "retail, builtin:careful",
            "builtin:retail",
            "builtin:careful",
            {"trials": 1 if args.quick else 4, "concurrency": 8},
        ),
        (
            "counter, 20 ms CPU-bound agent",
            counter_tasks(20 if args.quick else 60),
            busy_agent,
            {"trials": 2, "concurrency": 2 * args.cpus},
        ),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        timed("builtin:retail", "builtin:careful", "ray", folder, trials=1)  # warm the workers
        for label, suite, agent, kw in workloads:
            best: dict[str, float] = {}
            for i in range(repeat):
                for backend in ("local", "ray"):  # interleaved: the same load for both
                    seconds, n = timed(suite, agent, backend, folder, **kw)
                    rate = n / seconds
                    best[backend] = max(best.get(backend, 0.0), rate)
                    print(f"  {label}: {backend} run {i + 1}: {n} trials in {seconds:.2f} s "
                          f"= {rate:.0f} trials/s")  # fmt: skip
            ratio = best["ray"] / best["local"]
            print(f"{label}: local {best['local']:.0f} trials/s, ray {best['ray']:.0f} "
                  f"trials/s (best of {repeat}): ray/local = {ratio:.2f}")  # fmt: skip
            rows.append(
                row(
                    NAME,
                    f"{label}: --backend ray, one machine",
                    best["ray"],
                    "trials/s",
                    reference=best["local"],
                    reference_name="--backend local, same run",
                    higher_is_better=True,
                )
            )
    ray.shutdown()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return rows


if __name__ == "__main__":
    emit(main())
