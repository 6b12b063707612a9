"""Metrics at scale: a 1,000,000-trial run in the store, and 10,000,000 trials in Parquet.

Goals (issue "Scale out"): ``agentgauge metrics DB:RUN`` — with reliability, tool use
and control — on a 1,000,000-trial stored run in ≤ 10 s; on a Parquet directory of
10,000,000 trials (100,000 tasks × 10 trials × 10 agents) in ≤ 30 s and ≤ 8 GB peak
memory. Both are timed end to end, as a user runs them: the CLI in a subprocess,
start-up and imports included (best of ``ROUNDS``), its peak resident memory from
``getrusage``.

The reference is the path metrics took before records (one pydantic `Trial` a row
with its events and grades, then the metrics): it is timed on a run of
``REF_TRIALS`` trials of the same store and its per-trial cost is given beside the
figure, with what it comes to for a million trials.

The trials are synthetic but complete, and written through the store's own writer
(`Store.add_trials`), as a run or an import writes them: 100,000 tasks in families of
10, every trial with a transcript (a user message, one to three tool calls with their
results, one in ten a failing tool and a recovery, an answer), a ``tool_calls`` and a
``control`` grade, cost, tokens and latency. Writing a million trials takes a quarter
of an hour, so the store is kept in ``$AGENTGAUGE_BENCH_CACHE`` (default
``~/.cache/agentgauge-bench``) and reused while this file and the record layout are
unchanged; the Parquet data set is generated with pyarrow (the columns of
docs/parquet.md) and kept there too.

Run: ``python benchmarks/bench_scale.py [--smoke]``.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from _report import Row, emit, row, smoke_flag
from agentgauge import api
from agentgauge.schema import Grade, Run, Trial
from agentgauge.store import Store
from agentgauge.store.packed import LAYOUT
from agentgauge.store.rows import utc_now

NAME = "scale"
ROUNDS = 3
REF_TRIALS = 20_000
TOOLS = ("get_order", "get_user", "cancel_order", "refund", "search")


def cache_dir() -> Path:
    root = os.environ.get("AGENTGAUGE_BENCH_CACHE") or Path.home() / ".cache/agentgauge-bench"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _version() -> str:
    """What a cached data set depends on: its generator and the store's record layout."""
    text = inspect.getsource(synthetic_trials) + inspect.getsource(build_store) + LAYOUT
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def synthetic_trials(n_tasks: int, k: int, *, seed: int, start: int = 0) -> Iterator[Trial]:
    rng = np.random.default_rng(seed)
    rate = rng.beta(2.0, 1.5, n_tasks)
    for t in range(n_tasks):
        task = start + t
        for j in range(k):
            ok = bool(rng.random() < rate[t])
            failing = bool(rng.random() < 0.1)
            calls = [TOOLS[i] for i in rng.integers(0, len(TOOLS), int(rng.integers(1, 4)))]
            events: list[dict[str, object]] = [{"type": "message", "role": "user", "content": "hi"}]
            for i, name in enumerate(calls):
                events.append(
                    {"type": "tool_call", "name": name, "arguments": {"id": i}, "call_id": f"c{i}"}
                )
                error = failing and i == 0
                events.append(
                    {
                        "type": "tool_result",
                        "name": name,
                        "call_id": f"c{i}",
                        "content": "timed out" if error else "ok",
                        "is_error": error,
                    }
                )
            events.append({"type": "message", "role": "assistant", "content": "done"})
            yield Trial(
                task_id=f"task-{task:06d}",
                trial=j,
                success=ok,
                score=float(ok),
                family=f"family-{task // 10:05d}",
                agent="agent",
                model="model",
                cost_usd=round(float(rng.gamma(2.0, 0.005)), 6),
                input_tokens=int(rng.integers(500, 2000)),
                output_tokens=int(rng.integers(50, 400)),
                latency_s=round(float(rng.gamma(2.0, 1.0)), 3),
                tool_calls=len(calls),
                model_calls=2,
                expected_control="act",
                control="act" if ok else "ask",
                events=events,  # type: ignore[arg-type]
                grades=[
                    Grade(
                        grader="tool_calls",
                        passed=ok,
                        score=float(ok),
                        status=None if ok else "value_error:string",
                        evidence={"n_calls": len(calls), "n_expected": 1},
                    ),
                    Grade(
                        grader="control",
                        passed=ok,
                        evidence={"irreversible_calls": 1, "unconfirmed_irreversible": int(not ok)},
                    ),
                ],
            )


def build_store(path: Path, n_tasks: int, *, ref_trials: int) -> None:
    """Two runs written by the store's writer: ``big`` (n_tasks × 10) and ``ref``."""
    tmp = path.with_suffix(".partial")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store(tmp) as store:
        for run_id, tasks, seed in (("big", n_tasks, 0), ("ref", ref_trials // 10, 1)):
            store.create_run(Run(run_id=run_id, created_at=utc_now(), agent="agent", model="m"))
            batch: list[Trial] = []
            for trial in synthetic_trials(tasks, 10, seed=seed):
                batch.append(trial)
                if len(batch) == 10_000:
                    store.add_trials(run_id, batch)
                    batch = []
            if batch:
                store.add_trials(run_id, batch)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tmp.rename(path)
    print(f"wrote {n_tasks * 10 + ref_trials:,} trials in {time.perf_counter() - t0:.0f} s")


def cli_metrics(source: str) -> tuple[float, float, dict[str, object]]:
    """``agentgauge metrics SOURCE --json`` in a subprocess: wall time, peak RSS (GB),
    and the report."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", source, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"metrics {source} failed: {proc.stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest of any child so far (KiB on Linux): a child
    # that did not exceed an earlier one reads as that one (an upper bound).
    return elapsed, max(peak, before) / 1e6, json.loads(proc.stdout)


def reference_per_trial(db: Path) -> float:
    """Seconds a trial of the path before records: models built, then the metrics."""
    best = math.inf
    for _ in range(2):
        t0 = time.perf_counter()
        with Store(db, readonly=True) as store:
            trials = store.trials("ref")
        api.metrics(trials)
        best = min(best, time.perf_counter() - t0)
    return best / len(trials)


def store_rows(smoke: bool) -> list[Row]:
    n_tasks = 1_000 if smoke else 100_000
    ref = 2_000 if smoke else REF_TRIALS
    db = cache_dir() / f"scale-{n_tasks}-{_version()}.db"
    if not db.exists():
        build_store(db, n_tasks, ref_trials=ref)
    n = n_tasks * 10
    best, report = math.inf, None
    for _ in range(1 if smoke else ROUNDS):
        elapsed, peak, report = cli_metrics(f"{db}:big")
        best = min(best, elapsed)
    assert report is not None
    group = report["groups"][0]  # type: ignore[index]
    assert group["n_trials"] == n and group["tool_use"] is not None, group  # type: ignore[index]
    inproc = math.inf
    for _ in range(1 if smoke else 2):
        t0 = time.perf_counter()
        api.metrics(f"{db}:big")
        inproc = min(inproc, time.perf_counter() - t0)
    per_trial = reference_per_trial(db)
    print(
        f"metrics DB:RUN, {n:,} trials: CLI {best:.2f} s (peak {peak:.2f} GB), "
        f"in process {inproc:.2f} s"
    )
    print(f"models then metrics: {per_trial * 1e3:.3f} ms a trial -> {per_trial * n:.0f} s")
    return [
        row(
            NAME,
            f"metrics DB:RUN --json (reliability, tool use, control), {n:,} stored trials",
            best,
            "s",
            goal="≤ 10 s",
            met=None if smoke else best <= 10,
            note=f"CLI end to end, start-up included; peak RSS {peak:.2f} GB",
        ),
        row(
            NAME,
            f"api.metrics(DB:RUN) in process, {n:,} stored trials",
            inproc,
            "s",
            reference=per_trial * n,
            reference_name=f"Trial models, then metrics: {per_trial * 1e3:.3f} ms a trial "
            f"(timed on {ref:,}) × {n:,}",
        ),
    ]


def build_parquet(db: Path, folder: Path, agents: int) -> None:
    """``agents`` Parquet exports of the store's ``big`` run, one directory each: the
    run exported once by ``agentgauge export --parquet``, then written again under
    another agent's name (the same trials, so each agent's figures are the same; the
    engine does not know that)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from agentgauge.exporters import export_parquet

    tmp = folder.with_suffix(".partial")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    t0 = time.perf_counter()
    first = tmp / "agent-00"
    export_parquet(f"{db}:big", first)
    trials = pq.read_table(first / "trials.parquet")
    for a in range(1, agents):
        out = tmp / f"agent-{a:02d}"
        out.mkdir()
        name = pa.array([f"agent-{a:02d}"] * trials.num_rows).dictionary_encode()
        renamed = trials.set_column(trials.schema.get_field_index("agent"), "agent", name)
        pq.write_table(renamed, out / "trials.parquet", compression="zstd")
        for other in ("events.parquet", "grades.parquet", "_agentgauge.json"):
            (out / other).symlink_to(first / other)
    tmp.rename(folder)
    print(f"wrote {agents} Parquet exports in {time.perf_counter() - t0:.0f} s")


def parquet_rows(smoke: bool) -> list[Row]:
    n_tasks = 1_000 if smoke else 100_000
    agents = 10
    db = cache_dir() / f"scale-{n_tasks}-{_version()}.db"
    if not db.exists():
        build_store(db, n_tasks, ref_trials=2_000 if smoke else REF_TRIALS)
    folder = cache_dir() / f"scale-{n_tasks}-{_version()}-parquet"
    if not folder.exists():
        build_parquet(db, folder, agents)
    n = n_tasks * 10 * agents
    best, peak, report = math.inf, 0.0, None
    for _ in range(1 if smoke else ROUNDS):
        elapsed, peak_run, report = cli_metrics(str(folder / "agent-*"))
        best, peak = min(best, elapsed), max(peak, peak_run)
    assert report is not None
    groups = report["groups"]  # type: ignore[index]
    assert len(groups) == agents and sum(g["n_trials"] for g in groups) == n, groups
    print(f"metrics on {agents} Parquet exports, {n:,} trials: {best:.2f} s (peak {peak:.2f} GB)")
    return [
        row(
            NAME,
            f"metrics PARQUET --json (every section), {n:,} trials in {agents} exports",
            best,
            "s",
            goal="≤ 30 s, ≤ 8 GB",
            met=None if smoke else (best <= 30 and peak <= 8),
            note=f"CLI end to end; peak RSS {peak:.2f} GB",
        )
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    args = parser.parse_args(argv)
    return store_rows(args.smoke) + parquet_rows(args.smoke)


if __name__ == "__main__":
    emit(main())
