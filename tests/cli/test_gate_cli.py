"""`agentgauge gate` end to end: exit 0 on pass, 1 naming each failed gate, 2 on a bad config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


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


def _workflow_gate_step() -> str:
    import yaml

    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "agent-eval.yml").read_text())
    (step,) = [s for s in workflow["jobs"]["evaluate"]["steps"] if s.get("name") == "Gate"]
    return str(step["run"])


def test_the_example_ci_workflow_passes_its_first_run_and_then_uses_the_baseline(
    tmp_path: Path,
) -> None:
    import os
    import shutil

    rows = []
    for t in range(30):
        for k in range(4):
            rows.append(
                {
                    "task_id": f"t{t}",
                    "trial": k,
                    "agent": "bot",
                    "success": (t * 4 + k) % 40 != 0,
                    "cost_usd": 0.01,
                    "latency_s": 2.0,
                }
            )
    src = tmp_path / "trials.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    shutil.copy(ROOT / "examples" / "gates.yaml", tmp_path / "gates.yaml")
    bindir = Path(sys.executable).parent
    env = {**os.environ, "RUN_ID": "pr", "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}

    def agentgauge(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "agentgauge", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr

    def gate_step() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-c", _workflow_gate_step()],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )

    agentgauge("import", "jsonl", str(src), "--store", "eval.db", "--run-id", "pr")
    first = gate_step()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "SKIP non-inferiority" in first.stdout and "not checked" in first.stdout
    # The push to main saved a baseline: now the non-inferiority gate is checked.
    agentgauge("import", "jsonl", str(src), "--store", "baseline.db", "--run-id", "main")
    later = gate_step()
    assert later.returncode == 0, later.stdout + later.stderr
    assert "PASS non-inferiority" in later.stdout and "SKIP" not in later.stdout


def test_without_a_baseline_a_non_inferiority_gate_is_an_error_unless_skipped(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "r.jsonl", "v2", [0.95] * 30, seed=1)
    config = tmp_path / "gates.yaml"
    config.write_text("gates:\n  - type: non_inferiority\n    margin: 0.05\n")
    strict = gate(str(run), "--config", str(config))
    assert strict.returncode == 2 and "needs a baseline" in strict.stderr
    # Named by its file, line and field, as the config's other errors are (it read
    # "agentgauge: error: gates: a non_inferiority gate needs a baseline ...").
    assert strict.stderr.startswith(
        f"agentgauge: error: {config}:2: gates.0.type: a non_inferiority gate needs a "
        "baseline: pass --baseline SOURCE"
    ), strict.stderr
    skipped = gate(str(run), "--config", str(config), "--if-no-baseline", "skip")
    assert skipped.returncode == 0, skipped.stderr
    assert "0 checked gates passed; 1 not checked" in skipped.stdout
    typo = gate(str(run), "--config", str(config), "--if-no-baseline", "ignore")
    assert typo.returncode == 2 and "--if-no-baseline" in typo.stderr


def test_a_stored_run_is_gated_on_its_variants_from_the_columns(tmp_path: Path) -> None:
    # Base trials all pass, the "typos" variant's all fail: the gates read the base by
    # default, both with [all], and an absent variant is an input error naming those there.
    path = tmp_path / "run.jsonl"
    with path.open("w") as fh:
        for t in range(20):
            for k in range(2):
                for variant, ok in (("base", True), ("typos", False)):
                    rec = {"task_id": f"t{t}", "trial": k, "variant": variant, "success": ok}
                    fh.write(json.dumps(rec) + "\n")
    store = tmp_path / "s.db"
    imported = subprocess.run(
        [sys.executable, "-m", "agentgauge", "import", "jsonl", str(path), "--store",
         str(store), "--run-id", "r"], capture_output=True, text=True,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr

    def config(variants: str) -> str:
        file = tmp_path / f"gates-{variants.strip('[]')}.yaml"
        file.write_text(f"variants: {variants}\ngates:\n  - metric: success_rate\n    min: 0.9\n")
        return str(file)

    base = gate(f"{store}:r", "--config", config("[base]"))
    assert base.returncode == 0, base.stdout + base.stderr
    both = gate(f"{store}:r", "--config", config("[all]"))
    assert both.returncode == 1 and "success_rate = 0.5" in both.stdout
    typos = gate(f"{store}:r", "--config", config("[typos]"))
    assert typos.returncode == 1 and "variant=typos: success_rate = 0\n" in typos.stdout
    absent = gate(f"{store}:r", "--config", config("[noise]"))
    assert absent.returncode == 2
    assert "no trials of variant 'noise' in " in absent.stderr
    assert "(it has 'base', 'typos')" in absent.stderr


def test_a_variant_no_trial_has_is_refused_at_its_line_of_the_gates_file(
    tmp_path: Path,
) -> None:
    # `variants: [all, basee]` said "variants: no trials of variant 'basee' ..." with no
    # file or line, where `variants: []` said "g.yaml:1: variants: ...".
    source = write_run(tmp_path / "run.jsonl", "v2", [0.9] * 10, seed=1)
    gates = "gates:\n  - metric: success_rate\n    min: 0.1\n"
    flow = tmp_path / "g.yaml"
    flow.write_text("variants: [all, basee]\n" + gates)
    block = tmp_path / "g2.yaml"
    block.write_text(gates + "variants:\n  - base\n  - basee\n")
    for config, line in ((flow, 1), (block, 6)):
        refused = gate(str(source), "--config", str(config))
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr == (
            f"agentgauge: error: {config}:{line}: variants: no trials of variant 'basee' in "
            f"{source} (it has 'base')\n"
        )


def test_baseline_is_refused_without_a_non_inferiority_gate_and_named_as_such(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "r.jsonl", "v2", [0.95] * 30, seed=1)
    config = tmp_path / "gates.yaml"
    config.write_text("gates:\n  - metric: success_rate\n    min: 0.5\n")
    # Read by nothing, even a file that does not exist: "all 1 gate checks passed", exit 0.
    missing = gate(str(run), "--config", str(config), "--baseline", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2, missing.stdout
    assert missing.stderr.strip() == (
        "agentgauge: error: --baseline: a baseline is for non_inferiority gates, and the "
        "config has none"
    )
    config.write_text("gates:\n  - type: non_inferiority\n    margin: 0.1\n")
    # A missing baseline was "nope.jsonl: SOURCE: no such file".
    missing = gate(str(run), "--config", str(config), "--baseline", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2
    assert "nope.jsonl: --baseline: no such file" in missing.stderr
    # A baseline of two agents was "--baseline: A holds 2 ... configurations".
    both = tmp_path / "both.jsonl"
    both.write_text(
        run.read_text() + write_run(tmp_path / "o.jsonl", "v1", [0.9] * 30, 2).read_text()
    )
    pooled = gate(str(run), "--config", str(config), "--baseline", str(both))
    assert pooled.returncode == 2
    assert "--baseline: it holds 2 (agent, model) configurations" in pooled.stderr


def test_a_judge_cost_gate_reads_which_trials_a_judge_graded_as_metrics_does(
    tmp_path: Path,
) -> None:
    # Two judged trials, one of which records no judge cost: the total is unknown, as
    # `metrics` says. The gate passed on the 0.1 the other recorded, a partial sum.
    judged = '"grades": [{"grader": "rubric", "score": 1, "passed": true, "judge_model": "gpt-4o"}]'
    path = tmp_path / "j.jsonl"
    path.write_text(
        f'{{"task_id": "a", "success": true, "cost_usd": 1.0, "judge_cost_usd": 0.1, {judged}}}\n'
        f'{{"task_id": "a", "success": true, "cost_usd": 1.0, {judged}}}\n'
        '{"task_id": "b", "success": false, "cost_usd": 4.0}\n'
    )
    config = tmp_path / "g.yaml"
    config.write_text("gates:\n  - metric: cost.judge_total\n    max: 1\n")
    unknown = "cannot check: judge cost unknown for 1 of 2 judged trials"
    store = tmp_path / "s.db"
    imported = subprocess.run(
        [sys.executable, "-m", "agentgauge", "import", "jsonl", str(path), "--store",
         str(store), "--run-id", "r"], capture_output=True, text=True,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    for source in (str(path), f"{store}:r"):
        checked = gate(source, "--config", str(config))
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert unknown in " ".join(checked.stdout.split()), checked.stdout
    # The pytest plugin's checks run the same engine on the stored run.
    from agentgauge.api import run_gates

    [result] = run_gates(f"{store}:r", str(config))
    assert not result.passed and result.detail == unknown

    # No judge graded any trial: the same words as `metrics`, not "no trial records one".
    plain = tmp_path / "nojudge.jsonl"
    plain.write_text('{"task_id": "a", "success": true, "cost_usd": 1}\n')
    none = gate(str(plain), "--config", str(config))
    assert none.returncode == 1
    why = "cannot check: not applicable: no model judge graded these trials"
    assert why in " ".join(none.stdout.split()), none.stdout


def test_an_se_of_zero_from_no_spread_does_not_pass_a_precision_gate(tmp_path: Path) -> None:
    # Eight tasks, every trial passing: each task's rate is 1, so the SE across tasks is
    # 0 (no spread to estimate one from), not a certainty. `max: 0.01` passed with
    # "success_rate.se = 0", while the 95% interval of these 24 trials is [86%, 100%].
    trials = write_run(tmp_path / "all.jsonl", "a", [1.0] * 8, seed=0, trials=3)
    config = tmp_path / "gates.yaml"
    config.write_text(
        "gates:\n"
        "  - metric: success_rate.se\n"
        "    max: 0.01\n"
        "  - metric: success_rate.se_clustered\n"
        "    max: 0.01\n"
        "  - metric: pass_hat_k_se.2\n"
        "    max: 0.01\n"
        "  - metric: pass_at_k_se.3\n"
        "    max: 0.01\n"
        "  - metric: success_rate\n"
        "    min: 0.8\n"
        "    bound: ci_lower\n"
    )
    proc = gate(str(trials), "--config", str(config))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    failed = [ln for ln in proc.stderr.splitlines() if ln.startswith("gate failed:")]
    assert len(failed) == 4, proc.stderr
    for line, metric in zip(
        failed,
        ("success_rate.se", "success_rate.se_clustered", "pass_hat_k_se.2", "pass_at_k_se.3"),
        strict=True,
    ):
        assert f"{metric} <= 0.01" in line
        assert f"cannot check: {metric} is 0" in line and "no spread" in line
    assert "families alike" in failed[1]
    # The interval, which keeps its width, is still read.
    assert "PASS success_rate [ci_lower] >= 0.8" in proc.stdout

    # An SE above 0 is a measurement and is gated as one.
    mixed = write_run(tmp_path / "mixed.jsonl", "a", [0.2, 0.9] * 6, seed=1)
    config.write_text("gates:\n  - metric: success_rate.se\n    max: 0.5\n")
    assert gate(str(mixed), "--config", str(config)).returncode == 0


def test_an_empty_by_gates_every_trial_as_one_group_as_metrics_does(tmp_path: Path) -> None:
    # `--by ""` is one group, as `metrics --by ""` is: its line names only the labels
    # every trial in it shares (the agent, when one agent ran them all).
    one = write_run(tmp_path / "one.jsonl", "v2", [0.95] * 10, seed=1)
    two = tmp_path / "two.jsonl"
    two.write_text(
        one.read_text() + write_run(tmp_path / "b.jsonl", "v3", [0.9] * 10, 2).read_text()
    )
    config = tmp_path / "gates.yaml"
    config.write_text("gates:\n  - metric: success_rate\n    min: 0.5\n")
    alone = gate(str(one), "--config", str(config), "--by", "")
    assert alone.returncode == 0, alone.stderr
    assert "— agent=v2, variant=base: success_rate" in alone.stdout
    pooled = gate(str(two), "--config", str(config), "--by", "")
    assert pooled.returncode == 0, pooled.stderr
    assert "— variant=base: success_rate" in pooled.stdout
    assert "all 1 gate checks passed" in pooled.stdout
