"""The terminal and the HTML report print the same figure for the same scope.

Before this test the demo printed control accuracy 85.8% in the terminal and 0.886
in report.html for the same agent (missed confirmation 13.1% vs 0.000): the
terminal computed its behaviour table over all variants, the report over the base
variant, and neither said so. Both now follow `agentgauge.report.scope`.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from agentgauge.harness.runner import run
from agentgauge.report.build import ReportInputs, _reliability_bars, build_report
from agentgauge.report.scope import (
    BASE_VARIANT,
    SOME_BASE,
    base_trials,
    scoped_metrics,
    system_base_rows,
)
from agentgauge.report.terminal import print_behaviour, print_variants
from agentgauge.schema import Trial
from agentgauge.sources import TrialSource, open_source
from agentgauge.store import Store

AGENTS = ("careful", "hasty")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[TrialSource]:
    """The demo's retail runs in small: one trial per task on three variants."""
    db = tmp_path_factory.mktemp("scope") / "s.db"
    with Store(db) as store:
        for name in AGENTS:
            run(
                "builtin:retail",
                f"builtin:{name}",
                trials=1,
                variants=["base", "paraphrase:1", "fault:tool_error"],
                store=store,
                run_id=f"retail-{name}",
                progress=False,
            )
    return [open_source(f"{db}:retail-{name}") for name in AGENTS]


def _row(text: str, name: str) -> list[str]:
    """The cells of the table row that starts with ``name``."""
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(name))
    return line.strip()[len(name) :].split()


def test_control_and_tool_figures_match_the_report_on_the_base_variant(
    sources: list[TrialSource],
) -> None:
    trials = [t for s in sources for t in s.trials]
    scoped = scoped_metrics(trials, k=[1], by=("agent",))  # what the demo prints from
    suite = build_report(ReportInputs(sources=sources, ks=[1])).suites[0]
    report = suite.metrics
    assert scoped.base_scope == BASE_VARIANT
    terminal = {g["agent"]: g for g in scoped.base.to_dict()["groups"]}
    html = {g["agent"]: g for g in report["groups"]}
    assert set(terminal) == set(html) == {f"builtin:{n}" for n in AGENTS}
    for agent, g in html.items():
        assert terminal[agent]["control"] == g["control"]
        assert terminal[agent]["tool_use"] == g["tool_use"]
        assert terminal[agent]["success_rate"] == g["success_rate"]
    # Reliability is over the same trials on both sides (the report draws it as bars).
    assert suite.reliability == _reliability_bars(scoped.all.to_dict()["reliability"])
    assert any(bar["value"] is not None for bar in suite.reliability)

    # And the printed table shows the report's numbers, under a title naming the scope.
    buf = io.StringIO()
    console = Console(file=buf, width=160)
    print_behaviour(scoped.base, console, scope=scoped.base_scope, reliability=scoped.all)
    text = buf.getvalue()
    assert f"tool use and control decisions ({BASE_VARIANT})" in text
    assert f"(consistency, calibration and AUROC: {BASE_VARIANT}; robustness:" in text
    for name, key in (
        ("control accuracy", "accuracy"),
        ("missed confirmation", "missed_confirmation"),
    ):
        expected = [
            "—" if html[a]["control"][key] is None else f"{100 * html[a]['control'][key]:.1f}%"
            for a in terminal
        ]
        assert _row(text, name) == expected


def test_the_all_variant_figure_is_a_different_scope(sources: list[TrialSource]) -> None:
    # What the terminal used to print: the pooled figure is not the base one here, so
    # the test above would have caught the old scope.
    trials = [t for s in sources for t in s.trials]
    scoped = scoped_metrics(trials, k=[1], by=("agent",))
    pooled = {g["agent"]: g["control"] for g in scoped.all.to_dict()["groups"]}
    base = {g["agent"]: g["control"] for g in scoped.base.to_dict()["groups"]}
    assert pooled != base


def test_outcome_per_variant_has_one_row_per_variant(sources: list[TrialSource]) -> None:
    trials = [t for s in sources for t in s.trials]
    scoped = scoped_metrics(trials, k=[1], by=("agent",))
    buf = io.StringIO()
    print_variants(scoped.per_variant, Console(file=buf, width=160), title="outcome per variant")
    rows = [ln.split()[0] for ln in buf.getvalue().splitlines()[4:] if ln.strip()]
    assert rows == ["base", "fault:tool_error", "paraphrase:1"]
    base = {g["agent"]: g for g in scoped.base.to_dict()["groups"]}
    cells = _row(buf.getvalue(), "base")
    # "86.4% ± 2.5 (55)" per agent: the base row is the base-variant outcome table's figure.
    for i, agent in enumerate(base):
        sr = base[agent]["success_rate"]
        assert cells[4 * i] == f"{100 * sr['value']:.1f}%"
        assert cells[4 * i + 3] == f"({base[agent]['n_trials']})"


def test_a_source_without_a_base_variant_says_its_scope() -> None:
    trials = [Trial(task_id="t", variant="paraphrase:1", success=True)]
    kept, scope = base_trials(trials)
    assert kept == trials and scope == "all variants: no base variant in the data"


@pytest.mark.parametrize("width", [80, 160])
def test_behaviour_and_variant_tables_fit_the_terminal(
    sources: list[TrialSource], width: int
) -> None:
    trials = [t for s in sources for t in s.trials]
    scoped = scoped_metrics(trials, k=[1], by=("agent",))
    buf = io.StringIO()
    console = Console(file=buf, width=width)
    print_behaviour(scoped.base, console, scope=scoped.base_scope, reliability=scoped.all)
    print_variants(scoped.per_variant, console, title="outcome per variant")
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= width and "…" not in text
    assert "reliability per configuration, Rabanser et al. 2026 (consistency, calibration" in (
        " ".join(text.split())
    )


def test_an_unnamed_agent_and_one_named_none_are_two_systems() -> None:
    """The viewer's scope (`system_base_rows`): the unnamed agent has a base variant,
    the agent named "None" has only a paraphrase; joined as text ("None") they were one
    system with a base variant, and the paraphrase-only system's rows were dropped."""
    variants = np.array(["base", "paraphrase:1"], dtype=object)
    agents = np.array([None, "None"], dtype=object)
    models = np.array([None, None], dtype=object)
    keep, title = system_base_rows(variants, agents, models)
    assert keep.tolist() == [True, True] and title == SOME_BASE
