"""Makes ``store_v1.sql`` and ``store_v1_metrics.json``: a store written by the
schema-1 code (commit 798d263, before the compact layout), kept as a text dump
so the migration test can rebuild it byte for byte. Run from the repository
root with that commit checked out: ``python tests/data/make_store_v1.py``.
Kept for the record; with today's code it would write the current schema.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from agentgauge.graders.regrade import regrade
from agentgauge.harness.runner import run
from agentgauge.importers import import_file
from agentgauge.store import Store
from agentgauge.suite import load_suite

HERE = Path(__file__).resolve().parent

# Every kind of row: events with non-ASCII text, grades with evidence, an
# infra and an agent error, a final state, metadata; one line per trial.
JSONL = [
    {"task_id": "j1", "success": True, "agent": "ext", "model": "m", "cost_usd": 0.01,
     "latency_s": 1.5, "final_state": {"k": "café", "n": [1, 2.5, None]},
     "events": [
         {"type": "message", "role": "user", "content": "héllo ☃", "t": 0},
         {"type": "tool_call", "name": "f", "arguments": {"x": 1}, "call_id": "c1", "t": 0.5},
         {"type": "tool_result", "call_id": "c1", "content": {"ok": True}, "t": 0.75},
         {"type": "model_call", "model": "m", "input_tokens": 3, "output_tokens": 4},
         {"type": "control", "decision": "stop", "reason": "done"},
     ],
     "grades": [{"grader": "human", "passed": True, "score": 1.0, "evidence": {"by": "zoë"}}],
     "metadata": {"note": "ünïcode"}},
    {"task_id": "j1", "score": 0.4, "agent": "ext", "model": "m", "family": "fam",
     "human_minutes": 3},
    {"task_id": "j2", "success": False, "agent": "ext", "model": "m", "status": "error",
     "error": "RuntimeError: provider down"},
    {"task_id": "j2", "success": False, "agent": "ext", "model": "m", "status": "timeout",
     "error_kind": "agent", "error": "hung"},
    {"task_id": "j3", "success": True, "agent": "ext", "model": "m", "confidence": 0.9,
     "expected_control": "refuse", "control": "refuse", "input_tokens": 10},
]  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "v1.db"
        retail = load_suite("builtin:retail")
        retail = dataclasses.replace(retail, tasks=retail.tasks[:3])
        functions = load_suite("builtin:functions")
        functions = dataclasses.replace(functions, tasks=functions.tasks[:4])
        with Store(db) as store:
            run(retail, "builtin:careful", trials=2, variants=["base", "fault:tool_error"],
                store=store, run_id="retail-careful", seed=0, progress=False)  # fmt: skip
            run(functions, "builtin:hasty", trials=2, store=store, run_id="functions-hasty",
                seed=0, progress=False)  # fmt: skip
            regrade(store, "retail-careful", ["state"], note="fixture re-grade")
            src = Path(tmp) / "ext.jsonl"
            src.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in JSONL))
            import_file("jsonl", src, store, "imported")
        # What schema 1 reads back, trial by trial (final states, events, latest grades).
        digests = {}
        with Store(db, create=False) as store:
            for r in store.list_runs():
                dumped = [t.model_dump(mode="json") for t in store.trials(r.run_id)]
                text = json.dumps(dumped, sort_keys=True, ensure_ascii=False)
                digests[r.run_id] = hashlib.sha256(text.encode()).hexdigest()
        (HERE / "store_v1_trials.json").write_text(json.dumps(digests, indent=1) + "\n")
        conn = sqlite3.connect(db)
        (HERE / "store_v1.sql").write_text("\n".join(conn.iterdump()) + "\n", encoding="utf-8")
        conn.close()
        metrics = {}
        for run_id in ("retail-careful", "functions-hasty", "imported"):
            out = subprocess.run(
                [sys.executable, "-m", "agentgauge", "metrics", f"{db}:{run_id}", "--json"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            metrics[run_id] = json.loads(out.stdout)
        (HERE / "store_v1_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")


if __name__ == "__main__":
    main()
