"""The ``http:`` adapter's throughput against a loopback agent service (README, "Speed").

The service (`agentgauge.testing.agent_service`, aiohttp, in its own process) answers
each trial after a fixed latency L; at concurrency N the ceiling is N / L trials/s,
one request per trial. Side by side, interleaved, best of ``--repeat``: the
``openai:`` adapter against the loopback chat-completions server at the same L and N
(one model call per trial), the reference the quality bar names (>= 90% of N/L).

Run: ``python benchmarks/bench_http_agent.py [--smoke]`` (``--smoke``, or its old name
``--quick``: 128 trials a run, one repeat). Figures depend on the machine
and its load; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import Row, emit, row, smoke_flag
from agentgauge.agents.http_agent import HttpAgent
from agentgauge.agents.openai import OpenAIAgent
from agentgauge.agents.provider import RetryPolicy
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.testing.worlds import make_counter_env

NAME = "bench_http_agent"


def tasks(n: int) -> list[Task]:
    return [
        Task(id=f"t{i}", instruction=f"add {i}", expectations={"final_state": {"counter": i}})
        for i in range(n)
    ]


def one_run(kind: str, n_trials: int, latency: float, concurrency: int) -> float:
    """Trials per second for one run against a fresh server process."""
    module = (
        "agentgauge.testing.agent_service" if kind == "http" else "agentgauge.testing.openai_server"
    )
    server = subprocess.Popen(
        [sys.executable, "-m", module, "--latency", str(latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        no_retry = RetryPolicy(max_retries=0)
        agent: Any = (
            HttpAgent(url, retry=no_retry)
            if kind == "http"
            else OpenAIAgent("fake-model", base_url=url, retry=no_retry)
        )
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            header = run(
                tasks(n_trials // 8),
                agent,
                trials=8,
                store=Path(tmp) / "bench.db",
                env_factory=make_counter_env,
                concurrency=concurrency,
                progress=False,
            )
            elapsed = time.perf_counter() - start
    finally:
        server.kill()
        server.wait()
    return header.n_trials / elapsed


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    parser.add_argument("--quick", action="store_true", dest="smoke", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=None, help="interleaved repeats (3)")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (1 if args.smoke else 3)
    n, latency, concurrency = (128 if args.smoke else 6_400), 0.05, 64
    ceiling = concurrency / latency
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
        f"{latency * 1e3:.0f} ms latency, concurrency {concurrency}, "
        f"ceiling N/L = {ceiling:,.0f} trials/s, {n} trials a run, best of {args.repeat}"
    )
    best: dict[str, list[float]] = {"http": [], "openai": []}
    for r in range(args.repeat):
        for kind in ("http", "openai") if r % 2 == 0 else ("openai", "http"):
            rate = one_run(kind, n, latency, concurrency)
            best[kind].append(rate)
            print(
                f"    run {r + 1} {kind + ':':8s} {rate:7,.0f} trials/s "
                f"= {rate / ceiling:6.1%} of N/L"
            )
    top = {k: max(v) for k, v in best.items()}
    print(
        f"    best: http: {top['http']:,.0f} trials/s ({top['http'] / ceiling:.1%} of N/L), "
        f"openai: {top['openai']:,.0f} ({top['openai'] / ceiling:.1%}); "
        f"http:/openai: = {top['http'] / top['openai']:.2f}"
    )
    share = top["http"] / ceiling
    return [
        row(
            NAME,
            f"http: adapter, {latency * 1e3:.0f} ms loopback agent service, concurrency "
            f"{concurrency}, % of N/L",
            share * 100,
            "%",
            reference=top["openai"] / ceiling * 100,
            reference_name="openai: adapter over aiohttp, same L and N",
            higher_is_better=True,
            goal="≥ 90% of N/L",
            met=share >= 0.9 if not args.smoke else None,
        )
    ]


if __name__ == "__main__":
    emit(main())
