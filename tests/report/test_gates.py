from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.report.gates import evaluate_gates, load_gate_config


def metrics_object(rate: float, lo: float, hi: float, pass4: float | None) -> dict[str, Any]:
    return {
        "schema": "agentgauge.metrics/1",
        "groups": [
            {
                "agent": "bot",
                "model": None,
                "variant": "base",
                "success_rate": {"value": rate, "ci95": [lo, hi]},
                "pass_hat_k": {"1": rate, "4": pass4},
                "cost": {"cost_of_pass": 1.5},
                "null_reasons": {} if pass4 is not None else {"pass_hat_k.4": "k=4 > 2 trials"},
            }
        ],
    }


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gates.yaml"
    path.write_text(text)
    return path


CONFIG = """\
deployment_k: 4
gates:
  - metric: success_rate
    min: 0.6
    bound: ci_lower
  - metric: pass_hat_k
    min: 0.3
  - metric: cost.cost_of_pass
    max: 2.0
"""


def test_passing_and_failing_gates(tmp_path: Path) -> None:
    config = load_gate_config(write(tmp_path, CONFIG))
    ok = evaluate_gates(config, metrics_object(0.8, 0.65, 0.9, 0.4))
    assert [r.passed for r in ok] == [True, True, True]
    # The point value 0.8 clears 0.6, but the CI's lower bound 0.55 does not: the gate
    # checks the bound the config names.
    bad = evaluate_gates(config, metrics_object(0.8, 0.55, 0.9, 0.4))
    assert [r.passed for r in bad] == [False, True, True]
    assert "0.55" in bad[0].detail


def test_null_metric_fails_closed_with_reason(tmp_path: Path) -> None:
    config = load_gate_config(write(tmp_path, CONFIG))
    results = evaluate_gates(config, metrics_object(0.8, 0.7, 0.9, None))
    assert results[1].passed is False
    assert "k=4 > 2 trials" in results[1].detail


def test_non_inferiority_uses_ci_lower_bound(tmp_path: Path) -> None:
    config = load_gate_config(
        write(tmp_path, "gates:\n  - type: non_inferiority\n    margin: 0.05\n")
    )
    # Lower bound -0.04 > -0.05: not worse by more than the margin.
    (ok,) = evaluate_gates(
        config, {"groups": []}, comparison={"mean_diff": 0.0, "ci95": [-0.04, 0.04]}
    )
    assert ok.passed
    (bad,) = evaluate_gates(
        config, {"groups": []}, comparison={"mean_diff": -0.02, "ci95": [-0.06, 0.02]}
    )
    assert not bad.passed
    with pytest.raises(InputError, match="baseline"):
        evaluate_gates(config, {"groups": []})


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("gates:\n  - metric: success_rate\n    min: high\n", 3, "gates.0.min"),
        ("gates:\n  - metric: success_rate\n    min: 0.5\n    mni: 0.2\n", 4, "gates.0.mni"),
        ("gates:\n  - metric: success_rate\n", 2, "gates.0"),
        ("gates: [\n", 2, None),
    ],
)
def test_malformed_config_names_the_line(
    tmp_path: Path, text: str, line: int, field: str | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_gate_config(path)
    assert info.value.line == line
    assert info.value.field == field
