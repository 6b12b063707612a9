"""The viewer on 100,000-trial runs: each page over HTTP, goal under 1 s.

Builds a store with two runs of 100,000 trials each (5,000 tasks × 4 trials × 5
variants, seeded outcomes, costs and latencies; a few trials with a transcript
and grades), written with `Store.add_trials` in one transaction per run. Then
starts ``agentgauge view`` in its own process, as a user would, and times over
HTTP (``urllib``, one request at a time, best of ``--repeat``):

- the runs list (``/``);
- a run's page, first (a fresh server: the summary is computed from
  `Store.table`) and cached (the same page again);
- its tasks page (first page of 5,000 tasks), first and again, and a filtered
  one (failed only);
- a trial's page (a trial with a 60-event transcript);
- the diff page of the two runs, first (run A's table already read for its
  page, run B's not) and cached.

Reference, measured side by side in the same run: ``Store.trials(run,
events=False)``, a pydantic object per trial, which is what a viewer that read
runs the way the report does would pay before computing anything.

Run: ``nice python benchmarks/bench_viewer.py [--repeat 5] [--keep DIR] [--smoke]``
(``--smoke``: 50 tasks, 1,000 trials a run, one repeat; the goal is for 100,000).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from _report import Row, emit, row, smoke_flag
from agentgauge.schema import Event, Grade, Run, Trial
from agentgauge.store import Store, utc_now

N_TASKS = 5_000
TRIALS = 4
VARIANTS = ("base", "paraphrase", "fault:tool_error", "fault:rate_limit", "env:rename_keys")
GOAL_S = 1.0
NAME = "bench_viewer"


def _events(n: int) -> list[Event]:
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Event] = TypeAdapter(Event)
    out: list[Event] = []
    for i in range(n):
        t = float(i)
        if i % 3 == 0:
            out.append(
                adapter.validate_python(
                    {
                        "type": "model_call",
                        "t": t,
                        "model": "m",
                        "latency_s": 0.5,
                        "cost_usd": 0.001,
                    }
                )
            )
        elif i % 3 == 1:
            out.append(
                adapter.validate_python(
                    {"type": "tool_call", "t": t, "name": "lookup", "arguments": {"q": i}}
                )
            )
        else:
            out.append(
                adapter.validate_python(
                    {"type": "tool_result", "t": t, "name": "lookup", "content": f"row {i}"}
                )
            )
    return out


def _trials(agent: str, skill: float, seed: int, n_tasks: int = N_TASKS) -> list[Trial]:
    rng = random.Random(seed)
    events = _events(60)
    out = []
    for task in range(n_tasks):
        difficulty = rng.random()
        for variant in VARIANTS:
            for k in range(TRIALS):
                ok = rng.random() < skill * (1 - 0.6 * difficulty)
                detailed = task < 3 and variant == "base"
                out.append(
                    Trial(
                        task_id=f"task-{task:05d}",
                        trial=k,
                        variant=variant,
                        agent=agent,
                        family=f"family-{task % 40}",
                        success=ok,
                        cost_usd=0.002 + 0.001 * rng.random(),
                        latency_s=1 + 4 * rng.random(),
                        events=events if detailed else [],
                        grades=[Grade(grader="state", passed=ok, score=float(ok))]
                        if detailed
                        else [],
                    )
                )
    return out


def build(db: Path, n_tasks: int = N_TASKS) -> None:
    with Store(db) as store:
        for run_id, skill, seed in (("bench-a", 0.6, 1), ("bench-b", 0.7, 2)):
            store.create_run(Run(run_id=run_id, agent=run_id, created_at=utc_now()))
            t0 = time.perf_counter()
            trials = _trials(run_id, skill, seed, n_tasks)
            made = time.perf_counter() - t0
            t0 = time.perf_counter()
            store.add_trials(run_id, trials)
            print(
                f"{run_id}: {len(trials):,} trials made in {made:.1f} s, "
                f"written in {time.perf_counter() - t0:.1f} s"
            )


class Viewer:
    """``agentgauge view`` in its own process on a free port."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentgauge", "view", "--store", str(db), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.url = "http://" + line.split("http://")[1].split("/")[0]
        self.get("/static/viewer.css")  # wait until it answers

    def get(self, path: str) -> float:
        t0 = time.perf_counter()
        with urllib.request.urlopen(self.url + path, timeout=120) as r:
            r.read()
            assert r.status == 200, path
        return time.perf_counter() - t0

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def best(repeat: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(repeat))


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the store in DIR and keep it")
    args = parser.parse_args(argv)
    n_tasks = 50 if args.smoke else N_TASKS
    if args.smoke:
        args.repeat = 1
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "agentgauge.db"
    if not db.exists():
        build(db, n_tasks)
    with Store(db, readonly=True) as store:
        pk = store.trial_keys("bench-a")[0]  # task-00000, trial 0, base: 60 events
        reference = best(
            args.repeat,
            lambda: _timed(lambda: store.trials("bench-a", events=False)),
        )
    pages = {
        "runs list": "/",
        "run page (cached)": "/runs/bench-a",
        "tasks page": "/runs/bench-a/tasks",
        "tasks page, failed only": "/runs/bench-a/tasks?failed=1&variant=base",
        "trial page (60 events)": f"/runs/bench-a/trials/{pk}",
        "diff page (cached)": "/diff?a=bench-a&b=bench-b",
    }
    firsts: dict[str, list[float]] = {
        "run page (first)": [],
        "tasks page (first)": [],
        "diff page (first)": [],
    }
    times: dict[str, list[float]] = {name: [] for name in pages}
    for _ in range(max(1, min(args.repeat, 3))):  # a fresh server each time: first loads
        viewer = Viewer(db)
        try:
            firsts["run page (first)"].append(viewer.get("/runs/bench-a"))
            firsts["tasks page (first)"].append(viewer.get("/runs/bench-a/tasks"))
            firsts["diff page (first)"].append(viewer.get("/diff?a=bench-a&b=bench-b"))
            for name, path in pages.items():
                times[name].append(best(args.repeat, lambda p=path, v=viewer: v.get(p)))
        finally:
            viewer.close()
    with Store(db, readonly=True) as store:
        n_trials = len(store.trial_keys("bench-a"))
    print(f"\nstore: {db} ({db.stat().st_size / 1e6:.0f} MB), 2 runs × {n_trials:,} trials")
    print(f"reference: Store.trials(run, events=False): {reference:.3f} s (one object per trial)")
    results = {**{k: min(v) for k, v in firsts.items()}, **{k: min(v) for k, v in times.items()}}
    worst = 0.0
    rows = []
    judged = n_trials >= 100_000  # the goal is for 100,000-trial runs
    for name, seconds in results.items():
        worst = max(worst, seconds)
        mark = "ok" if seconds < GOAL_S else "OVER GOAL"
        print(f"  {name:<28} {seconds:7.3f} s   {seconds / reference:6.2f}× the reference   {mark}")
        rows.append(
            row(
                NAME,
                f"{name}, {n_trials:,}-trial runs, over HTTP",
                seconds,
                "s",
                reference=reference,
                reference_name="Store.trials, one object per trial",
                goal=f"< {GOAL_S:.0f} s",
                met=seconds < GOAL_S if judged else None,
            )
        )
    print(f"goal: every page under {GOAL_S:.0f} s; slowest {worst:.3f} s")
    if not args.keep:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        folder.rmdir()
    return rows


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    emit(main())
