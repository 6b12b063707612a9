"""``report DB:RUN`` reads a stored run as columns, as ``metrics`` and the viewer do,
and builds a `Trial` only for the failing trials whose transcripts it shows.

Before, it built every trial of the run with its transcript (a Trial, its events and
grades per trial: 15 CPU seconds and 1.2 GB for 100,000 trials) for the per-task
heatmap, the time horizon, the suites' task ids and the few transcripts it shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli

from agentgauge.importers import import_file
from agentgauge.report.build import TRANSCRIPTS_PER_AGENT, ReportInputs, build_report
from agentgauge.report.html import render_html
from agentgauge.sources import TrialSource, open_source
from agentgauge.store import Store

TASKS, TRIALS = 30, 4


def _record(agent: str, task: int, k: int, variant: str = "base") -> dict[str, Any]:
    """Agent ``a`` fails tasks 0-11 always and passes the rest on trial 0 only past task
    20; agent ``b`` fails every third task on trials 0-1. Each trial calls a tool."""
    ok = task >= 12 and not (task > 20 and k > 0) if agent == "a" else task % 3 != 0 or k > 1
    return {
        "task_id": f"t{task:02d}",
        "trial": k,
        "agent": agent,
        "model": "m",
        "variant": variant,
        "family": f"f{task % 5}",
        "human_minutes": float(1 + task % 7),
        "success": ok,
        "score": float(ok),
        "cost_usd": 0.001 * (1 + k),
        "tool_calls": 1,
        "answer": f"answer {agent} {task} {k} {variant}",
        "events": [
            {"type": "message", "role": "user", "content": f"do task {task}"},
            {"type": "tool_call", "name": "add", "arguments": {"n": task}, "call_id": "c0"},
            {"type": "tool_result", "name": "add", "call_id": "c0", "content": "ok"},
            {"type": "message", "role": "assistant", "content": "done"},
        ],
        "grades": [
            {
                "grader": "state",
                "passed": ok,
                "score": float(ok),
                "status": None if ok else "wrong_state",
            }
        ],
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store: two agents' runs imported from JSONL (what ``import jsonl`` does)."""
    folder = tmp_path_factory.mktemp("few")
    db = folder / "s.db"
    for agent in ("a", "b"):
        path = folder / f"{agent}.jsonl"
        lines = [_record(agent, t, k) for t in range(TASKS) for k in range(TRIALS)]
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        import_file("jsonl", path, store=db, run_id=agent)
    return db


class Built:
    """How many trials the store built, and whether every trial of a run was asked for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.trials = 0
        self.whole_runs = 0
        real = Store._trials

        def counted(store: Store, run_id: str, **kwargs: Any) -> Any:
            if kwargs.get("keys") is None:
                self.whole_runs += 1
            out = real(store, run_id, **kwargs)
            self.trials += len(out)
            return out

        monkeypatch.setattr(Store, "_trials", counted)


def _no_whole_run(src: TrialSource) -> TrialSource:
    """The source, refusing to build all its trials: the report must not ask."""

    def refuse() -> list[Any]:
        raise AssertionError(f"the report built every trial of {src.label}")

    src._load = refuse
    return src


def test_a_report_of_a_stored_run_builds_only_the_transcripts_it_shows(
    store: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built = Built(monkeypatch)
    out = tmp_path / "r.html"
    code, _, err = cli("report", f"{store}:a", "--html", str(out))
    assert code == 0, err
    page = out.read_text()
    # Agent a fails 21 tasks: 8 transcripts (flips first), the 13 others counted.
    assert page.count('<div class="transcript"') == TRANSCRIPTS_PER_AGENT
    assert "a / m: 13 more failing tasks not shown." in page
    assert built.whole_runs == 0
    # Each shown cell's failing trials (its first with its transcript, the others for
    # why they failed): at most 8 cells of 4 trials, never the run's 120.
    assert 0 < built.trials <= TRANSCRIPTS_PER_AGENT * TRIALS < TASKS * TRIALS


def test_two_stored_runs_and_their_comparison_build_no_whole_run(
    store: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built = Built(monkeypatch)
    out = tmp_path / "r.html"
    code, _, err = cli("report", f"{store}:a", f"{store}:b", "--html", str(out))
    assert code == 0, err
    assert "Comparison record" in out.read_text()
    assert built.whole_runs == 0
    assert 0 < built.trials <= 2 * TRANSCRIPTS_PER_AGENT * TRIALS


def test_build_report_never_loads_every_trial(store: Path) -> None:
    sources = [_no_whole_run(open_source(f"{store}:{r}")) for r in ("a", "b", "a")]
    data = build_report(ReportInputs(sources=sources))
    assert len(data.suites) == 1 and len(data.suites[0].transcripts) == 3 * TRANSCRIPTS_PER_AGENT
    render_html(data)


@pytest.mark.parametrize("selector", ["", "#agent=a"])
def test_the_reported_figures_are_metrics_json_of_the_same_run(
    store: Path, cli: Cli, tmp_path: Path, selector: str
) -> None:
    source = f"{store}:a{selector}"
    code, out, err = cli("metrics", source, "--json", "--by", "agent,model")
    assert code == 0, err
    measured = json.loads(out)["groups"]
    suite = build_report(ReportInputs(sources=[_no_whole_run(open_source(source))])).suites[0]
    reported = [{k: v for k, v in g.items() if k != "system"} for g in suite.metrics["groups"]]
    assert reported == measured
    (group,) = measured
    # And the page prints them: the success rate and the trials it rests on.
    code, _, err = cli("report", source, "--markdown", str(tmp_path / "r.md"))
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    rate = f"{100 * group['success_rate']['value']:.1f}%"
    assert f"| a / m | {rate} " in md
    assert f"| {group['n_tasks']} / {group['n_trials']} |" in md


def test_the_heatmap_and_horizon_count_the_columns_as_the_trials_say(store: Path) -> None:
    src = open_source(f"{store}:b")
    trials = list(src.trials)  # built here, to check the report's counts against
    suite = build_report(ReportInputs(sources=[_no_whole_run(open_source(f"{store}:b"))]))
    (cells,) = suite.suites
    for row in cells.tasks:
        mine = [t for t in trials if t.task_id == row["task_id"]]
        cell = row["cells"]["b / m"]
        assert (cell["k"], cell["n"]) == (sum(t.passed for t in mine), len(mine))
        assert row["human_minutes"] == mine[0].human_minutes
    (fit,) = cells.horizon
    assert len(fit["tasks"]) == TASKS


def test_each_failing_cell_shows_its_own_trial(tmp_path: Path) -> None:
    # A system with no base variant: two variants fail trial 0 of one task. Each cell's
    # transcript is its own variant's trial (both once showed the last one read).
    lines = [_record("a", 0, 0, variant) for variant in ("paraphrase:1", "paraphrase:2")]
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    (suite,) = build_report(ReportInputs(sources=[open_source(str(path))])).suites
    shown = sorted(t["view"]["variant"] for t in suite.transcripts)
    assert shown == ["paraphrase:1", "paraphrase:2"]
    assert {t["view"]["answer"] for t in suite.transcripts} == {
        "answer a 0 0 paraphrase:1",
        "answer a 0 0 paraphrase:2",
    }


@pytest.fixture(scope="module")
def regraded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the counter suite, its variants failing on some trials, graded again
    (version 2, active) by the control grader alone."""
    from agentgauge.harness.runner import run
    from agentgauge.testing.worlds import counting_agent

    db = tmp_path_factory.mktemp("regraded") / "s.db"
    suite = Path(__file__).resolve().parents[2] / "examples" / "counter-suite.yaml"
    run(str(suite), counting_agent, trials=2, variants=["base", "fault:tool_error@1.0"],
        store=str(db), run_id="r", progress=False)  # fmt: skip
    return db


@pytest.mark.parametrize("version", [1, 2])
def test_the_trials_picked_by_row_are_those_of_the_whole_run(
    regraded: Path, cli: Cli, version: int
) -> None:
    if version == 2:
        code, _, err = cli("grade", f"{regraded}:r", "--graders", "control", "--activate")
        assert code == 0 or "already" in err, err
    source = f"{regraded}:r#grade={version}"
    every = open_source(source).trials
    rows = [len(every) - 1, 0, 3, 3]  # any order, a row twice
    for events in (True, False):
        picked = open_source(source).pick(rows, events=events)
        want = [every[i] for i in rows]
        if not events:
            want = [t.model_copy(update={"events": []}) for t in want]
        assert [t.model_dump() for t in picked] == [t.model_dump() for t in want]


def test_a_human_baseline_in_the_store_builds_no_whole_run_either(
    store: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Its graders and B's, for record line 5's note, were read by building every trial
    # of both runs (without transcripts); the store sums them up in SQL.
    import shutil

    db = tmp_path / "h.db"
    shutil.copy(store, db)
    assert cli("runs", "--store", str(db), "--mark", "b", "human")[0] == 0
    built = Built(monkeypatch)
    code, out, err = cli("compare", f"{db}:a", f"{db}:a#agent=a", "--json")
    assert code == 0, err
    assert built.whole_runs == 0
    human = json.loads(out)["baselines"]["human"]
    assert human["label"] == f"{db}:b" and human["note"] is None  # graded alike: no note
