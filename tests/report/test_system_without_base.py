"""A system with no base-variant trial is shown on all its trials, and every face
says so, whatever the other systems of the report have.

Before: `report db:h db:p`, with p run on ``--variants paraphrase:1`` only, applied
the base rule to the suite's pooled trials: h had base trials, so p's system vanished
from the outcome, cost, pass@k, frontier, heatmap, tool-call, control, validity and
transcript sections, with no note; `compare` set p's paraphrase trials against h's
base trials under the title "shared tasks, base variant", with no warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli

from agentgauge.harness.runner import run
from agentgauge.report.scope import BASE_VARIANT, SOME_BASE, system_base_trials
from agentgauge.schema import Trial
from agentgauge.store import Store

NOTE = (
    "builtin:careful has no base-variant trial: its rows of the base-variant tables and "
    "figures use all its trials (paraphrase:1)"
)
WARNING = (
    "B ({b}) has no base-variant trial: the comparison reads all its variants "
    "(paraphrase:1), against A's base variant; run the base variant on both sides to "
    "compare like with like"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hasty on the base variant; careful on one paraphrase only."""
    db = tmp_path_factory.mktemp("nobase") / "r.db"
    with Store(db) as s:
        run("builtin:retail", "builtin:hasty", store=s, run_id="h", progress=False)
        run("builtin:retail", "builtin:careful", variants=["paraphrase:1"], store=s,
            run_id="p", progress=False)  # fmt: skip
    return db


def test_each_system_falls_back_to_all_its_trials_on_its_own() -> None:
    def trial(agent: str, variant: str) -> Trial:
        return Trial(task_id="t", agent=agent, variant=variant, success=True)

    trials = [trial("a", "base"), trial("a", "paraphrase:1"), trial("b", "paraphrase:1")]
    chosen = system_base_trials(trials)
    assert [(t.agent, t.variant) for t in chosen.trials] == [
        ("a", "base"),
        ("b", "paraphrase:1"),
    ]
    assert chosen.scope == SOME_BASE
    assert chosen.fallback == {("b", None): ["paraphrase:1"]}
    every = system_base_trials(trials[:2])
    assert every.scope == BASE_VARIANT and every.fallback == {}


def test_the_report_shows_a_system_without_base_trials_and_says_so(
    store: Path, cli: Cli, tmp_path: Path
) -> None:
    md_path, html_path = tmp_path / "r.md", tmp_path / "r.html"
    code, _, err = cli(
        "report", f"{store}:h", f"{store}:p", "--markdown", str(md_path), "--html", str(html_path)
    )
    assert code == 0, err
    md, html = md_path.read_text(), html_path.read_text()
    assert f"> {NOTE}" in md and NOTE in html
    outcome = md.split(f"outcome — {SOME_BASE}", 1)[1].split("\n### ", 1)[0]
    assert "| builtin:hasty |" in outcome and "| builtin:careful |" in outcome
    for title in ("Tool calls and trajectories", "Control decisions", "Recovery from tool"):
        section = md.split(f"### {title}", 1)[1].split("\n### ", 1)[0]
        assert SOME_BASE in section.splitlines()[0]
        assert "| builtin:careful |" in section, title
    # The heatmap, the frontier and the transcripts in the HTML name it too.
    heat = html.split('class="heat"', 1)[1].split("</table>", 1)[0]
    assert "builtin:careful" in heat
    assert html.count("builtin:careful") > 10
    # The comparison says what it compared, as `compare` does.
    assert WARNING.format(b=f"{store}:p") in md.replace("\\", "")
    assert "Comparison — A base variant; B all its variants (paraphrase:1)" in html


def test_compare_warns_when_a_side_has_no_base_trial(store: Path, cli: Cli) -> None:
    a, b = f"{store}:h", f"{store}:p"
    code, out, err = cli("compare", a, b, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["warnings"] == [WARNING.format(b=b)]
    assert data["scope"] == "A base variant; B all its variants (paraphrase:1)"
    assert (data["scope_a"], data["scope_b"]) == ("base variant", "all its variants (paraphrase:1)")
    trials_line = data["record"]["lines"][2]["text"]
    assert trials_line.endswith(
        "; variants compared: A base variant; B all its variants (paraphrase:1) "
        "(B has no base trial)"
    )
    code, out, err = cli("compare", a, b)
    assert code == 0
    assert "warning: B" in err and "paraphrase:1" in err
    assert "shared tasks, base variant)" not in out

    # Like with like: no warning, and the scope is the base variant.
    code, out, err = cli("compare", a, a, "--json")
    data = json.loads(out)
    assert data["warnings"] == [] and data["scope"] == "base variant"
    assert "variants compared" not in data["record"]["lines"][2]["text"]
