"""A store whose records an older agentgauge derived: reads before and after
``agentgauge runs --refresh``, and the refresh itself.

A store written by a release whose facts' rules were older (`agentgauge.facts.RULES`
raised since) holds records this agentgauge does not trust: every read derives them
again from the trials, as models. ``runs --refresh`` stores them anew, once. Timed end
to end as a user runs them (the CLI in a subprocess, start-up included) on a run of
100,000 trials (10,000 tasks × 10), written by the store's own writer with the
synthetic trials of `bench_scale` (transcripts, grades, cost, tokens); the older
release is played by stamping the store's records with the previous rules' version,
which is all that tells the two apart. The store is written once and kept in
``$AGENTGAUGE_BENCH_CACHE`` (as `bench_scale` keeps its), each round on a copy. Wall
and CPU seconds are both given: the CPU time holds while other processes share the
cores. Checked on the way: the stale read says so once
on stderr, and ``metrics --json`` prints the same bytes before and after.

Run: ``python benchmarks/bench_store_refresh.py [--smoke]``.
"""

from __future__ import annotations

import argparse
import math
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from _report import Row, emit, row, smoke_flag
from agentgauge.facts import RULES
from agentgauge.schema import Run
from agentgauge.store import Store
from agentgauge.store.packed import LAYOUT
from agentgauge.store.rows import utc_now
from bench_scale import _version, cache_dir, synthetic_trials

NAME = "store_refresh"
ROUNDS = 2


def build(path: Path, n_tasks: int) -> None:
    """One run, ``big``, of ``n_tasks`` × 10 trials, written as `bench_scale` writes its."""
    tmp = path.with_suffix(".partial")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store(tmp) as store:
        store.create_run(Run(run_id="big", created_at=utc_now(), agent="agent", model="m"))
        batch = []
        for trial in synthetic_trials(n_tasks, 10, seed=0):
            batch.append(trial)
            if len(batch) == 10_000:
                store.add_trials("big", batch)
                batch = []
        if batch:
            store.add_trials("big", batch)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tmp.rename(path)
    print(f"wrote {n_tasks * 10:,} trials in {time.perf_counter() - t0:.0f} s")


def make_stale(path: Path) -> None:
    """The records as a release with the previous rules stamped them."""
    conn = sqlite3.connect(path)
    old = f"{RULES - 1}:{LAYOUT.partition(':')[2]}"
    conn.execute("UPDATE meta SET value = ? WHERE key = 'facts_layout'", (old,))
    conn.commit()
    conn.close()


def cli(*args: str) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """``agentgauge ARGS`` in a subprocess: wall seconds, CPU seconds (user + system: the
    figure that holds while other processes share the cores), and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"agentgauge {' '.join(args)} failed: {proc.stderr.strip()}")
    return elapsed, cpu, proc


def best_metrics(db: Path, rounds: int) -> tuple[float, float, str, str]:
    best, cpu, out, err = math.inf, math.inf, "", ""
    for _ in range(rounds):
        elapsed, used, proc = cli("metrics", f"{db}:big", "--json")
        best, cpu, out, err = min(best, elapsed), min(cpu, used), proc.stdout, proc.stderr
    return best, cpu, out, err


def main() -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__)
    smoke_flag(parser)
    smoke = parser.parse_args().smoke
    n_tasks = 100 if smoke else 10_000
    rounds = 1 if smoke else ROUNDS
    n = n_tasks * 10
    kept = cache_dir() / f"refresh-{n_tasks}-{_version()}.db"  # written once, reused
    if not kept.exists():
        build(kept, n_tasks)
    db = kept.with_suffix(".work.db")
    shutil.copyfile(kept, db)
    current, current_cpu, fresh_out, _ = best_metrics(db, rounds)
    make_stale(db)
    stale, stale_cpu, stale_out, note = best_metrics(db, rounds)
    assert note.count("\n") == 1 and "agentgauge runs --refresh" in note, note
    print(note.strip())
    refresh, refresh_cpu, proc = cli("runs", "--refresh", "--store", str(db))
    print(proc.stdout.strip())
    after, after_cpu, after_out, quiet = best_metrics(db, rounds)
    assert quiet == "", quiet
    assert stale_out == after_out == fresh_out, "metrics changed with the records"
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        p.unlink(missing_ok=True)
    what = f"{n:,} trials"
    return [
        row(
            NAME,
            f"metrics DB:RUN --json, stale records, {what} (CPU {stale_cpu:.1f} s)",
            stale,
            "s",
            note="each read derives the records again; says so once on stderr",
        ),
        row(
            NAME,
            f"metrics DB:RUN --json after runs --refresh, {what} (CPU {after_cpu:.1f} s)",
            after,
            "s",
            reference=stale,
            reference_name="the same read with stale records",
            note="same stdout, byte for byte",
        ),
        row(NAME, f"runs --refresh, {what}, once (CPU {refresh_cpu:.1f} s)", refresh, "s"),
        row(
            NAME,
            f"metrics DB:RUN --json, records never stale, {what} (CPU {current_cpu:.1f} s)",
            current,
            "s",
        ),
    ]


if __name__ == "__main__":
    emit(main())
