"""Graders (docs/graders.md): code graders for state, answer, tool calls (BFCL AST
matching), executable calls (BFCL's executable checks), trajectories, milestones and
minefields, control decisions, and the answer's ROUGE-1 against a reference (ADK).

Each grader has one entry point, ``grade(task, trial) -> Grade``, and registers
by name (`register`); `grade_trial` combines a trial's grades into its success
and score; `regrade` re-grades a stored run as a new grade version.
"""

from agentgauge.graders.ast import ast_match
from agentgauge.graders.base import (
    DEFAULT_REQUIRED,
    Grader,
    TrialGrading,
    available_graders,
    decides_outcome,
    get_grader,
    grade_trial,
    grader_name_defect,
    register,
)
from agentgauge.graders.regrade import RegradeResult, regrade

__all__ = [
    "DEFAULT_REQUIRED",
    "Grader",
    "RegradeResult",
    "TrialGrading",
    "ast_match",
    "available_graders",
    "decides_outcome",
    "get_grader",
    "grade_trial",
    "grader_name_defect",
    "register",
    "regrade",
]
