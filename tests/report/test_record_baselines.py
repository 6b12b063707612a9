"""Record line 5: every baseline present with its figures, every absent one named."""

from __future__ import annotations

import pytest

from agentgauge.metrics.baselines import summarize_baseline
from agentgauge.metrics.compare import compare
from agentgauge.metrics.validity import null_agent_check
from agentgauge.report.record import SystemInfo, build_record
from agentgauge.table import TrialTable


def _table(per_task: dict[str, list[int]], **extra: float | None) -> TrialTable:
    ids = [t for t, outs in per_task.items() for _ in outs]
    ok = [bool(o) for outs in per_task.values() for o in outs]
    columns: dict[str, list[object]] = {k: [v] * len(ids) for k, v in extra.items()}
    return TrialTable.from_columns(len(ids), task_id=ids, success=ok, **columns)


A = _table({"t1": [1], "t2": [0]}, cost_usd=0.5, latency_s=2.0)
B = _table({"t1": [1], "t2": [1]}, cost_usd=0.6, latency_s=3.0)


def _line5(**kwargs: object) -> str:
    record = build_record(compare(A, B), SystemInfo("A", A), SystemInfo("B", B), **kwargs)  # type: ignore[arg-type]
    return next(ln.text for ln in record.lines if ln.number == 5)


def test_all_four_present() -> None:
    null = _table({"t1": [0], "t2": [0]}, cost_usd=0.0, latency_s=0.1)
    previous = _table({"t1": [1], "t2": [0]}, cost_usd=0.4, latency_s=1.0)
    human = _table({"t1": [1], "t2": [1]}, human_minutes=30.0)
    ablation = _table({"t1": [0], "t2": [1]}, cost_usd=0.1, latency_s=1.5)
    text = _line5(
        null_agent=null_agent_check(null),
        baselines={
            "null": summarize_baseline("null", "null-run", null),
            "previous": summarize_baseline("previous", "prod-v3", previous),
            "human": summarize_baseline("human", "humans", human, human_rate=120.0),
            "ablation": summarize_baseline("ablation", "one-call", ablation),
        },
        human_rate=120.0,
    )
    parts = text.split("; ")
    assert parts[0].startswith(
        "null agent 0.0% on the shared tasks, passes 0 tasks of all it ran, 95% CI ["
    )
    assert "cost per success unknown (no successes), latency p50 0.1 s" in parts[0]
    # prod-v3 passes 1 of 2 tasks at $0.40 a trial: $0.40 / 0.5 = $0.80 per success.
    assert parts[1].startswith("previous system: prod-v3 50.0% on 2 shared tasks, 95% CI [")
    assert parts[1].endswith("cost per success $0.8, latency p50 1.0 s")
    # Two humans' tasks of 30 minutes at $120/h: $60 each, both passed: $60 per success.
    assert parts[2].startswith("human baseline: humans 100.0% on 2 shared tasks, 95% CI [")
    assert parts[2].endswith("cost per success $60.00 at $120.00/h, time p50 30.0 min")
    # A: $0.50 / 0.5 = $1.00 per success, 1 / 60 = 0.0167; B: $0.60 / 1 = $0.60, 0.01.
    assert parts[3] == "agent's cost per success relative to the human's: A 0.0167×, B 0.01×"
    assert parts[4].startswith("ablation: one-call 50.0% on 2 shared tasks, 95% CI [")
    assert parts[4].endswith("cost per success $0.2, latency p50 1.5 s")
    assert "not run" not in text


def test_absent_ones_are_named_with_what_to_do() -> None:
    text = _line5()
    assert text.startswith("null agent not run")
    assert "previous system: A (A) at 50.0% on the shared tasks" in text
    assert "human baseline: not run — import the humans' trials" in text
    assert "agentgauge import jsonl FILE --baseline-role human" in text
    assert "ablation: not run — run the simplest version of the system" in text
    # A baseline found but unusable says why instead.
    text = _line5(absent_baselines={"ablation": "s.db:abl is marked ablation but shares no task"})
    assert "ablation: not run — s.db:abl is marked ablation but shares no task" in text


def test_unknown_agent_cost_stays_unknown_beside_the_human() -> None:
    unpriced = _table({"t1": [1], "t2": [0]}, latency_s=2.0)  # no cost recorded
    human = _table({"t1": [1], "t2": [0]}, human_minutes=60.0)
    record = build_record(
        compare(unpriced, B),
        SystemInfo("A", unpriced),
        SystemInfo("B", B),
        baselines={"human": summarize_baseline("human", "humans", human, human_rate=100.0)},
        human_rate=100.0,
    )
    text = record.lines[4].text
    # The human: $100 a task, one of two passed: $200 per success; B: $0.60 / 1 → 0.003.
    assert "cost per success $200.00 at $100.00/h" in text
    assert "A unknown (agent's cost unknown (price unknown for 2 of 2 trials))" in text
    assert "B 0.003×" in text


def test_the_human_without_a_rate_has_an_unknown_cost() -> None:
    human = _table({"t1": [1], "t2": [1]}, human_minutes=30.0)
    text = _line5(baselines={"human": summarize_baseline("human", "humans", human)})
    assert "cost per success unknown (no hourly rate (give --human-rate USD))" in text
    assert "A unknown (human's cost unknown (no hourly rate" in text


@pytest.mark.parametrize("configuration", ["one change: model (m-1 → m-2)", None])
def test_line_one_ends_with_the_configuration(configuration: str | None) -> None:
    record = build_record(
        compare(A, B), SystemInfo("A", A), SystemInfo("B", B), configuration=configuration
    )
    line = record.lines[0].text
    assert line.endswith(f"; configuration: {configuration}") == (configuration is not None)


def test_a_tiny_cost_ratio_reads_as_a_number_not_an_exponent() -> None:
    from agentgauge.report.record import _times

    assert _times(8.91e-05) == "0.0000891×" and _times(0.0167) == "0.0167×"
    assert _times(2.5) == "2.5×" and _times(1234.5) == "1230×"
