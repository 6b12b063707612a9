"""The report measures a stored run from its columns (read from SQL, as ``metrics``
does) instead of building them again from every trial: it must say exactly what the
trials themselves say.

Before, ``report DB:RUN`` built each of the run's trials (its transcript too) and then
its table and facts three times over (the headline, the reliability, the pass^k
curves): 40 s on a run of 200,000 trials. The trials still serve the transcripts and
per-task tables; the figures read the source's columns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import Cli

from agentgauge.agents.base import Session
from agentgauge.harness.runner import run
from agentgauge.report.build import ReportInputs, build_report, markdown_summary
from agentgauge.sources import TrialSource, open_source

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"


async def shaky(session: Session) -> None:
    """Passes most base trials, one too many on ``add-large`` trial 1; the fault
    variant breaks its only tool, so every trial there fails."""
    session.record_cost(0.001 * (session.trial or 0))
    amount = int(re.findall(r"-?\d+", session.instruction)[-1])
    if session.task_id == "add-large" and session.trial == 1:
        amount += 1
    await session.call_tool("add", {"amount": amount})
    await session.say(f"Added {amount}.")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("columns") / "s.db"
    run(
        str(SUITE),
        shaky,
        trials=3,
        variants=["base", "fault:tool_error@1.0"],
        store=str(db),
        run_id="r",
        progress=False,
    )
    return db


def _as_trials(src: TrialSource) -> TrialSource:
    """The same source holding its built trials only: the report builds the columns
    from them (the path every source took before)."""
    return TrialSource(
        label=src.label, trials=list(src.trials), run=src.run, tasks=src.tasks, grading=src.grading
    )


def _report(sources: list[TrialSource]) -> tuple[str, str]:
    data = build_report(ReportInputs(sources=sources, ks=(1, 2)))
    return repr(data), markdown_summary(data)


@pytest.mark.parametrize("version", [None, 1, 2])
def test_a_stored_run_reports_from_its_columns_what_its_trials_say(
    store: Path, cli: Cli, version: int | None
) -> None:
    if version is not None:  # a second grade version, active: version 1 is then not
        code, _, err = cli("grade", f"{store}:r", "--graders", "control", "--activate")
        assert code == 0 or "already" in err, err
    source = f"{store}:r"
    from_columns = _report([open_source(source, grade_version=version)])
    from_trials = _report([_as_trials(open_source(source, grade_version=version))])
    assert from_columns == from_trials
    assert "columns.shaky" in from_columns[1]  # a report, not two empty ones


def test_two_sources_of_one_suite_report_as_before(store: Path) -> None:
    # A suite of several sources (one system told apart by source) is measured on the
    # trials, renamed: the same figures whichever way each source was read.
    src = f"{store}:r"
    from_columns = _report([open_source(src), open_source(src)])
    from_trials = _report([_as_trials(open_source(src)), _as_trials(open_source(src))])
    assert from_columns == from_trials
