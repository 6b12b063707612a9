"""``compare``, ``report`` and ``show`` on one large stored run, each in its own process.

Builds the run a user reported as slow: two agents (``A`` at a 60 % pass rate, ``B`` at
65 %), each on ``--tasks`` tasks × 20 trials (default 1,250 tasks: 50,000 trials; the
report was on 5,000: 200,000), seeded, imported with ``agentgauge import jsonl`` as a
user would. Then times, as a user runs them (``python -m agentgauge``, best of
``--repeat``, wall clock and the process's peak memory):

- ``metrics DB:RUN --json``: columns read straight from SQL, no trial built (what the
  others are measured against);
- ``compare 'DB:RUN#agent=A' 'DB:RUN#agent=B'``;
- ``report DB:RUN --html``;
- ``show DB:RUN`` (the failing cells).

Beside them, in the same run: ``Store.trials(run, events=False)``, a pydantic object per
trial, which each of the three paid (``compare`` twice over, ``report`` with the
transcripts) before they read the columns; ``report`` now builds only the failing
trials whose transcripts it shows. Its goals are against ``metrics`` of the same run,
which reads the same columns: at most 3 times its wall time and 2 times its peak
memory (before, 15 CPU seconds and 1.2 GB against 2 s and 0.17 GB for 100,000 trials
with transcripts; benchmarks/RESULTS.md, "Report, measured apart"). The others have no
goal: their figures are for before/after comparisons on one machine.
Figures on a loaded machine move; the ratios within one run hold.

Run: ``nice python benchmarks/bench_large_run.py [--tasks 5000] [--repeat 1] [--smoke]``
(``--smoke``: 25 tasks, 1,000 trials).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import Row, emit, row, smoke_flag
from agentgauge.store import Store

NAME = "bench_large_run"
TRIALS = 20
IMPORT = (sys.executable, "-m", "agentgauge", "import", "jsonl")


def write_trials(path: Path, tasks: int) -> int:
    """The JSONL of the reported run; returns its number of trials."""
    rng = random.Random(1)
    n = 0
    with path.open("w") as f:
        for agent, p in (("A", 0.6), ("B", 0.65)):
            for i in range(tasks):
                q = min(1.0, max(0.0, p + rng.uniform(-0.4, 0.4)))
                for k in range(TRIALS):
                    record = {
                        "task_id": f"t{i:05d}",
                        "trial": k,
                        "agent": agent,
                        "model": "m",
                        "family": f"f{i % 100}",
                        "success": rng.random() < q,
                        "cost_usd": 0.01,
                        "latency_s": 5.0,
                        "tool_calls": 3,
                    }
                    f.write(json.dumps(record) + "\n")
                    n += 1
    return n


def agentgauge(*args: str) -> tuple[float, float]:
    """Runs the command in a fresh process; its wall time (s) and peak memory (MB)."""
    script = (
        "import resource, subprocess, sys, time\n"
        "t0 = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "wall = time.perf_counter() - t0\n"
        "print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, sys.executable, "-m", "agentgauge", *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
    ).stdout.split()
    return float(out[0]), float(out[1]) / 1024  # ru_maxrss: KB on Linux


def best(repeat: int, *args: str) -> tuple[float, float]:
    runs = [agentgauge(*args) for _ in range(repeat)]
    return min(w for w, _ in runs), min(m for _, m in runs)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_250, help="tasks per agent (x20 trials)")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs")
    smoke_flag(parser)
    args = parser.parse_args(argv)
    tasks = 25 if args.smoke else args.tasks
    repeat = 1 if args.smoke else args.repeat
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, db = Path(tmp) / "t.jsonl", Path(tmp) / "big.db"
        n = write_trials(jsonl, tasks)
        run = f"{db}:big"
        t0 = time.perf_counter()
        subprocess.run(
            [*IMPORT, str(jsonl), "--store", str(db), "--run-id", "big"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"imported {n:,} trials in {time.perf_counter() - t0:.1f} s")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        with Store(db, readonly=True) as store:
            built = len(store.trials("big", events=False))
        reference = time.perf_counter() - t0
        assert built == n
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        print(f"Store.trials(events=False): {reference:.2f} s (+{grown:.0f} MB)")
        rows.append(
            row(
                NAME, f"Store.trials(run, events=False), {n:,} trials: a model each", reference, "s"
            )
        )
        commands = {
            "metrics --json": ("metrics", run, "--json"),
            "compare, #agent=A vs #agent=B": ("compare", f"{run}#agent=A", f"{run}#agent=B"),
            "report --html": ("report", run, "--html", str(Path(tmp) / "r.html"), "--force"),
            "show (failing cells)": ("show", run),
        }
        measured: dict[str, tuple[float, float]] = {}
        for label, command in commands.items():
            wall, peak = best(repeat, *command)
            measured[label] = (wall, peak)
            print(f"{label}: {wall:.2f} s, {peak:.0f} MB")
            if label != "report --html":
                rows.append(row(NAME, f"{label}, {n:,} trials (wall)", wall, "s"))
                rows.append(row(NAME, f"{label}, {n:,} trials (peak memory)", peak, "MB"))
        # The report reads the columns `metrics` reads, and a few transcripts besides.
        (wall, peak), (m_wall, m_peak) = measured["report --html"], measured["metrics --json"]
        for what, ours, theirs, unit, times in (
            ("wall", wall, m_wall, "s", 3),
            ("peak memory", peak, m_peak, "MB", 2),
        ):
            rows.append(
                row(
                    NAME,
                    f"report --html, {n:,} trials ({what})",
                    ours,
                    unit,
                    reference=theirs,
                    reference_name="metrics --json of the same run",
                    goal=f"≤ {times}× metrics",
                    met=None if args.smoke else ours <= times * theirs,
                )
            )
    return rows


if __name__ == "__main__":
    emit(main())
