"""How long a command takes to start: the whole process, as a user at a terminal or
a CI step waits for it.

Each command is started afresh ``--repeat`` times (median wall-clock seconds) beside
the floor any agentgauge command stands on: a Python process that imports typer,
pydantic and numpy and nothing of ours. The commands are ones a user runs many
times a day on small inputs, where start-up is most of the wait: ``--help``,
``runs`` on a store of one run, ``metrics`` of that run, ``import otel`` of the SDK-made
fixture (tests/fixtures/otel: 3 traces) into a new store.

Run: ``python benchmarks/bench_startup.py [--repeat 7] [--smoke]`` (``--smoke``: 2 runs each).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import Row, emit, row, smoke_flag

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "otel"
NAME = "bench_startup"
FLOOR = "import typer, pydantic, numpy"


def _median_wall(argv: list[str], repeat: int) -> float:
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-500:]}")
    return statistics.median(walls)


def main() -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    smoke_flag(parser)
    args = parser.parse_args()
    repeat = 2 if args.smoke else args.repeat
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "s.db"
        trials = folder / "trials.jsonl"
        trials.write_text(
            "".join(
                json.dumps({"task_id": f"t{i % 20}", "trial": i // 20, "success": i % 3 > 0}) + "\n"
                for i in range(60)
            )
        )
        ag = [py, "-m", "agentgauge"]
        subprocess.run([*ag, "import", "jsonl", str(trials), "--store", str(store),
                        "--run-id", "r"], check=True, capture_output=True)  # fmt: skip
        fresh = iter(range(10_000))
        floor = _median_wall([py, "-c", FLOOR], repeat)

        def import_otel() -> list[str]:
            new = folder / f"o{next(fresh)}.db"
            return [*ag, "import", "otel", str(FIXTURE / "genai.jsonl"), "--suite",
                    str(FIXTURE / "suite.yaml"), "--store", str(new)]  # fmt: skip

        commands = {
            "agentgauge --help": [*ag, "--help"],
            "agentgauge runs (a store of one run)": [*ag, "runs", "--store", str(store)],
            "agentgauge metrics (60 trials)": [*ag, "metrics", f"{store}:r"],
        }
        walls = {name: _median_wall(argv, repeat) for name, argv in commands.items()}
        # A new store each time: importing into one that holds the run is refused.
        import_walls = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run(import_otel(), check=True, capture_output=True)
            import_walls.append(time.perf_counter() - start)
        walls["agentgauge import otel (3 traces, new store)"] = statistics.median(import_walls)
    print(f"floor ({FLOOR}): {floor:.3f} s")
    for name, wall in walls.items():
        print(f"{name}: {wall:.3f} s median of {repeat}")
    return [
        row(NAME, name, wall, "s", reference=floor, reference_name=f"python -c '{FLOOR}'")
        for name, wall in walls.items()
    ]


if __name__ == "__main__":
    emit(main())
