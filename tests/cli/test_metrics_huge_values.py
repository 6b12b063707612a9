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


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_compare_and_metrics_of_huge_costs(tmp_path: Path) -> None:
    # 6 tasks × 2 trials at $1e308 and $1.7e308: every task's sum passes the largest
    # float. compare printed "A $inf B $inf B/A = nan", and both --json outputs failed
    # ("Out of range float values are not JSON compliant").
    rows = [
        {"task_id": f"t{i}", "trial": k, "success": (i + k) % 3 != 0, "cost_usd": c}
        for i in range(6)
        for k, c in enumerate((1e308, 1.7e308))
    ]
    trials = _write(tmp_path / "huge.jsonl", rows)
    overflow = "the sum passes the largest float (about 1.8e308)"
    text = _run("compare", str(trials), str(trials))
    assert text.returncode == 0, text.stderr[-2000:]
    assert "inf" not in text.stdout and "nan" not in text.stdout
    assert f"A — ({overflow})" in " ".join(text.stdout.split())
    done = _run("compare", str(trials), str(trials), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    cop = json.loads(done.stdout, parse_constant=refuse)["cost_of_pass"]
    assert cop == {
        "a": None,
        "b": None,
        "ratio": None,
        "a_reason": overflow,
        "b_reason": overflow,
        "ratio_reason": "A's cost per success is unknown",
    }
    done = _run("metrics", str(trials), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout, parse_constant=refuse)
    assert report["groups"][0]["null_reasons"]["cost.cost_of_pass"] == overflow
    # CV of (1, 1.7) in every task: 0.366648 (tests/metrics/test_reliability.py).
    rc = report["reliability"][0]["resource_consistency"]
    assert abs(rc["mean_cv"]["cost_usd"] - 0.366648) < 1e-6


def test_compare_cost_ratio_past_the_largest_float(tmp_path: Path) -> None:
    # A at $1e-300 and B at $1e10 per trial, both at 50%: B/A = 1e310 is no float.
    def run(cost: float) -> list[dict[str, Any]]:
        return [{"task_id": f"t{i}", "success": i % 2 == 0, "cost_usd": cost} for i in range(4)]

    a = _write(tmp_path / "a.jsonl", run(1e-300))
    b = _write(tmp_path / "b.jsonl", run(1e10))
    done = _run("compare", str(a), str(b), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    cop = json.loads(done.stdout, parse_constant=refuse)["cost_of_pass"]
    assert cop["a"] == 2e-300 and cop["b"] == 2e10 and cop["ratio"] is None
    assert cop["ratio_reason"] == "B / A passes the largest float (about 1.8e308)"
    text = _run("compare", str(a), str(b))
    shown = " ".join(text.stdout.split())  # the table wraps at the terminal's width
    assert "B/A — (B / A passes the largest float (about 1.8e308))" in shown
