"""Store size: where a store's bytes go, bytes per trial, and a million-trial projection.

Target: the demo's store <= 20 MB. By default the demo (``agentgauge demo``,
4 trials per task and variant) runs into a temporary folder; ``--store PATH``
measures an existing store instead (of any schema; it is opened read-only).

The projection scales the bytes that grow with every trial (trials, events,
grades, their indexes) linearly, and adds the documents twice over: as measured
(a run whose final states repeat as the demo's do) and in the worst case where
every trial leaves a state no other trial left (each costing the largest
compressed state measured).

Run: ``python benchmarks/bench_store.py [--store PATH] [--smoke]`` (``--smoke``: the demo
with one trial per task and variant; the goal is for the demo's four).
"""

from __future__ import annotations

import argparse
import io
import sqlite3
import tempfile
from pathlib import Path

from rich.console import Console

from _report import Row, emit, row, smoke_flag
from agentgauge.demo import run_demo

MB = 1e6
NAME = "bench_store"
#: Tables (and their indexes) whose size follows the number of distinct documents.
_SHARED = ("documents", "sqlite_autoindex_documents_1", "tasks", "sqlite_autoindex_tasks_1")


def measure(path: Path) -> tuple[int, int]:
    """Prints where the store's bytes go; returns its size in bytes and its trials."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    total = conn.execute("PRAGMA page_count").fetchone()[0] * page
    n = conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    print(f"{path}: {total:,} bytes, {n:,} trials, {total / n:,.0f} bytes per trial")
    sizes = conn.execute(
        "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
    ).fetchall()
    for name, size in sizes:
        if size >= 0.01 * total:
            print(f"  {name:<32} {size / MB:7.2f} MB")
    shared = sum(size for name, size in sizes if name in _SHARED)
    per_trial = (total - shared) / n
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if "documents" not in tables:
        print(
            f"  (schema 1: final states inline) -> 1,000,000 trials: {total / n * 1e6 / 1e9:.1f} GB"
        )
        return total, n
    states = conn.execute(
        "SELECT COUNT(*), MAX(LENGTH(data)) FROM documents"
        " WHERE id IN (SELECT final_state_id FROM trials)"
    ).fetchone()
    print(
        f"  {states[0]} distinct final states (largest {states[1]:,} bytes compressed); "
        f"{per_trial:,.0f} bytes per trial besides documents and tasks"
    )
    typical = (per_trial * 1e6 + shared) / 1e9
    worst = (per_trial + states[1] + 40) * 1e6 / 1e9  # 40: a document's hash and keys
    print(
        f"  -> 1,000,000 trials: {typical:.1f} GB with states repeating as here, "
        f"{worst:.1f} GB if every final state were new"
    )
    return total, n


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="measure this store instead of the demo's")
    smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.store is not None:
        total, n = measure(args.store)
        return [
            row(NAME, f"{args.store}: size, {n:,} trials", total / MB, "MB"),
            row(NAME, f"{args.store}: bytes per trial", total / n, "bytes"),
        ]
    trials = 1 if args.smoke else 4
    with tempfile.TemporaryDirectory() as tmp:
        result = run_demo(
            Path(tmp), trials=trials, console=Console(file=io.StringIO()), progress=False
        )
        total, n = measure(result.store)
        size = result.store.stat().st_size
        verdict = "met" if size <= 20e6 else "NOT met"
        print(f"demo store {size / MB:.1f} MB; target <= 20 MB: {verdict}")
    return [
        row(
            NAME,
            f"the demo's store, {n:,} trials ({trials} per task and variant)",
            size / MB,
            "MB",
            goal="≤ 20 MB" if not args.smoke else None,
            met=size <= 20e6 if not args.smoke else None,
        ),
        row(NAME, "the demo's store, bytes per trial", total / n, "bytes"),
    ]


if __name__ == "__main__":
    emit(main())
