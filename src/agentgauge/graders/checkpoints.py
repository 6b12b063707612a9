"""The checkpoints grader: every user turn checked when the agent hands it back
(BFCL V3 multi-turn, Mao et al. 2024; docs/graders.md, "`checkpoints`").

BFCL checks a multi-turn entry after every turn twice: the *state check*
compares the backend's state with the ground truth's, which admits any route
that reaches it; the *response check* requires the turn's calls to contain the
minimal viable execution path, which catches a call that leaves no mark on the
state (a lookup whose answer the agent then makes up). The entry passes only if
both hold in every turn. Here a task declares one `Checkpoint` per user turn:

- the state half compares the state recorded when the turn ended with the
  checkpoint's tables (each named table equal, by the ``state`` grader's
  comparison) and its assertions (the ``state`` grader's rules);
- the call half requires the turn's calls to contain the checkpoint's calls, as
  a subsequence (``in_order``) or a multiset (``any_order``), with the
  ``trajectory`` grader's argument rules (default ``ast``).

Turns come from the trial's turn record (`agentgauge.turns`). A checkpoint whose
turn never came (the conversation ended before it) fails; a state half without a
recorded state (an imported trial) is unknown, never a pass or a fail from
nothing; without any turn record the whole grade is unknown.

A trial that ended in an error or a timeout (`grade_unfinished`) is checked on the
turns it completed, those it handed back, as any other; the turn it ended in fails
(``checkpoint:unfinished``), and so do the turns after it, never reached
(``checkpoint:turn_missing``): the success rate counts the trial as a failure, and
the per-turn rates follow it (docs/metrics.md, "Pass rate per user turn").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgauge.graders.base import fail, pass_, register, unknown
from agentgauge.graders.state import failed_assertions, mismatch
from agentgauge.graders.trajectory import Call, as_written, call_matcher, unmatched_reference
from agentgauge.schema import Checkpoint, Grade, Task, Trial
from agentgauge.turns import Turn, TurnRecordError, turns_of

__all__ = ["UNFINISHED", "CheckpointsGrader", "check_checkpoint", "grade_unfinished"]

#: The status of the checkpoint of the turn a trial ended in by an error or a timeout.
UNFINISHED = "checkpoint:unfinished"


def _state_half(cp: Checkpoint, turn: Turn) -> tuple[bool | None, dict[str, Any] | None]:
    if cp.state is None and not cp.state_assertions:
        return True, None
    if turn.state is None:
        return None, {"recorded": False}
    evidence: dict[str, Any] = {"recorded": True}
    if cp.state is not None:
        # Only the tables the checkpoint names are compared; one missing from the
        # trial's state shows as a differing path.
        seen = {k: turn.state[k] for k in cp.state if k in turn.state}
        evidence.update(mismatch(cp.state, seen))
    failed = failed_assertions(turn.state, cp.state_assertions)
    if cp.state_assertions:
        evidence["failed"] = failed
        evidence["n_assertions"] = len(cp.state_assertions)
    held = not evidence.get("n_differences") and not failed
    return held, evidence


def _call_half(
    cp: Checkpoint, turn: Turn, functions: Sequence[dict[str, Any]], written: bool
) -> tuple[bool, dict[str, Any] | None]:
    if not cp.calls:
        return True, None
    match = call_matcher(cp.arguments, functions, written=written)
    ref: list[Call] = [(c.name, c.arguments) for c in cp.calls]
    actual: list[Call] = [(c.name, c.arguments) for c in turn.calls]
    missing = unmatched_reference(actual, ref, cp.mode, match)
    evidence = {
        "mode": cp.mode,
        "arguments": cp.arguments,
        "n_actual": len(actual),
        "n_reference": len(ref),
        "missing": [{"name": ref[j][0], "arguments": dict(ref[j][1])} for j in missing],
    }
    return not missing, evidence


def check_checkpoint(
    cp: Checkpoint,
    index: int,
    turn: Turn | None,
    functions: Sequence[dict[str, Any]] = (),
    *,
    written: bool = False,
) -> dict[str, Any]:
    """One checkpoint's verdict with its evidence: ``{turn, verdict, status, events,
    state, calls}``; ``verdict`` is ``pass``, ``fail`` or ``unknown``. ``written``: the
    checkpoint's calls are run as written (`agentgauge.graders.trajectory.AS_WRITTEN`)."""
    if turn is None:
        return {
            "turn": index,
            "verdict": "fail",
            "status": "checkpoint:turn_missing",
            "events": None,
            "state": None,
            "calls": None,
        }
    state_ok, state_ev = _state_half(cp, turn)
    calls_ok, calls_ev = _call_half(cp, turn, functions, written)
    if state_ok is False:
        verdict, status = "fail", "checkpoint:state"
    elif not calls_ok:
        verdict, status = "fail", "checkpoint:calls"
    elif state_ok is None:
        verdict, status = "unknown", "unknown:no_state_snapshot"
    else:
        verdict, status = "pass", "passed"
    return {
        "turn": index,
        "verdict": verdict,
        "status": status,
        "events": [turn.start, turn.end],
        "state": state_ev,
        "calls": calls_ev,
    }


def _unfinished(index: int, turn: Turn, status: str) -> dict[str, Any]:
    """The checkpoint of the turn a trial ended in by an error or a timeout (its
    ``status``): failed, whatever the turn did before it ended (it was never handed
    back)."""
    return {
        "turn": index,
        "verdict": "fail",
        "status": UNFINISHED,
        "ended": status,
        "events": [turn.start, turn.end],
        "state": None,
        "calls": None,
    }


@register("checkpoints")
class CheckpointsGrader:
    """Every checkpoint holds at the end of its user turn."""

    name = "checkpoints"
    kind = "code"

    def enabled(self, task: Task) -> bool:
        return bool(task.expectations.checkpoints)

    def grade(self, task: Task, trial: Trial) -> Grade:
        checkpoints = task.expectations.checkpoints
        try:
            turns = turns_of(trial)
        except TurnRecordError as exc:
            return unknown(self.name, "bad_turn_record", {"reason": str(exc)})
        if turns is None:
            return unknown(
                self.name,
                "no_turn_record",
                {"reason": "the trial recorded no turn boundaries (imported, or older)"},
            )
        # A trial the success rate counts as failed by its error (`Trial.passed`: an
        # imported one whose record says it passed keeps that) did not finish its last
        # recorded turn: the turns before it are those it handed back.
        ended = len(turns) if trial.status != "completed" and not trial.passed else None
        results = [
            _unfinished(i + 1, turns[i], trial.status) if ended is not None and i + 1 == ended
            else check_checkpoint(cp, i + 1, turns[i] if i < len(turns) else None,
                                  task.expectations.functions, written=as_written(task))
            for i, cp in enumerate(checkpoints)
        ]  # fmt: skip
        held = sum(r["verdict"] == "pass" for r in results)
        evidence: dict[str, Any] = {
            "n_checkpoints": len(checkpoints),
            "n_turns": len(turns),
            "held": held,
            "checkpoints": results,
        }
        if ended is not None:
            evidence["ended_in_turn"] = ended
        failed = [r for r in results if r["verdict"] == "fail"]
        if failed:
            return fail(self.name, failed[0]["status"], evidence, score=held / len(results))
        if held < len(results):
            return unknown(self.name, "no_state_snapshot", evidence)
        return pass_(self.name, evidence=evidence)


def grade_unfinished(task: Task, trial: Trial) -> Grade | None:
    """The ``checkpoints`` grade of a trial that ended in an error or a timeout, which
    no other grader grades (an empty transcript must not pass a "do nothing" check):
    its checkpoints decided on the turns it handed back, failed from the turn it
    ended in (`CheckpointsGrader`). ``None`` when its task declares no checkpoints or
    its turn record is missing or malformed: nothing then says how far it got, and
    the per-turn rates count it as unknown at every turn (``n_ungraded``).

    What `agentgauge run` records for such a trial and `agentgauge grade` writes
    again, so that a re-grade gives what the run gave."""
    grader = CheckpointsGrader()
    if trial.status == "completed" or not grader.enabled(task):
        return None
    grade = grader.grade(task, trial)
    if not isinstance(grade.evidence, dict) or "checkpoints" not in grade.evidence:
        return None  # unknown as a whole: no turn record to read
    return grade
