"""`agentgauge gate` end to end: exit 0 on pass, 1 naming each failed gate, 2 on a bad config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np


def write_run(path: Path, agent: str, rates: list[float], seed: int, trials: int = 4) -> Path:
    """Trials for tasks with the given true success rates (seeded)."""
    rng = np.random.default_rng(seed)
    with path.open("w") as fh:
        for t, p in enumerate(rates):
            for k in range(trials):
                rec = {
                    "task_id": f"t{t}",
                    "trial": k,
                    "agent": agent,
                    "family": f"f{t % 6}",
                    "success": bool(rng.random() < p),
                    "cost_usd": 0.01,
                }
                fh.write(json.dumps(rec) + "\n")
    return path


def gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", "gate", *args], capture_output=True, text=True
    )


def test_gate_pass_fail_and_malformed(tmp_path: Path) -> None:
    good = write_run(tmp_path / "good.jsonl", "v2", [0.95] * 30, seed=1)
    bad = write_run(tmp_path / "bad.jsonl", "v3", [0.4] * 30, seed=2)
    config = tmp_path / "gates.yaml"
    config.write_text(
        "deployment_k: 2\n"
        "gates:\n"
        "  - metric: success_rate\n"
        "    min: 0.7\n"
        "    bound: ci_lower\n"
        "  - metric: pass_hat_k\n"
        "    min: 0.5\n"
        "  - metric: cost.cost_of_pass\n"
        "    max: 0.05\n"
    )
    ok = gate(str(good), "--config", str(config))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "all 3 gate checks passed" in ok.stdout

    failed = gate(str(bad), "--config", str(config))
    assert failed.returncode == 1
    # One line per failed gate, with the value that failed it.
    lines = [ln for ln in failed.stderr.splitlines() if ln.startswith("gate failed:")]
    assert len(lines) == 2
    assert "success_rate [ci_lower] >= 0.7" in lines[0] and "ci_lower = 0." in lines[0]
    assert "pass_hat_k.2 >= 0.5" in lines[1]

    config.write_text("gates:\n  - metric: success_rate\n    min: [0.7]\n")
    malformed = gate(str(good), "--config", str(config))
    assert malformed.returncode == 2
    assert f"{config}:3: gates.0.min:" in malformed.stderr
    assert "Traceback" not in malformed.stderr


def test_non_inferiority_against_a_baseline(tmp_path: Path) -> None:
    rates = list(np.linspace(0.2, 0.95, 40))
    base = write_run(tmp_path / "base.jsonl", "v1", rates, seed=3)
    same = write_run(tmp_path / "same.jsonl", "v2", rates, seed=4)
    worse = write_run(tmp_path / "worse.jsonl", "v3", [max(0.0, r - 0.4) for r in rates], seed=5)
    config = tmp_path / "gates.yaml"
    config.write_text("gates:\n  - type: non_inferiority\n    margin: 0.15\n")
    assert gate(str(same), "--config", str(config), "--baseline", str(base)).returncode == 0
    result = gate(str(worse), "--config", str(config), "--baseline", str(base))
    assert result.returncode == 1
    assert "non-inferiority (margin 0.15)" in result.stderr
    # Without a baseline the gate cannot be checked: a usage error, not a pass.
    assert gate(str(same), "--config", str(config)).returncode == 2
