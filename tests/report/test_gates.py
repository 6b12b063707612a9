from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.report.gates import evaluate_gates, load_gate_config, metric_paths


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
    # One shared task: no interval, so the gate cannot be checked, and fails (it crashed).
    one = {"mean_diff": 0.0, "ci95": None, "design": "1 task × 2 trials"}
    (unknown,) = evaluate_gates(config, {"groups": []}, comparison=one)
    assert not unknown.passed
    assert unknown.detail == "cannot check: no interval of the difference from 1 task × 2 trials"


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


# --------------------------------------------------------------------------- every path


SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_trials.jsonl"


def _gate_paths(node: Any, prefix: str = "") -> list[str]:
    """Every path of a metrics group a threshold gate can read: numbers and nulls,
    and objects with a ``value``."""
    out: list[str] = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        if key == "null_reasons" or isinstance(value, str | list | bool):
            continue
        if isinstance(value, dict):
            if "value" in value:
                out.append(path)
            out.extend(_gate_paths(value, f"{path}."))
        else:
            out.append(path)
    return out


def test_every_gate_path_reads_the_value_metrics_reports_in_gate_and_in_pytest(
    tmp_path: Path,
) -> None:
    from agentgauge.api import metrics, run_gates
    from agentgauge.importers import import_file
    from agentgauge.report.gates import K_METRICS, Gate, GateConfig, gate_ks
    from agentgauge.store import Store
    from agentgauge.testing.pytest_eval import EvalResult

    # k = 3 is not among the k every report has (1, 2, 4): a gate on it must ask for it.
    expected = metrics(SAMPLE, k=[3], by=("agent", "model"), behaviour=False).to_dict()
    paths = _gate_paths(expected["groups"][0])
    assert {"pass_hat_k.3", "pass_at_k_se.3", "pass_hat_k_se.3", "cost.cost_of_pass"} <= set(paths)
    store = tmp_path / "s.db"
    with Store(store) as db:
        import_file("jsonl", SAMPLE, db, run_id="sample")
    in_pytest = EvalResult(run_id="sample", store=store, metrics={})
    for path in paths:
        for metric, k in ((path, None), (path.partition(".")[0], 3)):
            if metric != path and metric not in K_METRICS:
                continue  # the bare form exists for per-k metrics only
            cfg = GateConfig(deployment_k=k, gates=[Gate(metric=metric, min=-1e18)])
            assert 3 in gate_ks(cfg) or path.partition(".")[0] not in K_METRICS, metric
            results = run_gates(str(SAMPLE), cfg)
            assert [(r.group, r.detail) for r in in_pytest.evaluate(cfg)] == [
                (r.group, r.detail) for r in results
            ]
            for group, result in zip(expected["groups"], results, strict=True):
                value: Any = group
                for part in path.split("."):
                    value = value[part]
                if isinstance(value, dict):
                    value = value["value"]
                if value is None:
                    assert result.detail.startswith("cannot check"), (metric, result)
                else:
                    assert result.passed, (metric, result)
                    assert result.detail.endswith(f"= {value:.4g}"), (metric, result)


@pytest.mark.parametrize(
    ("gate", "line", "field", "reason"),
    [
        # Each used to load, then fail when checked, naming neither file nor line (or,
        # for the bounds, to load and never pass).
        ("metric: pass_hat_kk\n    min: 0.5", 2, "gates.0.metric",
         "unknown metric 'pass_hat_kk'; did you mean 'pass_hat_k'?"),
        ("metric: cost.cost_of_pas\n    max: 0.1", 2, "gates.0.metric",
         "unknown metric 'cost.cost_of_pas'; did you mean 'cost.cost_of_pass'?"),
        ("metric: pass_hat_k.0\n    min: 0.1", 2, "gates.0.metric", "takes a k of 1 or more"),
        ("metric: success_rate\n    min: 1.5", 3, "gates.0.min", "a rate in [0, 1]"),
    ],
)  # fmt: skip
def test_a_gate_on_no_metric_fails_when_the_file_loads(
    tmp_path: Path, gate: str, line: int, field: str, reason: str
) -> None:
    path = write(tmp_path, f"gates:\n  - {gate}\n")
    with pytest.raises(InputError) as err:
        load_gate_config(path)
    assert (err.value.line, err.value.field) == (line, field)
    assert reason in str(err.value)


def test_every_documented_metric_path_is_known() -> None:
    for metric in ("success_rate", "cost.cost_of_pass", "latency_s.p95", "tokens.input_total",
                   "outcome_consistency", "cost.spend_per_success"):  # fmt: skip
        assert metric in metric_paths()


def test_a_margin_past_one_is_refused_when_the_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "gates:\n  - type: non_inferiority\n    margin: 5\n")
    with pytest.raises(InputError) as err:
        load_gate_config(path)
    assert err.value.field == "gates.0.margin" and err.value.line == 3
