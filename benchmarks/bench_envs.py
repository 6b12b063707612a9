"""How fast a retail trial's world is: environment creation, a typical trial, export.

Run by hand: ``python benchmarks/bench_envs.py [--smoke]`` (``--smoke``: 20 trials, one
run each). Prints figures; asserts nothing.
The harness target is thousands of trials per second with a no-op agent, so the
environment's share of a trial must stay well under a millisecond.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _report import Row, emit, row, smoke_flag
from agentgauge.envs.faults import make_env
from agentgauge.envs.reference_agents import reference_agent
from agentgauge.harness.session import TrialSession
from agentgauge.suite import load_suite

NAME = "bench_envs"


def per_call_us(fn: object, n: int, repeats: int = 5) -> float:
    """Best of ``repeats`` runs (the machine is shared; the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(n):
            fn(i)  # type: ignore[operator]
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    args = parser.parse_args(argv)
    n, repeats = (20, 1) if args.smoke else (1000, 5)
    start = time.perf_counter()
    suite = load_suite("builtin:retail")
    print(f"load builtin:retail ({len(suite.tasks)} tasks, plans replayed): "
          f"{(time.perf_counter() - start) * 1e3:.1f} ms")  # fmt: skip
    task = suite.task("cancel_pending_W1001")

    def create(i: int) -> None:
        make_env(task, "base", i).close()

    def noop_trial(i: int) -> None:
        env = make_env(task, "base", i)
        TrialSession(task.id, env, seed=i).outcome()
        env.close()

    oracle = reference_agent("builtin:oracle", suite.tasks)

    async def oracle_trials(n: int) -> None:
        for i in range(n):
            env = make_env(task, "base", i)
            session = TrialSession(task.id, env, seed=i)
            await oracle(session)
            session.outcome()
            env.close()

    create_us = per_call_us(create, n, repeats)
    noop_us = per_call_us(noop_trial, n, repeats)
    print(f"environment creation:              {create_us:8.1f} us")
    print(f"no-op trial (create+session+state):{noop_us:8.1f} us")
    oracle_us = per_call_us(lambda i: asyncio.run(oracle_trials(n)), 1, repeats) / n
    print(f"oracle trial (3 calls, confirm):   {oracle_us:8.1f} us  "
          f"(~{1e6 / oracle_us:,.0f} trials/s on one core)")  # fmt: skip
    return [
        row(NAME, "retail environment creation", create_us, "µs"),
        row(NAME, "retail no-op trial (create + session + state)", noop_us, "µs"),
        row(NAME, "retail oracle trial (3 calls, confirm)", oracle_us, "µs"),
    ]


if __name__ == "__main__":
    emit(main())
