"""Parquet export and Parquet SOURCEs: how fast, beside the paths they replace.

Run by hand: ``python benchmarks/bench_parquet.py [--trials N] [--smoke]``, or by
``make bench`` (benchmarks/run_all.py). Prints figures; asserts nothing. A store
run of N trials (default 100,000) is built by repeating
the trials of a real harness run of the retail suite (transcripts, grades, final
states), then, best of three each, side by side in this process:

- ``export --parquet`` (column-wise from SQL) against ``export --jsonl`` (a
  `Trial` model per row, the path every export took before);
- reading the outcome table from the Parquet export against reading it from the
  store (`Store.table`, straight from SQL);
- ``metrics`` on the export against the same on the store, outcomes only and
  with every section (tool use, control, reliability: from the facts columns).

Then ``show EXPORT --task T --trial K --json`` (one trial's transcript) in a fresh
process, CPU time and peak memory, beside the work it did before it read only that
task's rows (`TrialSource.pick`): every trial of the export built, then the task's
picked. Its export is of N trials as a large suite has them, 10 of each task
(`bench_scale.synthetic_trials`: transcripts of 4 to 8 events, two grades), not the
retail run repeated, whose every task would have N/50 trials (``--show-only``:
this figure alone).

Then a synthetic 1,000,000-trial ``trials.parquet`` (10 trials of 100,000 tasks)
read into a `TrialTable`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _report import Row, emit, row, smoke_flag
from agentgauge import metrics
from agentgauge.exporters import export_parquet, export_run
from agentgauge.harness.runner import run
from agentgauge.parquet import TRIALS_FILE
from agentgauge.sources import open_source
from agentgauge.store import Store


def best(fn: Callable[[], Any], repeats: int) -> float:
    """Best of ``repeats`` wall times in seconds (the machine is shared)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def big_run(folder: Path, n: int) -> Path:
    """A store whose run ``big`` holds ``n`` trials: a retail run's trials repeated."""
    db = folder / "s.db"
    run("builtin:retail", "builtin:careful", trials=2, store=db, run_id="seed", progress=False)
    with Store(db) as store:
        seed = store.trials("seed")
        header = store.require_run("seed").model_copy(update={"run_id": "big"})
        store.create_run(header)
        store.add_tasks("big", store.get_tasks("seed"))
        store.conn.commit()
        batch = []
        for i in range(n):
            original = seed[i % len(seed)]
            trial = original.model_copy()
            trial.trial = (i // len(seed)) * 2 + (original.trial or 0)  # two trials a task
            batch.append(trial)
            if len(batch) == 10_000:
                store.add_trials("big", batch)
                batch = []
        if batch:
            store.add_trials("big", batch)
    return db


#: ``show --task --trial --json`` as it was before it picked the task's rows: every
#: trial of the export built (`TrialSource.trials`), the task's trials taken from them.
_SHOW_BEFORE = """
import sys
from agentgauge.report.show import trials_document
from agentgauge.sources import open_source
src = open_source(sys.argv[1])
trials_document(src.trials, source=sys.argv[1], task=sys.argv[2], trial=int(sys.argv[3]))
"""


def in_process(*args: str) -> tuple[float, float]:
    """Runs ``python ARGS`` in a fresh process: its CPU time (user + system, s) and peak
    resident memory (MB)."""
    script = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(u.ru_utime + u.ru_stime, u.ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, sys.executable, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
    ).stdout.split()
    return float(out[0]), float(out[1]) / 1024  # ru_maxrss: KB on Linux


def suite_export(folder: Path, n: int) -> Path:
    """An export of a run of ``n`` trials, 10 of each task (`bench_scale`'s trials)."""
    from agentgauge.schema import Run
    from agentgauge.store.rows import utc_now
    from bench_scale import synthetic_trials

    db = folder / "suite.db"
    with Store(db) as store:
        store.create_run(Run(run_id="suite", created_at=utc_now(), agent="agent", model="m"))
        batch = []
        for trial in synthetic_trials(max(1, n // 10), 10, seed=0):
            batch.append(trial)
            if len(batch) == 10_000:
                store.add_trials("suite", batch)
                batch = []
        if batch:
            store.add_trials("suite", batch)
    export_parquet(f"{db}:suite", folder / "suite")
    return folder / "suite"


def show_one(out: Path, repeats: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """``show EXPORT --task T --trial 1 --json`` of a task in the middle of the export,
    and the same document built as before (`_SHOW_BEFORE`): best CPU time and peak
    memory of ``repeats`` fresh processes each."""
    table = open_source(str(out)).table
    task = str(table.task_id[len(table) // 2])
    after = [
        in_process("-m", "agentgauge", "show", str(out), "--task", task, "--trial", "1", "--json")
        for _ in range(repeats)
    ]
    before = [in_process("-c", _SHOW_BEFORE, str(out), task, "1") for _ in range(repeats)]
    best_of = [(min(c for c, _ in runs), min(m for _, m in runs)) for runs in (after, before)]
    return best_of[0], best_of[1]


def synthetic(path: Path, tasks: int = 100_000, trials: int = 10) -> int:
    rng = np.random.default_rng(0)
    n = tasks * trials
    task_ids = pa.array([f"task-{i:06d}" for i in range(tasks)]).take(
        pa.array(np.repeat(np.arange(tasks), trials))
    )
    p = rng.beta(2, 2, size=tasks).repeat(trials)
    success = rng.random(n) < p
    table = pa.table(
        {
            "task_id": task_ids.dictionary_encode(),
            "trial": np.tile(np.arange(trials), tasks),
            "success": success,
            "score": success.astype(float),
            "agent": pa.array(["agent-a"] * n).dictionary_encode(),
            "family": pa.array([f"fam-{i % 5000}" for i in range(tasks)])
            .take(pa.array(np.repeat(np.arange(tasks), trials)))
            .dictionary_encode(),
            "cost_usd": rng.gamma(2.0, 0.01, size=n),
            "latency_s": rng.gamma(2.0, 1.5, size=n),
        }
    )
    pq.write_table(table, path, compression="zstd")
    return n


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--show-only", action="store_true", help="measure show alone")
    smoke_flag(parser)
    args = parser.parse_args(argv)
    n_trials = 500 if args.smoke else args.trials
    tasks = 2_000 if args.smoke else 100_000
    repeats = 1 if args.smoke else 3
    name = "bench_parquet"
    folder = Path(tempfile.mkdtemp(prefix="bench-parquet-"))
    try:
        start = time.perf_counter()
        suite = suite_export(folder, n_trials)
        print(f"built a {n_trials:,}-trial suite's export in {time.perf_counter() - start:.1f} s")
        shown = show_one(suite, repeats)
        if args.show_only:
            return show_rows(name, n_trials, *shown)
        start = time.perf_counter()
        db = big_run(folder, n_trials)
        print(f"built a {n_trials:,}-trial run in {time.perf_counter() - start:.1f} s")
        out = folder / "pq"

        def parquet_export() -> None:
            export_parquet(f"{db}:big", out, force=True)

        def jsonl_export() -> None:
            export_run(f"{db}:big", "jsonl", folder / "big.jsonl", force=True)

        t_pq, t_jsonl = best(parquet_export, repeats), best(jsonl_export, repeats)
        with Store(db, readonly=True) as store:
            (n_events,) = store.conn.execute("SELECT COUNT(*) FROM events").fetchone()
        print(f"export --parquet: {t_pq:7.2f} s ({n_trials / t_pq:,.0f} trials/s, "
              f"{n_events:,} events)   export --jsonl: {t_jsonl:7.2f} s")  # fmt: skip

        def store_table() -> None:
            with Store(db, readonly=True) as store:
                store.table("big")

        def parquet_table() -> None:
            _ = open_source(str(out)).table

        t_st, t_pt = best(store_table, repeats), best(parquet_table, repeats)
        t_sm = best(lambda: metrics(f"{db}:big", behaviour=False), repeats)
        t_pm = best(lambda: metrics(str(out), behaviour=False), repeats)
        t_sa = best(lambda: metrics(f"{db}:big"), repeats)
        t_pa = best(lambda: metrics(str(out)), repeats)

        big = folder / "synthetic"
        big.mkdir()
        n = synthetic(big / TRIALS_FILE, tasks=tasks)
        t_read = best(lambda: open_source(str(big)).table, repeats)
        t_all = best(lambda: metrics(str(big), behaviour=False, by=("agent",)), repeats)
        print(f"synthetic {n:,} trials: table {t_read:.2f} s, outcome metrics {t_all:.2f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    size = f"{n_trials:,} trials"
    return [
        row(name, f"export --parquet, {size}", t_pq, "s", reference=t_jsonl,
            reference_name="export --jsonl"),
        row(name, f"outcome columns from Parquet, {size}", t_pt, "s", reference=t_st,
            reference_name="Store.table"),
        row(name, f"metrics, every section, from Parquet, {size}", t_pa, "s", reference=t_sa,
            reference_name="from the store"),
        row(name, f"metrics, outcomes only, from Parquet, {size}", t_pm, "s", reference=t_sm,
            reference_name="from the store"),
        row(name, f"trials.parquet of {n:,} trials into the table", t_read, "s"),
        row(name, f"outcome metrics on a trials.parquet of {n:,} trials", t_all, "s"),
        *show_rows(name, n_trials, *shown),
    ]  # fmt: skip


def show_rows(
    name: str, n_trials: int, after: tuple[float, float], before: tuple[float, float]
) -> list[Row]:
    (cpu, peak), (cpu_before, peak_before) = after, before
    print(f"show --task --trial of a {n_trials:,}-trial export: {cpu:.2f} s CPU, {peak:.0f} MB; "
          f"every trial built: {cpu_before:.2f} s CPU, {peak_before:.0f} MB")  # fmt: skip
    figure = f"show --task T --trial K --json of a {n_trials:,}-trial export"
    every = "every trial built (show before)"
    return [
        row(name, f"{figure} (CPU)", cpu, "s", reference=cpu_before, reference_name=every),
        row(name, f"{figure} (peak memory)", peak, "MB", reference=peak_before,
            reference_name=every),
    ]  # fmt: skip


if __name__ == "__main__":
    emit(main())
