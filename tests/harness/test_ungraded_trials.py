"""Trials no grader judged failed, yet stored as failures: a grader that raised, a
required grade that was unknown. The end of ``agentgauge run`` says how many, why,
and how to re-grade ("success 0.0%, no errors" read as the agent failing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentgauge.harness.error_summary import summarize_ungraded
from agentgauge.store import Store

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"

GRADERS = """
from agentgauge.graders import register
from agentgauge.testing.worlds import counting_agent

@register("flaky")
class Flaky:
    name = "flaky"
    kind = "code"

    def enabled(self, task):
        return True

    def grade(self, task, trial):
        raise KeyError("oops")
"""

CALLER = """
async def converter(session):
    await session.call_tool("convert_length", {"value": 5, "from_unit": "km", "to_unit": "mi"})
"""

# A module that is found (the suite loads) but lacks the function: the executable
# grade is unknown:callable not found, and the task requires it.
FUNCTIONS = """
name: fn
tasks:
  - id: km
    environment: functions
    instruction: How many miles is 5 kilometres?
    expectations:
      functions:
        - name: convert_length
          description: Convert a length.
          parameters:
            type: object
            properties:
              value: {type: number}
              from_unit: {type: string}
              to_unit: {type: string}
            required: [value, from_unit, to_unit]
      answer_key: [{convert_length: {value: [5], from_unit: ["km"], to_unit: ["mi"]}}]
      call_category: simple
      executable: {functions: {convert_length: "units:absent"}, expected: [3.10686]}
      required: [executable]
"""


def agentgauge(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "flaky_graders.py").write_text(GRADERS)
    (tmp_path / "caller.py").write_text(CALLER)
    (tmp_path / "units.py").write_text("def convert_length(value, from_unit, to_unit):\n    1\n")
    path = os.pathsep.join([str(tmp_path), str(ROOT / "src")])
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},
        cwd=tmp_path,
    )


def test_a_grader_that_raises_is_named_with_the_command_that_regrades(tmp_path: Path) -> None:
    out = agentgauge(tmp_path, "run", str(SUITE), "--agent", "flaky_graders:counting_agent",
                     "--store", "s.db", "--run-id", "r", "--trials", "2")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "6 trials could not be graded"
    assert lines[1].startswith("      6 x grader 'flaky' raised KeyError: 'oops'  (e.g. ")
    assert lines[2] == (
        "  they count as failures; fix the grader and re-grade with: "
        "agentgauge grade s.db:r --activate"
    )
    assert "run r in s.db: 6 trials, success 0.0%, no errors" in lines[3]
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials = db.trials("r")
    assert all(t.status == "completed" and not t.success for t in trials)
    # The command given re-grades them (the grade process does not import the broken
    # grader): the new version is what the run reports.
    regraded = agentgauge(tmp_path, "grade", "s.db:r", "--activate")
    assert regraded.returncode == 0, regraded.stderr
    again = agentgauge(tmp_path, "run", str(SUITE), "--agent", "flaky_graders:counting_agent",
                       "--store", "s.db", "--run-id", "r", "--trials", "2")  # fmt: skip
    assert "6 trials, success 100.0%" in again.stdout
    assert "could not be graded" not in again.stdout


def test_a_required_grade_that_is_unknown_is_said_as_the_cause(tmp_path: Path) -> None:
    (tmp_path / "fn.yaml").write_text(FUNCTIONS)
    out = agentgauge(tmp_path, "run", "fn.yaml", "--agent", "caller:converter",
                     "--store", "s.db", "--run-id", "f", "--trials", "3")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == [
        "3 trials counted as failures because a required grade was unknown",
        "      3 x executable unknown:callable not found  (e.g. km trial 0)",
        '  they count as failures (docs/graders.md, "Success and score of a trial")',
    ]
    assert "run f in s.db: 3 trials, success 0.0%, no errors" in lines[3]
    assert "could not be graded" not in out.stdout
    # A trial that failed a required grade is the agent's failure, not an unknown one.
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials, tasks = db.trials("f"), {t.id: t for t in db.get_tasks("f")}
    failed = trials[0].model_copy(deep=True)
    failed.grades = [
        g.model_copy(update={"passed": False}) if g.grader == "executable" else g
        for g in failed.grades
    ]
    raised, unknown = summarize_ungraded([*trials, failed], tasks)
    assert raised is None and unknown is not None and unknown.count == 3
