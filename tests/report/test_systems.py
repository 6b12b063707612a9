"""Each system is its own row, point, column and transcript group in a report.

A system is an agent and model as one source (run) records them: two runs of one
agent and model (`report db:v1 db:v2`, the README's main use) are two systems, and
two models of one agent are two systems, in the outcome and cost tables, pass@k, the
heatmap, the cost frontier, the time horizon and the transcripts. Labels that read
alike (agent "all" and no agent) are told apart, never an error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli

from agentgauge.metrics.frontier import frontier_from_table
from agentgauge.report.build import ReportInputs, build_report, markdown_summary
from agentgauge.report.html import SuiteReport, render_html
from agentgauge.schema import Trial
from agentgauge.sources import TrialSource, open_source
from agentgauge.table import TrialTable


def rows(agent: str | None, model: str | None, passed: int, cost: float) -> list[dict[str, Any]]:
    """10 tasks × 3 trials; the first ``passed`` tasks pass every trial, the rest none."""
    return [
        {
            "task_id": f"t{t}",
            "trial": k,
            "success": t < passed,
            "cost_usd": cost,
            "family": f"f{t % 3}",
            "human_minutes": 2.0**t,
            **({"agent": agent} if agent is not None else {}),
            **({"model": model} if model is not None else {}),
        }
        for t in range(10)
        for k in range(3)
    ]


def source(label: str, data: list[dict[str, Any]]) -> TrialSource:
    return TrialSource(label, trials=[Trial.model_validate(r) for r in data])


def suite_of(*sources: TrialSource) -> SuiteReport:
    data = build_report(ReportInputs(sources=sources, seed=0))
    assert len(data.suites) == 1
    return data.suites[0]


def systems(suite: SuiteReport) -> dict[str, dict[str, Any]]:
    """Per label of the outcome table: the group, its frontier point, heatmap column
    (the cells' trial counts), pass@k curve and transcripts."""
    out: dict[str, dict[str, Any]] = {}
    for g in suite.metrics["groups"]:
        label = g["system"]
        out[label] = {
            "rate": g["success_rate"]["value"],
            "n_trials": g["n_trials"],
            "point": [p for p in suite.frontier if p["label"] == label],
            "cells": [row["cells"].get(label) for row in suite.tasks],
            "curves": [c for c in suite.passk if c["label"] == label],
            "transcripts": [t for t in suite.transcripts if t["agent"] == label],
            "horizon": [h for h in suite.horizon if h["label"] == label],
        }
    assert len(out) == len(suite.metrics["groups"]), "two groups share a label"
    return out


def check_apart(suite: SuiteReport, expected: dict[str, float]) -> None:
    """Each label is one system with its own rate, point, column, curve and fit."""
    got = systems(suite)
    assert {k: v["rate"] for k, v in got.items()} == pytest.approx(expected)
    assert sorted(p["label"] for p in suite.frontier) == sorted(expected)
    assert list(suite.tasks[0]["cells"]) == list(expected)
    for s in got.values():
        assert s["n_trials"] == 30
        assert len(s["point"]) == 1 and s["point"][0]["n_trials"] == 30
        assert s["point"][0]["success_rate"] == pytest.approx(s["rate"])
        assert s["point"][0]["success_se"] is not None
        assert [c["n"] for c in s["cells"]] == [3] * 10
        assert len(s["curves"]) == 1 and len(s["horizon"]) == 1
        # Every heatmap link leads to a transcript of that same system.
        anchors = {t["anchor"] for t in s["transcripts"]}
        assert {c["anchor"] for c in s["cells"] if c["anchor"]} <= anchors


def test_two_runs_of_one_agent_and_model_are_two_systems(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's `report db:v1 db:v2`: both runs record agent bot, model gpt. They
    # were pooled into one row "bot / gpt, 10 / 60, 60.0%" and heatmap cells "3/6".
    monkeypatch.chdir(tmp_path)
    for name, passed in (("v1", 3), ("v2", 9)):
        Path(f"{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows("bot", "gpt", passed, 0.01))
        )
        code, _, err = cli("import", "jsonl", f"{name}.jsonl", "--store", "s.db", "--run-id", name)
        assert code == 0, err
    args = ["report", "s.db:v1", "s.db:v2", "--markdown", "r.md", "--html", "r.html"]
    code, _, err = cli(*args)
    assert code == 0, err
    md = Path("r.md").read_text()
    assert "| bot / gpt (run v1) | 30.0%" in md
    assert "| bot / gpt (run v2) | 90.0%" in md
    assert "10 / 60" not in md
    page = Path("r.html").read_text()
    assert not re.search(r">\d+/6<", page)  # no heatmap cell pools the two runs
    check_apart(
        suite_of(open_source("s.db:v1"), open_source("s.db:v2")),
        {"bot / gpt (run v1)": 0.3, "bot / gpt (run v2)": 0.9},
    )


def test_runs_that_share_a_run_id_are_told_apart_by_their_source(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for store, passed in (("a.db", 3), ("b.db", 9)):
        Path("t.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows("bot", "gpt", passed, 0.01))
        )
        code, _, err = cli("import", "jsonl", "t.jsonl", "--store", store, "--run-id", "v1")
        assert code == 0, err
    check_apart(
        suite_of(open_source("a.db:v1"), open_source("b.db:v1")),
        {"bot / gpt (a.db:v1)": 0.3, "bot / gpt (b.db:v1)": 0.9},
    )


def test_files_without_a_run_or_a_model_and_one_file_given_twice() -> None:
    one, two = rows("bot", None, 3, 0.01), rows("bot", None, 9, 0.01)
    check_apart(
        suite_of(source("one.jsonl", one), source("two.jsonl", two)),
        {"bot / (one.jsonl)": 0.3, "bot / (two.jsonl)": 0.9},
    )
    check_apart(
        suite_of(source("one.jsonl", one), source("one.jsonl", one)),
        {"bot / (one.jsonl #1)": 0.3, "bot / (one.jsonl #2)": 0.3},
    )


def test_a_model_already_named_like_a_tagged_one_stays_apart() -> None:
    # Source c records model "gpt (one.jsonl)" itself: a's tagged model must not join it.
    a, b = rows("bot", "gpt", 3, 0.01), rows("bot", "gpt", 9, 0.01)
    c = rows("bot", "gpt (one.jsonl)", 6, 0.01)
    suite = suite_of(source("one.jsonl", a), source("two.jsonl", b), source("three.jsonl", c))
    rates = {g["system"]: g["success_rate"]["value"] for g in suite.metrics["groups"]}
    assert rates == pytest.approx(
        {
            "bot / gpt (one.jsonl) #2": 0.3,
            "bot / gpt (two.jsonl)": 0.9,
            "bot / gpt (one.jsonl)": 0.6,
        }
    )


def test_systems_only_one_source_records_keep_their_names() -> None:
    # Different agents over one suite, and a single source: no tag is added.
    suite = suite_of(source("a.jsonl", rows("careful", "gpt", 9, 0.1)),
                     source("b.jsonl", rows("hasty", "gpt", 3, 0.01)))  # fmt: skip
    assert [g["system"] for g in suite.metrics["groups"]] == ["careful / gpt", "hasty / gpt"]
    md = markdown_summary(
        build_report(ReportInputs(sources=[source("a.jsonl", rows("x", "m", 5, 0.1))]))
    )
    assert "| x / m | 50.0%" in md


def test_models_of_one_agent_are_separate_points_and_columns() -> None:
    # Agent openai with a dear, good model and a cheap, weak one: the frontier had one
    # point "openai" and the heatmap one column of "3/6" cells.
    data = rows("openai", "big", 9, 1.0) + rows("openai", "small", 4, 0.01)
    suite = suite_of(source("models.jsonl", data))
    check_apart(suite, {"openai / big": 0.9, "openai / small": 0.4})
    assert all(p["dominated_by"] is None for p in suite.frontier)  # a real trade-off
    page = render_html(build_report(ReportInputs(sources=[source("models.jsonl", data)])))
    assert not re.search(r">\d+/6<", page) and re.search(r">\d+/3<", page)


def test_labels_that_read_alike_do_not_crash_the_report(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Agent "all" and trials without an agent were both labelled "all": "point labels
    # must be unique", a traceback and exit 1.
    monkeypatch.chdir(tmp_path)
    lines = [
        {"task_id": "t0", "success": True, "agent": "all", "cost_usd": 0.1},
        {"task_id": "t1", "success": False, "agent": "all", "cost_usd": 0.1},
        {"task_id": "t0", "success": True, "cost_usd": 0.1},
        {"task_id": "t1", "success": False, "cost_usd": 0.1},
    ]
    Path("aa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, _, err = cli("report", "aa.jsonl", "--markdown", "aa.md", "--html", "aa.html")
    assert code == 0, err
    assert "Traceback" not in err
    md = Path("aa.md").read_text()
    assert "| agent all | 50.0%" in md and "| (no agent or model) | 50.0%" in md
    suite = suite_of(open_source("aa.jsonl"))
    assert sorted(p["label"] for p in suite.frontier) == ["(no agent or model)", "agent all"]
    assert list(suite.tasks[0]["cells"]) == ["agent all", "(no agent or model)"]


def test_agent_a_slash_b_and_agent_a_model_b_are_two_systems() -> None:
    data = rows("a / b", None, 3, 0.01) + rows("a", "b", 9, 0.02)
    check_apart(suite_of(source("x.jsonl", data)), {"agent a / b": 0.3, "agent a, model b": 0.9})


def test_a_figure_nobody_measured_names_the_system_as_the_tables_do(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The note of an unpriced cost named "(a / b)", the priced system: the unpriced one
    # is agent "a" with model "b", which the tables call "agent a, model b".
    monkeypatch.chdir(tmp_path)
    lines = [
        {"task_id": "t", "success": True, "agent": "a / b", "cost_usd": 0.1},
        {"task_id": "t", "success": True, "agent": "a", "model": "b"},
        {"task_id": "t", "success": False, "agent": "c", "cost_usd": 0.0},
    ]
    Path("n.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, _, err = cli("report", "n.jsonl", "--markdown", "n.md", "--html", "n.html")
    assert code == 0, err
    notes = build_report(ReportInputs(sources=[open_source("n.jsonl")])).notes
    unpriced = [n for n in notes if "price unknown" in n]
    assert unpriced == [
        "not measured: per_trial, total, cost_of_pass, spend_per_success: price unknown "
        "for 1 of 1 trial (agent a, model b)"
    ]
    assert "(agent a, model b)" in Path("n.md").read_text()
    assert "(agent a, model b)" in Path("n.html").read_text()
    assert "trials (a / b)" not in Path("n.md").read_text()


def test_frontier_from_table_gives_each_group_its_own_label() -> None:
    t = TrialTable.from_columns(
        6,
        task_id=["t0", "t1", "t0", "t1", "t0", "t1"],
        success=[True, False, True, True, False, False],
        agent=["a/b", "a/b", "a", "a", None, None],
        model=[None, None, "b", "b", None, None],
        cost_usd=[0.1] * 6,
    )
    f = frontier_from_table(t)
    points = [*f.frontier, *(p for p, _ in f.dominated)]
    assert sorted((p.label, p.success_rate) for p in points) == [
        ("agent a, model b", 1.0),
        ("agent a/b", 0.5),
        ("all", 0.0),
    ]
    alike = TrialTable.from_columns(
        2, task_id=["t0", "t0"], success=[True, False], agent=["all", None], cost_usd=[0.1, 0.1]
    )
    labels = [p.label for p in frontier_from_table(alike, by=["agent"]).frontier]
    assert labels == ["agent all"]
    dominated = [p.label for p, _ in frontier_from_table(alike, by=["agent"]).dominated]
    assert dominated == ["(no agent)"]


def test_two_sources_with_different_variants_report_a_dash_where_one_has_none(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # v1 ran the base variant only, v2 a paraphrase too: the per-variant table's cell of
    # v1 on the paraphrase has no trial, and rendering it raised jinja2's UndefinedError
    # ("No first item"), for --markdown too (the HTML was rendered whatever was asked).
    monkeypatch.chdir(tmp_path)
    for name, variants in (("v1", ("base",)), ("v2", ("base", "paraphrase:1"))):
        rows = [
            {"task_id": f"t{i}", "trial": 0, "agent": "bot", "variant": v, "success": i % 2 == 0}
            for i in range(4)
            for v in variants
        ]
        Path(f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = cli("report", "v1.jsonl", "v2.jsonl", "--markdown", "r.md")
    assert code == 0, err
    code, _, err = cli("report", "v1.jsonl", "v2.jsonl", "--html", "r.html")
    assert code == 0, err
    page = Path("r.html").read_text()
    assert '<span title="this system has no trial of this variant">–</span>' in page
