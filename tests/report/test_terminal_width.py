"""Terminal tables at 80 and 160 columns: every figure whole (never wrapped or cut with
"…"), and the comparison record's headline short however many capabilities there are."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from rich.console import Console

import agentgauge
from agentgauge.metrics.compare import compare
from agentgauge.report.record import SystemInfo, build_record
from agentgauge.report.terminal import capability_table, print_metrics
from agentgauge.schema import Trial
from agentgauge.table import TrialTable

AGENTS = ("builtin:careful-with-a-long-name", "builtin:hasty", "openai:gpt-4o-mini", "null")


def _trials(variants: tuple[str, ...] = ("base",)) -> list[Trial]:
    """Four agents x 12 tasks x 3 trials per variant, priced and timed."""
    out = []
    for a, agent in enumerate(AGENTS):
        for v in variants:
            for t in range(12):
                for k in range(3):
                    out.append(
                        Trial(
                            agent=agent, task_id=f"task-{t}", trial=k, variant=v,
                            family=f"f{t % 4}", success=(t + k + a) % (a + 2) != 0,
                            cost_usd=0.0123 * (a + 1), latency_s=1.5 + t, input_tokens=9_000,
                            output_tokens=400,
                        )
                    )  # fmt: skip
    return out


def _render(width: int, render: Callable[[Console], object]) -> str:
    buf = io.StringIO()
    render(Console(file=buf, width=width, highlight=False))
    return buf.getvalue()


def _whole(text: str, width: int) -> None:
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text


@pytest.mark.parametrize("width", [80, 160])
def test_four_agents_fit_and_every_rate_is_whole(width: int) -> None:
    report = agentgauge.metrics(_trials(), k=(1, 2, 3), by=("agent",))
    text = _render(width, lambda c: print_metrics(report, c, title="outcome (base variant)"))
    _whole(text, width)
    for g in report.to_dict()["groups"]:
        sr = g["success_rate"]
        if sr["se"] == 0:  # every task of agent b passes 2 of its 3 trials: no spread
            assert f"{100 * sr['value']:.1f}% ({g['n_successes']}/{g['n_trials']})" in text
        else:
            assert f"{100 * sr['value']:.1f}% ± {100 * sr['se']:.1f}" in text
        assert g["agent"] in text  # headers too are whole
    if width == 160:  # all four side by side: one table
        assert text.count("┏") == 1
    else:  # split by agents, never by cutting
        assert text.count("┏") > 1


@pytest.mark.parametrize("width", [80, 160])
def test_one_row_per_group_fits_too(width: int) -> None:
    report = agentgauge.metrics(
        _trials(("base", "paraphrase:1")), k=(1, 2), by=("agent", "variant")
    )
    text = _render(width, lambda c: print_metrics(report, c, title="per variant"))
    _whole(text, width)
    assert text.count("$/pass") == 1 and text.count("pass^2") == 1


def _capability_table(n_caps: int) -> tuple[list[str], list[dict[str, object]]]:
    ids = [f"t{i}" for i in range(2 * n_caps)]
    caps = [f"capability_{i // 2}" for i in range(2 * n_caps)]

    def side(every: int) -> TrialTable:
        ok = [i % every == 0 for i in range(len(ids))]
        return TrialTable.from_columns(len(ids), task_id=ids, success=ok, capability=caps)

    a, b = side(3), side(2)
    rec = build_record(compare(a, b), SystemInfo("A", a), SystemInfo("B", b))
    return [ln.text for ln in rec.lines], rec.capabilities


def test_record_headline_names_the_largest_differences_and_points_to_the_table() -> None:
    lines, rows = _capability_table(28)
    headline = lines[5]
    assert "28 capabilities, largest B − A:" in headline and "per-capability table" in headline
    assert headline.count("capability_") == 3 and len(headline) < 400
    # The table has every capability, largest |B − A| first; A passes tasks 0, 3, 6, ...
    # and B tasks 0, 2, 4, ...: capability 1 (tasks 2, 3) is B 1/2, A 1/2, a zero difference.
    assert len(rows) == 28 and {r["capability"] for r in rows} == {
        f"capability_{i}" for i in range(28)
    }
    diffs = [abs(r["diff"]) for r in rows]  # type: ignore[arg-type]
    assert diffs == sorted(diffs, reverse=True)
    one = next(r for r in rows if r["capability"] == "capability_1")
    assert one["diff"] == 0.0
    text = _render(80, lambda c: c.print(capability_table(rows, title="per capability")))
    _whole(text, 80)
    assert all(f"capability_{i} " in text for i in range(28))


def test_few_capabilities_are_still_listed_in_the_line() -> None:
    lines, rows = _capability_table(2)
    assert "by capability: capability_0" in lines[5] and "largest B − A" not in lines[5]
    assert len(rows) == 2


def test_a_capability_without_spread_shows_its_count_not_a_zero_se() -> None:
    # "same": both tasks pass every trial on B and fail on A (rates all equal: an SE of
    # 0); "mixed": one task passes, one fails on both sides (SE 0.5).
    ids = ["s0", "s1", "m0", "m1"]
    caps = ["same", "same", "mixed", "mixed"]
    a = TrialTable.from_columns(
        4, task_id=ids, success=[False, False, True, False], capability=caps
    )
    b = TrialTable.from_columns(4, task_id=ids, success=[True, True, True, False], capability=caps)
    rec = build_record(compare(a, b), SystemInfo("A", a), SystemInfo("B", b))
    text = _render(100, lambda c: c.print(capability_table(rec.capabilities)))
    same = next(line for line in text.splitlines() if "same" in line)
    assert "100.0% (2/2)" in same and "0.0% (0/2)" in same
    mixed = next(line for line in text.splitlines() if "mixed" in line)
    assert "50.0% ± 50.0" in mixed
    assert "± 0.0" not in text


@pytest.mark.parametrize("n_agents", [2, 6])  # figures down (≤ 4 groups), one row each
def test_a_rate_without_spread_shows_its_count_not_a_zero_se(n_agents: int) -> None:
    # Each agent: 5 tasks x 4 trials, every task passing 2 of 4, except the last agent,
    # which passes every trial. pass@4 is 1 on every task (SE 0), pass^4 0 on every task
    # (the first agents), pass@1 0.5 on every task; none of them is "± 0.0".
    trials = [
        Trial(agent=f"agent-{a}", task_id=f"t{t}", trial=k,
              success=a == n_agents - 1 or k % 2 == 0)
        for a in range(n_agents) for t in range(5) for k in range(4)
    ]  # fmt: skip
    report = agentgauge.metrics(trials, k=(1, 4), by=("agent",))
    text = _render(200, lambda c: print_metrics(report, c))
    assert "± 0.0" not in text
    assert "100.0% (5/5 tasks)" in text  # pass@4
    assert "0.0% (0/5 tasks)" in text  # pass^4 of the agents passing half
    assert "50.0% (each of 5 tasks)" in text  # pass@1 (= pass^1) of those
    assert "100.0% (20/20)" in text  # the success rate of the agent that always passes
