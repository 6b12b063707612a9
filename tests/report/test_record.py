"""The nine-line comparison record (SPEC 5.11): order, explicit gaps, safe Markdown."""

from __future__ import annotations

import agentgauge
from agentgauge.components import diff_components
from agentgauge.metrics.compare import compare
from agentgauge.metrics.validity import NullAgentCheck
from agentgauge.report.record import TITLES, SystemInfo, agent_name, build_record
from agentgauge.schema import Trial
from agentgauge.table import TrialTable


def _table(per_task: dict[str, list[int]], **extra: list[object]) -> TrialTable:
    ids = [t for t, outs in per_task.items() for _ in outs]
    ok = [bool(o) for outs in per_task.values() for o in outs]
    return TrialTable.from_columns(len(ids), task_id=ids, success=ok, **extra)


def test_nine_lines_in_order_with_explicit_gaps() -> None:
    a = _table({"t1": [1], "t2": [0], "t3": [1]})
    b = _table({"t1": [1], "t2": [1], "t3": [1]})
    c = compare(a, b)
    rec = build_record(c, SystemInfo("A", a), SystemInfo("B", b))
    assert [ln.number for ln in rec.lines] == list(range(1, 10))
    assert [ln.title for ln in rec.lines] == list(TITLES)
    text = {ln.title: ln.text for ln in rec.lines}
    # Nothing recorded: each line says so instead of vanishing.
    assert "agent not recorded" in text["Systems"] and "versions not pinned" in text["Systems"]
    assert text["Tasks"].startswith("suite not recorded; 3 tasks compared; split not recorded")
    assert "independence not recorded" in text["Trials"]
    assert text["Graders"] == "graders not recorded; no rubric; no model judge"
    assert text["Baselines"].startswith("null agent not run")
    assert text["Reliability"].startswith("pass^k not measurable")
    assert "unknown (price unknown for 3 of 3 trials)" in text["Cost"]
    assert "latency p50/p95 A not recorded" in text["Cost"]
    # The difference line carries the verdict and McNemar for one trial per task.
    assert text["Difference"].endswith(c.verdict)
    assert "McNemar exact p = 1.000 (0 vs 1 flips)" in text["Difference"]
    assert rec.to_text().splitlines()[0].startswith("1. Systems")


def test_markdown_escapes_user_strings() -> None:
    a = _table({"t1": [1, 0]}, agent=["*evil*", "*evil*"])
    b = _table({"t1": [1, 1]}, agent=["<script>x</script>", "<script>x</script>"])
    rec = build_record(
        compare(a, b, label_a="a_[link](x)", label_b="b|c"),
        SystemInfo("a_[link](x)", a),
        SystemInfo("b|c", b),
        null_agent=NullAgentCheck(0.0, [], 1),
    )
    md = rec.to_markdown()
    assert "<script>" not in md and "&lt;script>x&lt;/script>" in md
    assert r"\*evil\*" in md and r"a\_\[link\](x)" in md and r"b\|c" in md
    assert md.startswith("## Comparison record\n\n1. **Systems**: ")
    assert "null agent 0.0% on the shared tasks, passes 0 tasks of all it ran" in md


def test_trials_feed_graders_and_judge() -> None:
    from agentgauge.schema import Grade

    trials = [
        Trial(task_id="t", success=True, grades=[Grade(grader="state", passed=True)]),
        Trial(
            task_id="t",
            success=False,
            grades=[Grade(grader="rubric:tone", passed=False, judge_model="j-1")],
        ),
    ]
    t = TrialTable.from_trials(trials)
    c = agentgauge.compare(trials, trials)
    rec = build_record(c, SystemInfo("A", t, trials=trials), SystemInfo("B", t), judge_kappa=0.71)
    graders = rec.lines[3].text
    assert graders.startswith("graders rubric:tone, state") and "judge j-1, κ = 0.71" in graders
    # Two trials per task: pass^2 is defined and shown at the default deployment k.
    assert rec.lines[7].text.startswith("pass^2 (deployment k = 2): A 0.0%, B 0.0%")


def test_a_side_whose_trials_never_finished_is_not_graded_differently() -> None:
    # A run of infra errors has no grades because nothing was graded; the record said
    # "graders differ: A none (outcomes as imported)" and asked for SOURCE#grade=N.
    from agentgauge.report.record import grading_difference
    from agentgauge.schema import Grade

    down = [
        Trial(task_id=t, success=False, status="error", error_kind="infra", error="down")
        for t in ("a", "b")
    ]
    graded = [
        Trial(task_id="a", success=True, grades=[Grade(grader="state", passed=True)]),
        Trial(task_id="b", success=False, grades=[Grade(grader="state", passed=False)]),
    ]
    a = SystemInfo("A", TrialTable.from_trials(down), trials=down)
    b = SystemInfo("B", TrialTable.from_trials(graded), trials=graded)
    assert grading_difference(a, b) is None
    rec = build_record(agentgauge.compare(down, graded), a, b)
    assert rec.lines[3].text.startswith("graders state")
    alone = build_record(agentgauge.compare(down, down), a, a)
    assert alone.lines[3].text.startswith("no grades recorded (no trial finished")


def test_two_different_agents_with_no_recorded_components_are_named() -> None:
    # Line 1 said "no recorded component differs" of a Python agent against a cmd: one.
    a = [Trial(task_id="t", agent="python:mine.fn", success=True)]
    b = [Trial(task_id="t", agent="cmd:python agent.py", success=False)]
    sa = SystemInfo("A", TrialTable.from_trials(a), trials=a)
    sb = SystemInfo("B", TrialTable.from_trials(b), trials=b)
    # The sentence says so itself (line 1, the terminal's row and --json give one).
    changes = diff_components({}, {}, agents=(agent_name(sa), agent_name(sb)))
    rec = build_record(agentgauge.compare(a, b), sa, sb, configuration=changes.sentence())
    assert (
        "configuration: no recorded component differs, but the agent does "
        "(python:mine.fn → cmd:python agent.py); not recorded on one side or both: model, "
    ) in rec.lines[0].text
    # The same agent on both sides: nothing to add.
    same = diff_components({}, {}, agents=(agent_name(sa), agent_name(sa)))
    assert same.sentence().startswith("no recorded component differs; not recorded")
