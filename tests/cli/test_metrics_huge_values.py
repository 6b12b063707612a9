"""``agentgauge metrics --json`` over finite but huge values (1.7e308 seconds and
dollars): the output is valid JSON, the process prints no numpy warning and does
not fail when warnings are errors, and every figure that cannot be given has a
reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROWS = [
    {"task_id": "a", "success": True, "latency_s": 1.7e308, "cost_usd": 1.7e308},
    {"task_id": "b", "success": False, "latency_s": 1.7e308, "cost_usd": 1.7e308},
    {"task_id": "c", "success": True, "latency_s": 1.0, "cost_usd": 1.0},
]


def refuse(constant: str) -> Any:
    raise AssertionError(f"{constant} is not JSON")


def test_metrics_json_of_huge_finite_values(tmp_path: Path) -> None:
    trials = tmp_path / "huge.jsonl"
    trials.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "agentgauge", "metrics", str(trials), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Warning" not in done.stderr, done.stderr
    (group,) = json.loads(done.stdout, parse_constant=refuse)["groups"]
    # Σ cost = 3.4e308 + 1 is past the largest float: no total, and why
    overflow = "the sum passes the largest float (about 1.8e308)"
    for key in ("per_trial", "total", "cost_of_pass", "spend_per_success"):
        assert group["cost"][key] is None
        assert group["null_reasons"][f"cost.{key}"] == overflow
    # the mean is still a float: (1.7e308 + 1.7e308 + 1) / 3 = 1.1333e308
    assert abs(group["latency_s"]["mean"] / 1.1333333333333334e308 - 1) < 1e-12
    assert group["latency_s"]["p50"] == 1.7e308
