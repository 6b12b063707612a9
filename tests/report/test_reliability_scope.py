"""The reliability table says which trials each figure reads, and why a figure is null.

On the main branch before this change a run of paraphrases only (every trial with
events, confidence, cost and latency) printed "no transcripts: the trials carry no
events", "no resource has two non-zero values in any task" and "no trial reports a
confidence": consistency and predictability read the base variant, found none, and
blamed the data; the table was titled "(all variants)" all the same. A robustness
ratio of one variant was null with no reason, and a ratio capped at 1 in every
resample read "(each of 2)", the wording for tasks that are all alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentgauge.metrics.reliability import reliability_from_trials
from agentgauge.schema import Trial


def _events(names: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "hi", "t": 0}]
    for i, name in enumerate(names):
        out.append({"type": "tool_call", "name": name, "arguments": {}, "call_id": str(i)})
    return out


def _paraphrases_only(path: Path, agent: str = "a") -> list[dict[str, Any]]:
    return [
        {"task_id": t, "trial": i, "agent": agent, "variant": "paraphrase:1", "success": True,
         "confidence": 0.8, "cost_usd": 0.1 * (i + 1), "latency_s": 1.0 + i,
         "events": _events(["x", "y"][: i % 2 + 1])}
        for t in ("a", "b") for i in range(3)
    ]  # fmt: skip


def _write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_configuration_with_no_base_trial_is_read_whole_and_says_so(tmp_path: Path) -> None:
    source = _write(tmp_path / "nobase.jsonl", _paraphrases_only(tmp_path))
    [rel] = json.loads(_run("metrics", source, "--json"))["reliability"]
    assert rel["base_scope"] == "all its variants (paraphrase:1)"
    # Task a and b alike: runs x, xy, x → pairs 1, 1 − JSD, 1 − JSD; seq 1/2, 1/2, 1.
    assert rel["trajectory_consistency_dist"]["value"] == pytest.approx(0.792481, abs=1e-6)
    assert rel["trajectory_consistency_seq"]["value"] == pytest.approx(2 / 3)
    assert rel["resource_consistency"]["value"] is not None
    assert rel["predictability"]["calibration"] == pytest.approx(0.8)
    assert rel["prompt_robustness"]["reason"] == "no base-variant trial"

    out = _run("metrics", source)
    text = out[out.index("reliability per configuration") :]
    assert "no transcripts" not in text and "no trial reports a confidence" not in text
    assert "no resource has two non-zero values" not in text
    assert "consistency, calibration and AUROC: all variants, no base variant in the data" in (
        " ".join(text.split())
    )
    assert (
        "— consistency, calibration and AUROC read all its variants (paraphrase:1): "
        "no base-variant trial" in text
    )
    assert "— prompt robustness: no base-variant trial" in text


def test_the_title_names_each_figure_scope(tmp_path: Path) -> None:
    rows = _paraphrases_only(tmp_path, agent="para")
    rows += [{**r, "agent": "base", "variant": "base"} for r in rows]
    out = " ".join(_run("metrics", _write(tmp_path / "two.jsonl", rows)).split())
    assert (
        "reliability per configuration, Rabanser et al. 2026 (consistency, calibration and "
        "AUROC: base variant, all variants where a configuration has none; robustness: each "
        "perturbed variant against base; safety: all variants)"
    ) in out
    # Only the configuration read whole is named in the note.
    assert "read all its variants (paraphrase:1): no base-variant trial (para)" in out

    base_only = " ".join(_run("metrics", _write(tmp_path / "b.jsonl", rows[6:])).split())
    assert "(consistency, calibration and AUROC: base variant; robustness:" in base_only
    assert "no base-variant trial" not in base_only


def test_base_trials_still_keep_perturbed_runs_out_of_consistency() -> None:
    def trial(task: str, variant: str, calls: list[str]) -> Trial:
        return Trial.model_validate(
            {"task_id": task, "success": True, "variant": variant, "events": _events(calls)}
        )

    trials = [trial("t", "base", ["a"]), trial("t", "base", ["a"])]
    trials.append(trial("t", "paraphrase:1", ["zzz"]))
    rel = reliability_from_trials(trials)
    assert rel.base_scope == "base variant"
    assert rel.trajectory_consistency_dist.value == 1.0


def test_a_null_ratio_of_one_variant_says_why(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "pv.jsonl",
        [
            {"task_id": "a", "trial": 0, "variant": "base", "success": False},
            {"task_id": "b", "trial": 0, "variant": "base", "success": True},
            {"task_id": "a", "trial": 0, "variant": "paraphrase:1", "success": True},
            {"task_id": "b", "trial": 0, "variant": "paraphrase:2", "success": True},
            {"task_id": "c", "trial": 0, "variant": "paraphrase:3", "success": True},
        ],
    )
    [rel] = json.loads(_run("metrics", source, "--json"))["reliability"]
    pr = rel["prompt_robustness"]
    assert pr["per_variant"] == {"paraphrase:1": None, "paraphrase:2": 1.0, "paraphrase:3": None}
    reasons = rel["null_reasons"]
    assert reasons["prompt_robustness.per_variant.paraphrase:1"] == (
        "base accuracy is 0 on its 1 shared task"
    )
    assert reasons["prompt_robustness.per_variant.paraphrase:3"] == "no task shared with base"
    assert "prompt_robustness.per_variant.paraphrase:2" not in reasons

    # Every resample's ratio is at the cap of 1 (SE 0) though task a went 0 → 1 and task
    # b 1 → 1: not "each of 2", which says the tasks are alike.
    assert (pr["value"], pr["se"]) == (1.0, 0.0)
    [row] = [line for line in _run("metrics", source).splitlines() if "prompt robustness" in line]
    assert "1.000 (capped in every resample of 2 tasks)" in row and "each of" not in row
