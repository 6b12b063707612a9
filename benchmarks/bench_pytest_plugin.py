"""What installing agentgauge costs every pytest session: the plugin's import time.

Run by hand: ``python benchmarks/bench_pytest_plugin.py [--smoke]`` (``--smoke``: one
start-up each instead of the best of five). Prints figures; asserts
nothing. pytest imports `agentgauge.pytest_plugin` (entry point ``pytest11``) at
the start of every session of anyone who has agentgauge installed, whether or
not a test evaluates an agent. The plugin module imports nothing of the engine,
but importing it first runs ``agentgauge/__init__.py``; this prints both shares.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from _report import Row, emit, row, smoke_flag

NAME = "bench_pytest_plugin"


def best_of(code: str, repeats: int = 5) -> float:
    """Best wall time in seconds of a fresh interpreter running ``code`` (shared machine:
    the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    repeats = 1 if parser.parse_args(argv).smoke else 5
    bare = best_of("import pytest", repeats)
    package = best_of("import pytest, agentgauge", repeats)
    plugin = best_of("import pytest, agentgauge.pytest_plugin", repeats)
    print(f"import pytest                            {bare:6.3f} s")
    print(f"import pytest, agentgauge                {package:6.3f} s")
    print(f"import pytest, agentgauge.pytest_plugin  {plugin:6.3f} s")
    print(f"added by the package __init__            {package - bare:6.3f} s")
    print(f"added by the plugin module itself        {plugin - package:6.3f} s")
    print(f"session start-up ratio (plugin / bare)   {plugin / bare:6.2f}x")
    return [
        row(
            NAME,
            "pytest start-up with the agentgauge plugin",
            plugin,
            "s",
            reference=bare,
            reference_name="import pytest alone",
        )
    ]


if __name__ == "__main__":
    emit(main())
