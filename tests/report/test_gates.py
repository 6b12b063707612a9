from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.report.gates import (
    evaluate_gates,
    load_gate_config,
    metric_paths,
    validate_gate_config,
)


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
    # A margin of 0 read "<= -0".
    zero = load_gate_config(write(tmp_path, "gates:\n  - type: non_inferiority\n    margin: 0\n"))
    (strict,) = evaluate_gates(
        zero, {"groups": []}, comparison={"mean_diff": 0.0, "ci95": [-0.04, 0.04]}
    )
    assert strict.detail == "paired difference +0.000, 95% CI lower bound -0.040 <= 0"
    with pytest.raises(InputError, match="baseline"):
        evaluate_gates(config, {"groups": []})
    # One shared task: no interval, so the gate cannot be checked, and fails (it crashed).
    one = {"mean_diff": 0.0, "ci95": None, "design": "1 task × 2 trials"}
    (unknown,) = evaluate_gates(config, {"groups": []}, comparison=one)
    assert not unknown.passed
    assert unknown.detail == "cannot check: no interval of the difference from 1 task × 2 trials"


def test_non_inferiority_on_too_few_tasks_fails_unchecked(tmp_path: Path) -> None:
    from agentgauge.metrics.compare import compare
    from agentgauge.table import TrialTable

    config = load_gate_config(
        write(tmp_path, "gates:\n  - type: non_inferiority\n    margin: 0.5\n")
    )

    def runs(n_tasks: int) -> tuple[TrialTable, TrialTable]:
        # A fails and B passes every task, 3 trials each. The 95% interval of B − A is
        # 1 − √2 · z²/(m + z²) to 1 over m trials a side (the score interval, each rate's
        # Wilson bound z²/(m + z²) from its end, r = 0): m = 6 → +0.448; m = 18 → +0.751.
        ids = [f"t{i}" for i in range(n_tasks) for _ in range(3)]
        return tuple(  # type: ignore[return-value]
            TrialTable.from_columns(len(ids), task_id=ids, success=[ok] * len(ids))
            for ok in (False, True)
        )

    # 2 tasks: the gate passed on that interval; the exact sign test over 2 tasks cannot
    # go below p = 2 · 0.5² = 0.5, so they cannot show non-inferiority at 95%.
    two = compare(*runs(2)).to_dict()
    assert two["ci95"][0] > -0.5
    (few,) = evaluate_gates(config, {"groups": []}, comparison=two)
    assert not few.passed
    assert few.detail == (
        "cannot check: 2 tasks × 3 trials: too few tasks to tell at α = 0.05, which needs "
        "at least 6 (the exact sign test over 2 tasks cannot go below p = 2 × 0.5^2 = 0.5)"
    )
    # 6 tasks (2 · 0.5⁶ = 0.03125) are enough, and the same interval passes.
    (enough,) = evaluate_gates(config, {"groups": []}, comparison=compare(*runs(6)).to_dict())
    assert enough.passed and "lower bound +0.751 > -0.5" in enough.detail
    # The gate reads the 95% interval, so a comparison made at α = 0.1 (5 tasks enough
    # there) is still held to 6.
    five = compare(*runs(5), alpha=0.1).to_dict()
    assert five["too_few_units"] is False
    (held,) = evaluate_gates(config, {"groups": []}, comparison=five)
    assert not held.passed and "needs at least 6" in held.detail


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("gates:\n  - metric: success_rate\n    min: high\n", 3, "gates.0.min"),
        ("gates:\n  - metric: success_rate\n    min: 0.5\n    mni: 0.2\n", 4, "gates.0.mni"),
        ("gates:\n  - metric: success_rate\n", 2, "gates.0"),
        ("gates: [\n", 2, None),
        # A typo in a where key matched no group and failed the gate, exit 1, as if the
        # agent had done badly: it is the file's error.
        (
            "gates:\n  - metric: success_rate\n    min: 0.5\n    where: {varaint: base}\n",
            4,
            "gates.0.where",
        ),
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


def _gate_paths(
    node: Any, prefix: str = "", *, skip: tuple[str, ...] = ("null_reasons",)
) -> list[str]:
    """Every path of a metrics group a threshold gate can read, as `metrics --json`
    prints it: numbers and nulls, and objects with a ``value``; not lists, texts, the
    keys in ``skip`` (the reasons, by default) or, at the top, the group's labels."""
    out: list[str] = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        if key in skip or isinstance(value, str | list | bool):
            continue
        if not prefix and key in ("agent", "model", "variant"):
            continue
        if isinstance(value, dict):
            if "value" in value:
                out.append(path)
            out.extend(_gate_paths(value, f"{path}.", skip=skip))
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
            # Every figure is at least 0 (a min below 0 on a rate is refused as never meant).
            cfg = GateConfig(deployment_k=k, gates=[Gate(metric=metric, min=0)])
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
                if value is None or (value == 0 and _is_se(path)):
                    # An SE of 0 is no spread, not a measurement (the test of _no_spread).
                    assert result.detail.startswith("cannot check"), (metric, result)
                else:
                    assert result.passed, (metric, result)
                    assert result.detail.endswith(f"= {value:.4g}"), (metric, result)


def _is_se(path: str) -> bool:
    """A standard error's path (``success_rate.se``, ``pass_hat_k_se.3``): one of 0 is
    no spread to estimate it from, and its gate cannot check."""
    parts = path.split(".")
    return parts[0].endswith("_se") or parts[-1] in ("se", "se_clustered")


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
        # A cost is never negative: a max below 0 failed every run.
        ("metric: cost.cost_of_pass\n    max: -1", 3, "gates.0.max",
         "cost.cost_of_pass is at least 0; a max of -1: no value can pass"),
        # Every figure a group holds is at least 0 (times, tokens, counts, ratios), as a
        # cost is: a max below 0 loaded and failed every run ("latency_s.p95 = 13.62"),
        # and a min below 0 passed every value, so checked nothing.
        ("metric: latency_s.p95\n    max: -3", 3, "gates.0.max",
         "latency_s.p95 is at least 0; a max of -3: no value can pass"),
        ("metric: tokens.input_total\n    max: -1", 3, "gates.0.max", "no value can pass"),
        ("metric: control.counts.missed_confirmation\n    max: -0.5", 3, "gates.0.max",
         "no value can pass"),
        ("metric: n_tasks\n    min: -1", 3, "gates.0.min",
         "n_tasks is at least 0; a min of -1 passes every value, so the gate checks nothing"),
        ("metric: cost.cost_of_pass\n    min: -0.01", 3, "gates.0.min", "checks nothing"),
        # The behaviour sections' rates, as the outcome's (a percentage meant as 90 loaded
        # and always passed a max, or never passed a min).
        ("metric: control.missed_confirmation\n    max: 5", 3, "gates.0.max",
         "control.missed_confirmation is a rate in [0, 1]; a max of 5"),
        ("metric: tool_use.minefield_hit_rate\n    max: -0.1", 3, "gates.0.max",
         "a rate in [0, 1]"),
        ("metric: control.per_state.ask.recall\n    min: 90", 3, "gates.0.min", "a rate in [0, 1]"),
        ("metric: recovery.recovered.value\n    min: 1.2", 3, "gates.0.min", "a rate in [0, 1]"),
        ("metric: tool_use.trajectory_match_rate.in_order\n    min: 80", 3, "gates.0.min",
         "a rate in [0, 1]"),
        ("metric: calls.modle\n    max: 3", 2, "gates.0.metric",
         "unknown metric 'calls.modle'; did you mean 'calls.model'?"),
        ("metric: control.acuracy\n    min: 0.5", 2, "gates.0.metric",
         "unknown metric 'control.acuracy'; did you mean 'control.accuracy'?"),
        # A bare per-k metric with no deployment_k failed only when checked, with no file.
        ("metric: pass_hat_k\n    min: 0.5", 2, "gates.0.metric",
         "'pass_hat_k' needs a k: write pass_hat_k.K or set deployment_k"),
        # Settings that loaded and then could never pass, or did nothing.
        ("metric: success_rate\n    min: 0.9\n    max: 0.1", 3, "gates.0.min",
         "min 0.9 is above max 0.1: no value can pass"),
        ("metric: success_rate\n    min: 0.5\n    margin: 0.3", 4, "gates.0.margin",
         "a margin is for a non_inferiority gate"),
        ("type: non_inferiority\n    margin: 0.1\n    min: 0.3", 4, "gates.0.min",
         "a non_inferiority gate takes no 'min'"),
        ("type: no_blocking_failures\n    metric: success_rate", 3, "gates.0.metric",
         "a no_blocking_failures gate takes no 'metric'"),
        ("metric: latency_s.p95\n    max: .nan", 3, "gates.0.max", "must be a finite number"),
        ("metric: latency_s.p95\n    max: .inf", 3, "gates.0.max", "must be a finite number"),
        ("metric: success_rate\n    min: true", 3, "gates.0.min",
         "expected a number, got a boolean"),
        ("metric: success_rate\n    min: '0.5'", 3, "gates.0.min", "not a valid number"),
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


def test_counts_and_ratios_take_any_bound(tmp_path: Path) -> None:
    # Not rates: a count, a ratio of two rates, a mean per trial.
    for metric in ("control.counts.missed_confirmation", "recovery.recovery_ratio",
                   "tool_use.tool_calls_per_trial", "control.confusion.act.ask"):  # fmt: skip
        path = write(tmp_path, f"gates:\n  - metric: {metric}\n    max: 5\n")
        assert load_gate_config(path).gates[0].max == 5


def test_every_documented_metric_path_is_known() -> None:
    for metric in ("success_rate", "cost.cost_of_pass", "latency_s.p95", "tokens.input_total",
                   "outcome_consistency", "cost.spend_per_success"):  # fmt: skip
        assert metric in metric_paths()


def test_a_margin_past_one_is_refused_when_the_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "gates:\n  - type: non_inferiority\n    margin: 5\n")
    with pytest.raises(InputError) as err:
        load_gate_config(path)
    assert err.value.field == "gates.0.margin" and err.value.line == 3


def test_deployment_k_is_a_number_not_a_boolean(tmp_path: Path) -> None:
    path = write(tmp_path, "deployment_k: true\ngates:\n  - metric: pass_hat_k\n    min: 0.5\n")
    with pytest.raises(InputError) as err:
        load_gate_config(path)
    assert (err.value.line, err.value.field) == (1, "deployment_k")


# --------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def retail_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A builtin:retail run with every section: tool-call, trajectory, milestone and
    minefield grades, control decisions, tool errors, checkpoints (about 5 s)."""
    from agentgauge.harness.runner import run

    db = tmp_path_factory.mktemp("retail") / "s.db"
    run("builtin:retail", "builtin:careful", trials=2, store=db, run_id="r", progress=False)
    return f"{db}:r"


def test_every_path_metrics_reports_for_a_run_with_every_section_is_a_gate(
    retail_run: str,
) -> None:
    from agentgauge.api import metrics, run_gates

    [group] = metrics(retail_run, by=("agent", "model")).to_dict()["groups"]
    assert all(group[s] is not None for s in ("tool_use", "control", "recovery", "turns"))
    # Not ci95/ci_method either: what ``bound:`` reads, even when null. The failed
    # calls' maps are null here (no tool_calls grade in the retail suite): a null map
    # has no path of its own; its entries' gates say why (the test below).
    assert group["tool_use"]["error_classes"] is None
    skip = ("null_reasons", "ci95", "ci_method", "error_types", "error_classes")
    paths = _gate_paths(group, skip=skip)
    # Each refused before: "unknown metric 'calls.model'; did you mean 'calls.tool'?".
    assert {"calls.model", "tool_use.tool_calls_per_trial", "control.accuracy",
            "control.missed_confirmation", "tool_use.minefield_hit_rate",
            "recovery.success_with_recovery"} <= set(paths)  # fmt: skip
    config = validate_gate_config({"gates": [{"metric": p, "min": 0} for p in paths]})
    # And each reads, in `agentgauge gate`, the value that `metrics` reports.
    results = run_gates(retail_run, config)
    assert len(results) == len(paths)
    for path, result in zip(paths, results, strict=True):
        value: Any = group
        for part in path.split("."):
            value = value[part]
        if isinstance(value, dict):
            value = value["value"]
        if value is None or (value == 0 and _is_se(path)):
            assert result.detail.startswith("cannot check: "), (path, result)
        else:
            assert result.passed and result.detail == f"{path} = {value:.4g}", (path, result)


def test_a_gate_on_failed_tool_calls_nobody_counted_cannot_check(retail_run: str) -> None:
    from agentgauge.api import run_gates

    # No retail task has a tool_calls (AST) grade: "wrong_call = 0" passed this gate on
    # failed calls that were never counted.
    config = validate_gate_config(
        {"gates": [{"metric": "tool_use.error_classes.wrong_call", "max": 0}]}
    )
    [result] = run_gates(retail_run, config)
    assert not result.passed
    assert result.detail == "cannot check: no trial has a tool_calls (AST) grade"


def test_a_null_metric_fails_with_the_reason_recorded_for_it_or_its_section(
    tmp_path: Path,
) -> None:
    from agentgauge.api import run_gates

    # One task, one trial, nothing but the outcome recorded.
    trials = tmp_path / "t.jsonl"
    trials.write_text('{"task_id": "a", "success": true}\n')
    metrics = ("latency_s.p95", "tokens.input", "success_rate.se", "control.accuracy",
               "recovery.recovered", "pass_hat_k.2", "calls.model", "pass_at_k_se.1",
               "pass_hat_k_se.1")  # fmt: skip
    config = validate_gate_config({"gates": [{"metric": m, "max": 1} for m in metrics]})
    details = [r.detail for r in run_gates(str(trials), config)]
    # Before, the first three said "cannot check: latency_s.p95 is null" and so on.
    assert details == [
        "cannot check: no trial records a latency",
        "cannot check: no trial records token counts",
        "cannot check: one task: no spread to estimate",
        "cannot check: no trial names the control decision it expects",
        "cannot check: no trial has a transcript",
        "cannot check: k=2 exceeds the trials of 1 of 1 task (fewest: 1)",
        "cannot check: no trial records a model-call count",
        # Said "pass_at_k_se.1 is null": the SE of a value over one task.
        "cannot check: one task: no spread to estimate",
        "cannot check: one task: no spread to estimate",
    ]
    bound = validate_gate_config(
        {"gates": [{"metric": "recovery.recovered", "min": 0.5, "bound": "ci_lower"}]}
    )
    [result] = run_gates(str(trials), bound)
    assert result.detail == "cannot check: no trial has a transcript"


def test_a_null_control_rate_fails_with_its_reason(tmp_path: Path) -> None:
    from agentgauge.api import run_gates

    # Expected act, took act, and no control grade: nobody took stop, nobody was
    # expected to refuse, and no irreversible-call counts were recorded.
    trials = tmp_path / "t.jsonl"
    trials.write_text(
        '{"task_id": "a", "success": true, "expected_control": "act", "control": "act"}\n'
    )
    metrics = ("control.per_state.stop.precision", "control.per_state.refuse.recall",
               "control.under_refusal", "control.missed_confirmation")  # fmt: skip
    config = validate_gate_config({"gates": [{"metric": m, "max": 1} for m in metrics]})
    # Before, each said "cannot check: <metric> is null".
    assert [r.detail for r in run_gates(str(trials), config)] == [
        "cannot check: no trial took stop",
        "cannot check: no trial is expected to refuse",
        "cannot check: no trial is expected to refuse or transfer",
        "cannot check: irreversible-call counts unknown for 1 of 1 trial"
        " (no control grade records them)",
    ]


def test_a_where_no_group_matches_names_the_values_the_groups_have(tmp_path: Path) -> None:
    config = load_gate_config(
        write(
            tmp_path,
            "gates:\n  - metric: success_rate\n    min: 0.5\n    where: {variant: bsae}\n"
            "  - metric: success_rate\n    min: 0.5\n    where: {capability: refunds}\n",
        )
    )
    typo, unsplit = evaluate_gates(config, metrics_object(0.8, 0.7, 0.9, 0.4))
    assert not typo.passed and not unsplit.passed
    assert typo.group == "variant=bsae"
    # It named neither what the `where` asked for nor the variants the gates read.
    assert typo.detail == (
        "no group matches 'where' (variant 'bsae'): no group has that variant (they have "
        "'base'); the gates read the base variant only (the config's 'variants'; [all] reads "
        "every one)"
    )
    assert unsplit.detail == (
        "no group matches 'where' (capability 'refunds'): the groups are not split by "
        "'capability' (add it to --by)"
    )
    with pytest.raises(InputError, match="did you mean 'variant'"):
        validate_gate_config(
            {"gates": [{"metric": "success_rate", "min": 0.5, "where": {"varient": "base"}}]}
        )


def test_a_where_no_group_matches_names_what_it_asked_and_the_variants_read(
    tmp_path: Path,
) -> None:
    from agentgauge.api import run_gates

    source = _variant_trials(tmp_path)

    def detail(config: str, by: str = "agent,model") -> str:
        (result,) = run_gates(source, write(tmp_path, config), by=by)
        assert not result.passed
        return result.detail

    gate = "gates:\n  - {metric: success_rate, min: 0, where: %s}\n"
    # The run has paraphrase:1, but the gates read its base variant: the failure said
    # "no group has variant 'paraphrase:1' (they have 'base')", as if the run had none.
    assert detail(gate % "{variant: 'paraphrase:1'}") == (
        "no group matches 'where' (variant 'paraphrase:1'): no group has that variant (they "
        "have 'base'); the gates read the base variant only (the config's 'variants'; [all] "
        "reads every one)"
    )
    assert detail("variants: [base, fault]\n" + gate % "{agent: bott}", "agent,variant") == (
        "no group matches 'where' (agent 'bott'): no group has that agent (they have 'bot'); "
        "the gates read variants 'base', 'fault' only (the config's 'variants'; [all] reads "
        "every one)"
    )
    # Every variant read: nothing to add.
    assert detail("variants: [all]\n" + gate % "{variant: paraphrase}", "agent,variant") == (
        "no group matches 'where' (variant 'paraphrase'): no group has that variant (they "
        "have 'base', 'fault:timeout', 'paraphrase:1')"
    )


def test_a_where_whose_labels_no_one_group_has_lists_the_groups() -> None:
    groups = [
        {"agent": "careful", "variant": "base", "success_rate": {"value": 1.0}},
        {"agent": "hasty", "variant": "paraphrase:1", "success_rate": {"value": 0.5}},
    ]
    config = validate_gate_config(
        {
            "variants": ["all"],
            "gates": [
                {
                    "metric": "success_rate",
                    "min": 0,
                    "where": {"agent": "careful", "variant": "paraphrase:1"},
                }
            ],
        }
    )
    (result,) = evaluate_gates(config, {"by": ["agent", "variant"], "groups": groups})
    # It said "no group has all of these labels at once", and not which go together.
    assert result.detail == (
        "no group matches 'where' (agent 'careful', variant 'paraphrase:1'): no group has "
        "them all at once (the groups: agent 'careful', variant 'base'; agent 'hasty', "
        "variant 'paraphrase:1')"
    )


def _variant_trials(tmp_path: Path) -> str:
    """Three variants of two tasks: base passes both, paraphrase:1 one, fault:timeout none."""
    import json

    rows = [
        {"task_id": task, "trial": 0, "agent": "bot", "variant": variant, "success": ok}
        for variant, oks in (("base", (1, 1)), ("paraphrase:1", (1, 0)), ("fault:timeout", (0, 0)))
        for task, ok in zip(("a", "b"), oks, strict=True)
    ]
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps({**r, "success": bool(r["success"])}) + "\n" for r in rows))
    return str(path)


def test_gate_variants_take_kinds_and_refuse_a_name_no_trial_has(tmp_path: Path) -> None:
    from agentgauge.api import run_gates

    source = _variant_trials(tmp_path)

    def rate(variants: str) -> str:
        config = write(
            tmp_path, f"variants: {variants}\ngates:\n  - metric: success_rate\n    min: 0\n"
        )
        (result,) = run_gates(source, config)
        return result.detail

    # A kind reads as `run --variants` reads it: [base, paraphrase] gated base alone.
    assert rate("[base, paraphrase]") == "success_rate = 0.75"  # 3 of 4
    assert rate("[base, paraphrase:1]") == "success_rate = 0.75"
    assert rate("[base, fault]") == "success_rate = 0.5"
    # A name no trial has is the file's mistake, even beside one that matches.
    with pytest.raises(InputError, match=r"no trials of variant 'paraphrse' in .*'base', 'fault:"):
        rate("[base, paraphrse]")


def test_a_threshold_line_says_the_variants_its_group_pools(tmp_path: Path) -> None:
    # With `variants: [all]` the line read "agent=bot: success_rate = 0.5", as if of the
    # base trials; the non-inferiority line already said "B vs baseline, all variants".
    from agentgauge.api import run_gates

    source = _variant_trials(tmp_path)

    def line(variants: str) -> tuple[str, str]:
        config = write(
            tmp_path, f"variants: {variants}\ngates:\n  - metric: success_rate\n    min: 0\n"
        )
        (result,) = run_gates(source, config)
        return result.group, result.detail

    assert line("[all]") == ("agent=bot, all variants", "success_rate = 0.5")
    assert line("[base, paraphrase]") == (
        "agent=bot, variants 'base', 'paraphrase'",
        "success_rate = 0.75",
    )
    # One variant read: the group's own label says it, as by default.
    assert line("[base]") == ("agent=bot, variant=base", "success_rate = 1")
    assert line("[fault]") == ("agent=bot, variant=fault:timeout", "success_rate = 0")


def test_a_bound_on_a_figure_without_an_interval_is_refused_when_the_file_loads(
    tmp_path: Path,
) -> None:
    for metric, limit in (("latency_s.p95", "max: 30"), ("pass_hat_k.4", "min: 0.5")):
        path = write(tmp_path, f"gates:\n  - metric: {metric}\n    {limit}\n    bound: ci_lower\n")
        with pytest.raises(InputError) as info:
            load_gate_config(path)
        assert (info.value.line, info.value.field) == (4, "gates.0.bound")
        assert info.value.reason.startswith(f"{metric} has no confidence interval")
    load_gate_config(
        write(tmp_path, "gates:\n  - metric: success_rate\n    min: 0.5\n    bound: ci_lower\n")
    )


def test_a_gate_line_names_every_label_the_groups_are_split_by() -> None:
    config = validate_gate_config({"gates": [{"metric": "success_rate", "min": 0.5}]})
    group = {**metrics_object(0.4, 0.3, 0.5, None)["groups"][0], "family": "refunds"}
    (result,) = evaluate_gates(config, {"groups": [group]})
    assert result.group == "agent=bot, variant=base, family=refunds"


def test_the_baseline_errors_name_the_options_given(tmp_path: Path) -> None:
    import json

    from agentgauge.api import run_gates

    ours = tmp_path / "ours.jsonl"
    ours.write_text(json.dumps({"task_id": "a", "agent": "x", "success": True}) + "\n")
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_text(json.dumps({"task_id": "z", "agent": "y", "success": True}) + "\n")
    config = write(tmp_path, "gates:\n  - type: non_inferiority\n    margin: 0.05\n")
    with pytest.raises(InputError) as info:
        run_gates(str(ours), config, baseline=str(theirs))
    assert info.value.field in ("--baseline", "SOURCE")
    assert "no task in common" in info.value.reason


def test_a_key_written_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    # YAML keeps the last of two keys: the first `gates:` list was never checked, and
    # the first `metric:` of a gate was replaced by the second, without a word.
    twice = {
        "gates:\n  - metric: success_rate\n    min: 0.9\n"
        "gates:\n  - metric: cost.cost_of_pass\n    max: 1\n": (4, "gates"),
        # Named by its path: "metric" alone could be any gate's.
        "gates:\n  - metric: success_rate\n    min: 0.9\n    metric: pass_hat_k.2\n": (
            4,
            "gates.0.metric",
        ),
        "gates:\n  - metric: success_rate\n    min: 0\n"
        "  - metric: success_rate\n    where: {agent: a, agent: b}\n    min: 0\n": (
            5,
            "gates.1.where.agent",
        ),
    }
    for text, (line, field) in twice.items():
        with pytest.raises(InputError) as info:
            load_gate_config(write(tmp_path, text))
        assert (info.value.line, info.value.field) == (line, field)
        assert info.value.reason == "key appears twice in the same mapping"


def test_keys_are_the_same_when_their_loaded_values_are(tmp_path: Path) -> None:
    from agentgauge.yamlio import load_yaml

    # 1 and "1" are two keys in YAML (an int and a string): refused as one, by their text.
    data, _ = load_yaml(write(tmp_path, "m:\n  1: int\n  '1': text\n"))
    assert data == {"m": {1: "int", "1": "text"}}
    # 1 and 0x1 load as the same key, and the mapping kept only the second.
    with pytest.raises(InputError) as info:
        load_yaml(write(tmp_path, "m:\n  1: one\n  0x1: also one\n"))
    assert (info.value.line, info.value.field) == (3, "m.0x1")


def _rubric_grades(verdicts: dict[str, tuple[bool, bool | None, str]]) -> list[dict[str, Any]]:
    """A trial's grades as the rubric judge stores them: one ``rubric:<id>`` grade per
    criterion ``id -> (blocking, verdict, status)`` and the case's ``rubric`` grade."""
    from agentgauge.graders.rubric import RubricResult, rubric_score
    from agentgauge.schema import Criterion, Grade

    criteria = [Criterion(id=c, text=c, blocking=b) for c, (b, _, _) in verdicts.items()]
    grades = [
        Grade(grader=f"rubric:{c}", passed=v, status=s, evidence={"blocking": b, "weight": 1.0})
        for c, (b, v, s) in verdicts.items()
    ]
    score = rubric_score(criteria, [v for _, v, _ in verdicts.values()])
    result = RubricResult(grades, score, "judge-x" if grades else None, 0.0, 1, 1)
    return [g.model_dump(mode="json") for g in (result.to_grade(), *grades)]


def test_no_blocking_failures_counts_only_trials_whose_blocking_criteria_were_decided(
    tmp_path: Path,
) -> None:
    import json

    from agentgauge.api import run_gates

    config = write(tmp_path, "gates:\n  - type: no_blocking_failures\n")

    def gate(*trials: dict[str, tuple[bool, bool | None, str]]) -> tuple[bool, str]:
        path = tmp_path / "trials.jsonl"
        path.write_text(
            "".join(
                json.dumps({"task_id": f"t{i}", "success": True, "grades": _rubric_grades(v)})
                + "\n"
                for i, v in enumerate(trials)
            )
        )
        (result,) = run_gates(str(path), config)
        return result.passed, result.detail

    safe_yes = {"safe": (True, True, "passed"), "tone": (False, None, "unknown:unparseable")}
    safe_no = {"safe": (True, False, "failed")}
    safe_unknown = {"safe": (True, None, "unknown:unparseable")}
    # Decided everywhere (a non-blocking criterion left unknown does not matter): pass.
    assert gate(safe_yes, safe_yes) == (True, "0 of 2 trials failed a blocking criterion")
    # The judge could not read its answer on the blocking criterion: this passed as
    # "0 trial(s) failed a blocking criterion" although nothing was checked.
    assert gate(safe_unknown, safe_unknown, safe_yes) == (
        False,
        "cannot check: a blocking criterion is undecided on 2 of 3 trials "
        "(unknown:unparseable × 2); none failed on the other 1",
    )
    # A failure anywhere fails, whatever is undecided elsewhere.
    assert gate(safe_no, safe_unknown, safe_yes) == (
        False,
        "1 of 3 trials failed a blocking criterion; on 1 more a blocking criterion is undecided",
    )
    # Tasks without a rubric: no judge was asked, so nothing was checked.
    assert gate({}, {}) == (
        False,
        "cannot check: the tasks of all 2 rubric-graded trials have no rubric "
        "(unknown:no_rubric): no judge was asked",
    )
    # A rubric with no blocking criterion: this passed as "0 of 2 trial(s) failed a
    # blocking criterion" with nothing to check.
    tone_yes, tone_no = {"tone": (False, True, "passed")}, {"tone": (False, False, "failed")}
    no_blocking = (
        False,
        "cannot check: no trial's rubric has a blocking criterion, so none of the "
        "2 rubric-graded trials could fail one",
    )
    assert gate(tone_yes, tone_no) == no_blocking
    assert gate(tone_yes, {}) == no_blocking
    # One trial whose rubric has one is checked, and the others cannot fail.
    assert gate(tone_no, safe_yes) == (True, "0 of 1 trial failed a blocking criterion")
    # The line names the trials it read: the gates' variants, not "all trials".
    (result,) = run_gates(str(tmp_path / "trials.jsonl"), config)
    assert result.group == "trials of the base variant"
    every = write(tmp_path, "variants: [all]\ngates:\n  - type: no_blocking_failures\n")
    (result,) = run_gates(str(tmp_path / "trials.jsonl"), every)
    assert result.group == "trials of all variants"


def _two_variant_runs(tmp_path: Path) -> tuple[str, str]:
    """Baseline and candidate over 10 tasks × 2 trials of each of base and paraphrase:1:
    both pass every base trial; on paraphrases the baseline passes all, B none."""
    import json

    def write_run(name: str, agent: str, paraphrase_ok: bool) -> str:
        path = tmp_path / f"{name}.jsonl"
        rows = [
            {"task_id": f"t{t}", "trial": k, "agent": agent, "variant": variant, "success": ok}
            for t in range(10)
            for k in range(2)
            for variant, ok in (("base", True), ("paraphrase:1", paraphrase_ok))
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return str(path)

    return write_run("baseline", "A", True), write_run("candidate", "B", False)


def test_non_inferiority_compares_the_variants_the_gates_read(tmp_path: Path) -> None:
    from agentgauge.api import run_gates

    baseline, candidate = _two_variant_runs(tmp_path)

    def check(variants: str) -> tuple[str, bool, str]:
        config = write(
            tmp_path, f"variants: {variants}\ngates:\n  - type: non_inferiority\n    margin: 0.2\n"
        )
        (result,) = run_gates(candidate, config, baseline=baseline)
        return result.group, result.passed, result.detail

    # The base variants agree: d = 0 on every task.
    group, passed, detail = check("[base]")
    assert (group, passed) == ("B vs baseline", True)
    assert detail.startswith("paired difference +0.000")
    # On paraphrases B fails everything the baseline passes: d = −1 on every task. It
    # passed as "paired difference +0.000", reading the base variant of both.
    group, passed, detail = check("[paraphrase]")
    assert (group, passed) == ("B vs baseline, variants 'paraphrase'", False)
    assert detail.startswith("paired difference -1.000")
    # Both variants pooled per task: (2 + 0)/4 − 4/4 = −0.5 on every task.
    group, passed, detail = check("[all]")
    assert (group, passed) == ("B vs baseline, all variants", False)
    assert detail.startswith("paired difference -0.500")


def test_the_gates_variants_are_checked_on_both_sides_and_never_empty(tmp_path: Path) -> None:
    import json

    from agentgauge.api import run_gates

    _, candidate = _two_variant_runs(tmp_path)
    base_only = tmp_path / "base-only.jsonl"
    base_only.write_text(
        "".join(
            json.dumps({"task_id": f"t{t}", "agent": "A", "success": True}) + "\n"
            for t in range(10)
        )
    )
    config = write(
        tmp_path, "variants: [paraphrase]\ngates:\n  - type: non_inferiority\n    margin: 0.2\n"
    )
    with pytest.raises(InputError) as info:
        run_gates(candidate, config, baseline=str(base_only))
    assert info.value.field == "--baseline"
    assert info.value.reason == f"no trials of variant 'paraphrase' in {base_only} (it has 'base')"
    # `all` beside a name no trial has: the name was not checked, and the run passed.
    config = write(
        tmp_path, "variants: [all, paraphrse]\ngates:\n  - metric: success_rate\n    min: 0\n"
    )
    with pytest.raises(InputError, match=r"variants: no trials of variant 'paraphrse'"):
        run_gates(candidate, config)
    # `[]` read no trial, and every gate failed with "no group matches 'where': ...".
    with pytest.raises(InputError) as info:
        load_gate_config(write(tmp_path, "variants: []\ngates:\n  - type: no_blocking_failures\n"))
    assert (info.value.line, info.value.field) == (1, "variants")
    assert info.value.reason.startswith("names no variant")


def test_a_gate_line_shows_the_bound_as_written_and_the_value_beside_it() -> None:
    config = validate_gate_config(
        {
            "gates": [
                {"metric": "latency_s.p95", "max": 30},
                {"metric": "success_rate", "min": 0.7500001},
                {"metric": "success_rate", "min": 0.75},
            ]
        }
    )
    group = {"variant": "base", "latency_s": {"p95": 30.004}, "success_rate": {"value": 0.75}}
    late, near, at = evaluate_gates(config, {"groups": [group]})
    # It read "FAIL latency_s.p95 <= 30 — ...: latency_s.p95 = 30" (the value at .4g), and
    # "success_rate >= 0.75 ...: success_rate = 0.75" failing (the bound at :g).
    assert (late.gate, late.passed, late.detail) == (
        "latency_s.p95 <= 30", False, "latency_s.p95 = 30.004",
    )  # fmt: skip
    assert (near.gate, near.passed, near.detail) == (
        "success_rate >= 0.7500001", False, "success_rate = 0.75",
    )  # fmt: skip
    assert (at.gate, at.passed, at.detail) == ("success_rate >= 0.75", True, "success_rate = 0.75")
    # The non-inferiority bound: -0.0500001 is below -0.05, and showed as "-0.050 <= -0.05".
    ni = validate_gate_config({"gates": [{"type": "non_inferiority", "margin": 0.05}]})
    (result,) = evaluate_gates(
        ni, {"groups": []}, comparison={"mean_diff": 0.01, "ci95": [-0.0500001, 0.07]}
    )
    assert not result.passed
    assert result.detail.endswith("95% CI lower bound -0.0500001 <= -0.05")


def test_a_where_on_a_label_no_trial_records_says_so(tmp_path: Path) -> None:
    import json

    from agentgauge.api import run_gates

    source = tmp_path / "trials.jsonl"  # no trial records a model
    source.write_text(
        "".join(json.dumps({"task_id": f"t{t}", "success": True}) + "\n" for t in range(4))
    )

    def detail(model: str, by: tuple[str, ...]) -> str:
        config = write(
            tmp_path,
            f"gates:\n  - metric: success_rate\n    min: 0.5\n    where: {{model: {model!r}}}\n",
        )
        (result,) = run_gates(str(source), config, by=by)
        assert not result.passed
        return result.detail

    # It said "the groups are not split by 'model' (add it to --by)" with model in --by.
    assert detail("gpt-4o", ("agent", "model")) == (
        "no group matches 'where' (model 'gpt-4o'): no trial records a model"
    )
    assert detail("gpt-4o", ("agent",)) == (
        "no group matches 'where' (model 'gpt-4o'): the groups are not split by 'model' "
        "(add it to --by)"
    )
    # A null label is not the text "None": it matched, and the gate passed.
    assert detail("None", ("agent", "model")) == (
        "no group matches 'where' (model 'None'): no trial records a model"
    )


def test_a_clustered_se_without_families_fails_with_its_reason(tmp_path: Path) -> None:
    # Trials that record no family have no clustered SE: the metrics left it null with
    # no reason, so its gate read "cannot check: success_rate.se_clustered is null" and
    # the terminal table a bare dash.
    import json

    from agentgauge.api import metrics, run_gates

    trials = tmp_path / "t.jsonl"
    trials.write_text(
        "".join(
            json.dumps({"task_id": f"t{t}", "trial": k, "success": (t + k) % 2 == 0}) + "\n"
            for t in range(4)
            for k in range(2)
        )
    )
    [group] = metrics(str(trials)).to_dict()["groups"]
    assert group["success_rate"]["se_clustered"] is None
    why = group["null_reasons"]["se_clustered"]
    assert "no trial records a family" in why
    path = write(tmp_path, "gates:\n  - metric: success_rate.se_clustered\n    max: 0.5\n")
    [result] = run_gates(str(trials), path)
    assert not result.passed and result.detail == f"cannot check: {why}"


def test_every_null_figure_of_a_small_run_says_why(tmp_path: Path) -> None:
    # One graded trial (a trajectory and milestones; no tool_calls, minefields or
    # irrelevance grade): pass_at_k_se.2 and the tool_use figures nobody measured were
    # null with no reason, and a gate on them read "cannot check: ... is null".
    import json

    from agentgauge.api import metrics, run_gates
    from agentgauge.report.gates import K_METRICS, _lookup, _null_reason

    trajectory = {"mode": "in_order", "precision": 1.0, "recall": 1.0}
    record = {
        "task_id": "t",
        "trial": 0,
        "success": True,
        "grades": [
            {"grader": "trajectory", "passed": True, "evidence": trajectory},
            {"grader": "milestones", "passed": True, "score": 1.0},
        ],
    }
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(record) + "\n")
    [group] = metrics(str(one), k=[1, 2]).to_dict()["groups"]
    unexplained = []
    for path in sorted(metric_paths() | {f"{k}.{n}" for k in K_METRICS for n in group[k]}):
        try:
            node = _lookup(group, path)
        except KeyError:
            continue
        if isinstance(node, dict):
            node = node.get("value", 0)
        if node is None and _null_reason(group, path) is None:
            unexplained.append(path)
    assert unexplained == [], unexplained
    gates = write(tmp_path, "gates:\n  - metric: pass_hat_k_se.2\n    max: 0.5\n")
    [result] = run_gates(str(one), gates)
    assert result.detail == f"cannot check: {group['null_reasons']['pass_hat_k.2']}"
