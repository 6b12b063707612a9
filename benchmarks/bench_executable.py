"""What the executable grader costs per call: the shared worker process against a
fresh process per call (the design it replaced on paper) and a direct in-process
call (what a thread-based design would cost, had a thread been stoppable).

Run by hand: ``python benchmarks/bench_executable.py [--smoke]``. Prints figures, best
of five runs each, side by side in one process; asserts nothing. ``--smoke``: a few
calls each, one run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from _report import Row, emit, row, smoke_flag
from agentgauge.envs.functions.callables import convert_length
from agentgauge.graders.exec_runner import Executor

REF = "agentgauge.envs.functions.callables:convert_length"
ARGS = {"value": 5, "from_unit": "km", "to_unit": "mi"}
NAME = "bench_executable"


def best_us(fn: Callable[[], object], n: int, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


#: A standard-library callable: a fresh process then pays Python's start-up alone,
#: not also the import of agentgauge that the built-in callables' module brings.
STDLIB_REF, STDLIB_ARGS = "json:dumps", {"obj": [5, "km", "mi"]}


def fresh_process_call(ref: str, args: dict[str, object]) -> object:
    ex = Executor()
    try:
        return ex.call(ref, args, 5.0)
    finally:
        ex.close()


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    smoke = parser.parse_args(argv).smoke
    scale, repeats = (0.01, 1) if smoke else (1.0, 5)

    def n(calls: int) -> int:
        return max(1, int(calls * scale))

    shared = Executor()
    shared.call(REF, ARGS, 5.0)  # start-up paid once, as in a run
    try:
        worker = best_us(lambda: shared.call(REF, ARGS, 5.0), n(2000), repeats)
    finally:
        shared.close()
    fresh = best_us(lambda: fresh_process_call(REF, ARGS), n(10), repeats)
    fresh_stdlib = best_us(lambda: fresh_process_call(STDLIB_REF, STDLIB_ARGS), n(20), repeats)
    direct = best_us(lambda: convert_length(**ARGS), n(200_000), repeats)  # type: ignore[arg-type]
    print(f"shared worker              {worker:10.1f} µs per call")
    print(
        f"fresh process              {fresh:10.1f} µs per call  ({fresh / worker:.0f}× the worker)"
    )
    print(
        f"fresh process, json:dumps  {fresh_stdlib:10.1f} µs per call  "
        f"({fresh_stdlib / worker:.0f}× the worker)"
    )
    ratio = worker / direct
    print(f"direct, in-process         {direct:10.2f} µs per call  (the worker: {ratio:.0f}×)")
    figure = "executable grader call, shared worker process"
    return [
        row(NAME, figure, worker, "µs", reference=fresh, reference_name="a fresh process per call"),
        row(
            NAME,
            figure,
            worker,
            "µs",
            reference=fresh_stdlib,
            reference_name="a fresh process per call, json:dumps, no agentgauge import",
        ),
        row(
            NAME,
            figure,
            worker,
            "µs",
            reference=direct,
            reference_name="direct in-process call: no isolation, not stoppable",
        ),
    ]


if __name__ == "__main__":
    emit(main())
