"""Running one cell: fresh environment, the agent under a timeout, a graded `Trial`.

Who is to blame when a trial does not finish (``error_kind``; docs/metrics.md,
"Infrastructure errors"):

============================================  ==========  ============
what happened                                 status      error_kind
============================================  ==========  ============
the agent raised (incl. malformed tool calls,  ``error``    ``agent``
protocol violations, too many steps, a
transcript past its budget, a number that
does not fit the store, and any
BaseException but the user's Ctrl-C, a
KeyboardInterrupt it raises included)
the timeout fired while no provider call was   ``timeout``  ``agent``
in flight (the agent hung), or the deadline
passed while an async agent blocked the loop
the timeout fired during a provider call or    ``timeout``  ``infra``
the wait before its retry (the provider was
slow, or said ``Retry-After``)
transient provider errors outlasted retries,   ``error``    ``infra``
the provider refused the request, or its
usage report does not fit the store
the environment failed: to build, in a tool     ``error``    ``infra``
call or user reply (whatever the agent did
next: `EnvironmentFailed`), or to export its
state
============================================  ==========  ============

Infra errors are excluded from success rates only when the user asks; agent
errors are always failures. Only completed trials are graded; the others are
recorded with success false and score 0, and those of a task with checkpoints get
the ``checkpoints`` grade of the turns they completed (`_grade_unfinished`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import ValidationError

from agentgauge.agents.base import Agent, TransientError
from agentgauge.agents.callable import running_trial
from agentgauge.agents.provider import InFlight, ProviderError, trial_in_flight
from agentgauge.envs.base import EnvFactory, Environment
from agentgauge.errors import InputError, first_error
from agentgauge.evidence import evidence_problem
from agentgauge.harness.blocking import OwnDeadline, StepClock, loop_ledger
from agentgauge.harness.cells import Cell
from agentgauge.harness.error_summary import cell_label
from agentgauge.harness.session import SessionOutcome, TrialSession
from agentgauge.harness.stopping import UserInterrupt
from agentgauge.schema import ControlDecision, Grade, Task, Trial, TrialStatus

if TYPE_CHECKING:
    from agentgauge.graders.base import Grader, TrialGrading
    from agentgauge.graders.judge_client import JudgeClient, JudgeConfig
    from agentgauge.graders.rubric import RubricJudge

__all__ = [
    "GRADE_OFF_LOOP_BYTES",
    "LOOP_HELD_KEY",
    "Scorer",
    "attempt_cell",
    "default_grader",
    "grade_with",
    "infra_error_trial",
    "run_cell",
    "state_grader",
    "taken_control",
    "uses_judges",
]

Scorer = Callable[[Task, Trial], tuple[bool, float, list[Grade]]]
"""How a finished trial gets its outcome: ``scorer(task, trial) -> (success, score,
grades)`` (the ``grader=`` option of `agentgauge.run`). Not a grader: graders
(`agentgauge.graders.Grader`) each judge one aspect; `default_grader` runs every
enabled one and combines their grades into the outcome."""

ErrorKind = Literal["infra", "agent"]


def default_grader(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
    """Every enabled code grader (`agentgauge.graders.grade_trial`: state, answer,
    tool calls, trajectory, milestones and minefields, control), combined by
    `grade_trial` (every required grader must pass, as tau2-bench's reward
    basis). A task that enables none is not evaluated: success false, with an
    ``unknown`` grade saying so."""
    from agentgauge.graders import grade_trial

    return _outcome(grade_trial(task, trial))


def _outcome(graded: TrialGrading) -> tuple[bool, float, list[Grade]]:
    if graded.success is None:
        note = Grade(grader="harness", passed=None, status="not_evaluated")
        return False, 0.0, [*graded.grades, note]
    score = graded.score if graded.score is not None else float(graded.success)
    return graded.success, score, graded.grades


class GradeWith:
    """A `Scorer` that grades with the graders named (`grade_with`)."""

    def __init__(self, graders: Sequence[str | Grader]) -> None:
        from agentgauge.graders import get_grader

        self.graders: tuple[Grader, ...] = tuple(
            get_grader(g) if isinstance(g, str) else g for g in graders
        )
        if not self.graders:
            raise InputError("grade_with: name at least one grader", field="grader")

    @property
    def version(self) -> str:
        """The graders' names, for the run's ``graders`` component."""
        return f"({', '.join(g.name for g in self.graders)})"

    def __call__(self, task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
        from agentgauge.graders import grade_trial

        return _outcome(grade_trial(task, trial, self.graders))


def grade_with(*graders: str | Grader) -> GradeWith:
    """A ``grader=`` for `agentgauge.run` that grades each finished trial with these
    graders, names or instances (`agentgauge.graders.grade_trial`), combined as
    `default_grader` combines the code graders. A model grader among them
    (``RubricGrader``, ``SemanticMatchGrader``, ``GroundednessGrader``, or one of your
    own with a ``judge`` or ``judges`` attribute) has its judge checked in the run's
    preflight, when a task of the suite enables it: a judge that cannot be reached stops
    the run before its first trial (docs/judge.md)."""
    return GradeWith(graders)


S = TypeVar("S", bound=Callable[..., Any])


def uses_judges(*judges: RubricJudge | JudgeClient | JudgeConfig) -> Callable[[S], S]:
    """Declare the model judges a ``grader=`` of your own calls, so the run checks them
    in its preflight as it checks `grade_with`'s: a judge that cannot be reached stops
    the run before its first trial (docs/judge.md, *Your own grader*)::

        judge = RubricJudge(JudgeConfig(base_url=..., model=...))

        @uses_judges(judge)
        def my_grader(task, trial): ...

    Adds them to the grader's ``judges`` attribute (an object may set that itself) and
    returns the grader unchanged. A judge the grader builds while it grades cannot be
    known before the trials, so is not checked unless declared so."""

    def declare(grader: S) -> S:
        known = list(getattr(grader, "judges", None) or ())
        grader.judges = (*known, *judges)  # type: ignore[attr-defined]
        return grader

    return declare


def state_grader(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
    """Final-state equality against ``task.expectations.final_state`` only (no grader
    package needed). Without an expected state the trial is not evaluated."""
    expected = task.expectations.final_state
    if expected is None:
        return False, 0.0, [Grade(grader="state", passed=None, status="not_evaluated")]
    actual = trial.final_state or {}
    if actual == expected:
        return True, 1.0, [Grade(grader="state", score=1.0, passed=True)]
    differing = sorted(k for k in set(expected) | set(actual) if expected.get(k) != actual.get(k))
    return False, 0.0, [Grade(grader="state", score=0.0, passed=False, evidence=differing)]


def taken_control(trial: Trial, task: Task) -> ControlDecision:
    """The trial's control decision as the control grader reads it
    (`agentgauge.graders.control.detect_control`: the first control event, a
    transfer call, a text cue before the first write, a write call...), so the
    recorded field and the grade never disagree."""
    from agentgauge.graders.control import detect_control

    return detect_control(trial, task).decision


async def run_cell(
    cell: Cell,
    agent: Agent,
    env_factory: EnvFactory,
    *,
    timeout: float | None,
    grader: Scorer | None,
    max_steps: int = 200,
) -> Trial:
    """Run one cell and return its graded trial; never raises for agent or provider faults."""
    task = cell.task
    start = time.monotonic()
    ledger = loop_ledger()
    status: TrialStatus = "completed"
    error: str | None = None
    kind: ErrorKind | None = None
    env: Environment | None = None
    outcome: SessionOutcome | None = None
    joined = ledger.unsettled
    try:
        env = env_factory(task, variant=cell.variant, seed=cell.seed)
        session = TrialSession(
            task.id,
            env,
            seed=cell.seed,
            max_steps=max_steps,
            virtual_time=bool(getattr(agent, "simulated", False)),
            trial=cell.trial,
            variant=cell.variant,
        )
    except Exception as exc:  # the world failed to build: not the agent's doing
        if env is not None:
            _close(env)
        return _finish(cell, agent, None, start, "error", _describe(exc), "infra", None)
    finally:  # building a world holds the loop too: others are not blamed for it
        ledger.record(cell, start, time.monotonic(), joined)
    deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
    steps: StepClock[None] | None = None
    try:
        with trial_in_flight() as in_flight, running_trial(cell_label(*cell.key)):
            # The deadline is on the trial's own clock (`OwnDeadline`): another
            # agent's stall of the loop is not this trial's time.
            scope = asyncio.timeout(None)
            try:
                steps = StepClock(agent(session), deadline, ledger=ledger, owner=cell)
                watch = OwnDeadline(scope, steps)
                async with scope:
                    watch.start()
                    try:
                        await steps
                    finally:
                        watch.stop()
                if steps.overran_s is not None:  # finished late, in the step that held the loop
                    status, error, kind = _timed_out(timeout, agent, steps, in_flight)
            except TimeoutError as exc:
                if not scope.expired():
                    status, error, kind = "error", _describe(exc), "agent"
                else:
                    status, error, kind = _timed_out(timeout, agent, steps, in_flight)
            except (TransientError, ProviderError) as exc:
                status, error, kind = "error", _describe(exc), "infra"
            except asyncio.CancelledError as exc:
                if _cancelled_by_runner():
                    raise  # Ctrl-C: the cell stays missing and a resume runs it
                status, error, kind = "error", _describe(exc), "agent"
            except UserInterrupt:
                raise  # the user's second Ctrl-C (`agentgauge.harness.stopping`)
            except BaseException as exc:  # everything else the agent raised is its failure,
                # SystemExit, GeneratorExit, a KeyboardInterrupt of its own and other
                # BaseException subclasses included
                status, error, kind = "error", _describe(exc), "agent"
        if session.env_failure is not None:
            # The world failed under the agent: whatever the agent made of it (raised,
            # caught it and finished, ran out of time), the trial measured the
            # environment, not the agent.
            status, error, kind = "error", _describe(session.env_failure), "infra"
        try:
            outcome = session.outcome(with_state=True)
        except Exception as exc:
            outcome = session.outcome(with_state=False)
            if status == "completed":
                status, error, kind = "error", "final state: " + _describe(exc), "infra"
    finally:
        _close(env)
    after = time.monotonic()
    joined = ledger.unsettled
    held = 0.0 if steps is None else round(steps.credited, 6)
    trial = _finish(cell, agent, outcome, start, status, error, kind, _held_metadata(held))
    # The record's status, not the session's: a value the record refused made a
    # completed session an error (`_refused`), and an error is not graded (a passing
    # answer check once made it an infra error with success true).
    completed = trial.status == "completed"
    # An unfinished trial is graded only on the turns it completed, and only by the
    # default grading, of which that is a part (a scorer of one's own grades what it
    # grades); its outcome stays a failure.
    grade: Callable[[Task, Trial, Scorer | None], None] | None = (
        _grade if completed else _grade_unfinished if grader is default_grader else None
    )
    large = session.transcript_bytes >= GRADE_OFF_LOOP_BYTES
    if grade is not None and not large:
        grade(task, trial, grader)  # a thread's hand-off would cost more than this
    ledger.record(cell, after, time.monotonic(), joined)  # others are not blamed for it
    if grade is not None and large:
        # Grading megabytes of text takes a while: in a worker thread, so that the
        # loop, and every other trial, goes on meanwhile.
        await asyncio.to_thread(grade, task, trial, grader)
    return trial


#: Bytes of transcript text from which a trial is graded in a worker thread, off the
#: event loop; smaller ones are graded on it, in well under a millisecond.
GRADE_OFF_LOOP_BYTES = 1_000_000


def _held_metadata(held: float) -> dict[str, Any] | None:
    """The loop held by others' stalls while the trial waited (its latency is then
    unknown: `_finish`)."""
    return {LOOP_HELD_KEY: held} if held > 0 else None


#: Metadata key of the seconds other trials held the event loop while this trial
#: waited (`agentgauge.harness.blocking`): moved out of its deadline, and its
#: ``latency_s`` left unknown.
LOOP_HELD_KEY = "loop_held_by_others_s"


def _grade(task: Task, trial: Trial, grader: Scorer | None) -> None:
    """The control decision taken and the grades of a completed ``trial`` (in place).
    Neither can lose the trial: a failure leaves the decision unknown, or records a
    ``grader_error`` grade."""
    try:
        trial.control = taken_control(trial, task)
    except Exception:  # the control grader says what went wrong, below
        trial.control = None
    if grader is None:
        return
    try:
        success, score, grades = grader(task, trial)
    except Exception as exc:  # a grader bug must not lose the transcript
        # Named, so the run's summary can say which grader to fix: the registered one
        # that raised inside `default_grader`, else the scorer given as grader=.
        from agentgauge.graders.base import raising_grader

        name = raising_grader(exc) or getattr(grader, "__name__", None) or type(grader).__name__
        why = f"grader {name!r} raised {_describe(exc)}"
        trial.grades = [Grade(grader="harness", passed=None, status="grader_error", evidence=why)]
        return
    grades = list(grades)
    for g in grades:
        # Evidence the metrics cannot read (a severity of 5, more unconfirmed calls than
        # irreversible ones) is a grader bug too: stored, it would be left out of the
        # metrics, and refused by an import of the run's export. The trial stays
        # ungraded, as above.
        name = getattr(g, "grader", None)
        if (
            isinstance(name, str)
            and (problem := evidence_problem(name, getattr(g, "evidence", None))) is not None
        ):
            why = (
                f"grader {name!r} recorded evidence.{problem[0]}: {problem[1]} "
                '(docs/graders.md, "Evidence the metrics read")'
            )
            trial.grades = [
                Grade(grader="harness", passed=None, status="grader_error", evidence=why)
            ]
            return
    trial.success, trial.score, trial.grades = bool(success), float(score), grades


def _grade_unfinished(task: Task, trial: Trial, _grader: Scorer | None) -> None:
    """The ``checkpoints`` grade of a trial that ended in an error or a timeout, on the
    turns it completed (`agentgauge.graders.checkpoints.grade_unfinished`), in place;
    its success and score stay False and 0. A grader that raises, or records evidence
    the metrics cannot read, leaves a ``grader_error`` grade instead, as in `_grade`."""
    from agentgauge.graders.checkpoints import grade_unfinished

    try:
        grade = grade_unfinished(task, trial)
    except Exception as exc:  # a grader bug must not lose the transcript
        why = f"grader 'checkpoints' raised {_describe(exc)}"
        trial.grades = [Grade(grader="harness", passed=None, status="grader_error", evidence=why)]
        return
    if grade is None:
        return
    if (problem := evidence_problem(grade.grader, grade.evidence)) is not None:
        why = (
            f"grader {grade.grader!r} recorded evidence.{problem[0]}: {problem[1]} "
            '(docs/graders.md, "Evidence the metrics read")'
        )
        trial.grades = [Grade(grader="harness", passed=None, status="grader_error", evidence=why)]
        return
    trial.grades = [grade]


async def attempt_cell(
    cell: Cell,
    agent: Agent,
    env_factory: EnvFactory,
    *,
    timeout: float | None,
    grader: Scorer | None,
    infra_retries: int,
    stopped: Callable[[], bool] = lambda: False,
) -> Trial:
    """`run_cell`, re-run (fresh environment, same seed) while it ends in an infra error,
    at most ``infra_retries`` more times and not once ``stopped()``; a trial that took
    more than one attempt says how many in ``metadata["attempts"]``."""
    trial = await run_cell(cell, agent, env_factory, timeout=timeout, grader=grader)
    attempt = 1
    while trial.is_infra_error and attempt <= infra_retries and not stopped():
        attempt += 1
        trial = await run_cell(cell, agent, env_factory, timeout=timeout, grader=grader)
    if attempt > 1:
        trial.metadata["attempts"] = attempt
    return trial


def infra_error_trial(cell: Cell, agent: Agent, error: str, *, started: float) -> Trial:
    """The record of a cell whose trial never came back, through no fault of the agent
    (the process running it died): status ``error``, kind ``infra``, no transcript,
    ``latency_s`` from ``started`` (`time.monotonic`) — as for a world that failed to build."""
    return _finish(cell, agent, None, started, "error", error, "infra", None)


def _timed_out(
    timeout: float | None, agent: Agent, steps: StepClock[None] | None, in_flight: InFlight
) -> tuple[TrialStatus, str, ErrorKind]:
    """Whose timeout it was: the agent's when it held the event loop as the deadline
    passed or when no provider call was in flight (it hung); the provider's when the
    deadline came during a request or a wait before a retry."""
    if steps is not None and steps.overran_s is not None:
        return (
            "timeout",
            f"timed out after {timeout}s in the agent: {agent.name} blocked the event loop "
            f"for {steps.overran_s:.1f}s (blocking code in an async def; "
            "docs/running-agents.md, Timeouts)",
            "agent",
        )
    if in_flight.count > 0 or in_flight.interrupted:
        return "timeout", f"timed out after {timeout}s in a provider call", "infra"
    return "timeout", f"timed out after {timeout}s in the agent", "agent"


def _finish(
    cell: Cell,
    agent: Agent,
    outcome: SessionOutcome | None,
    start: float,
    status: TrialStatus,
    error: str | None,
    kind: ErrorKind | None,
    metadata: dict[str, Any] | None,
) -> Trial:
    """The trial's record. It cannot take the run down: a value the record refuses
    (the session checks what the agent reports where it comes in; this is the last
    line) is left out, named in the trial's error, and the rest is kept."""
    task = cell.task
    fields: dict[str, Any] = {}
    if outcome is not None:
        fields = {
            "events": outcome.events,
            "answer": outcome.answer,
            "final_state": outcome.final_state,
            "tool_calls": outcome.tool_calls,
            "model_calls": outcome.model_calls,
            "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens,
            "cost_usd": outcome.cost_usd,
            "confidence": outcome.confidence,
            "turns": outcome.turns,
        }
        metadata = {**outcome.metadata, **(metadata or {})}
    record: dict[str, Any] = {
        "task_id": task.id,
        "trial": cell.trial,
        "variant": cell.variant,
        "agent": agent.name,
        "model": agent.model,
        "success": False,
        "score": 0.0,
        "status": status,
        "error": error,
        "error_kind": kind,
        "family": task.family,
        "split": task.split,
        "capability": task.capability,
        "human_minutes": task.human_minutes,
        "expected_control": task.expectations.control,
        "latency_s": (
            outcome.elapsed_s
            if outcome is not None and outcome.elapsed_s is not None
            # Held up by another trial's stall: its own wait ended somewhere inside
            # the stall, and the loop cannot say where, so its latency is unknown
            # (a 0.3 s wait inside a 3 s stall read as about 0 s, or as 3 s).
            else None
            if metadata and LOOP_HELD_KEY in metadata
            else time.monotonic() - start
        ),
        "seed": cell.seed,
        "metadata": metadata or {},
        **fields,
    }
    reason = ""
    for _ in range(len(record)):
        try:
            return Trial(**record)
        except Exception as exc:  # whatever it is, the trial is recorded
            where, reason = (
                first_error(exc, metadata_hint=False)
                if isinstance(exc, ValidationError)
                else (None, _describe(exc))
            )
            name = (where or "").split(".")[0]
            if name not in _DROPPABLE or name not in record:
                break  # not one of the outcome's values: recorded without any (below)
            record[name] = [] if name == "events" else {} if name == "metadata" else None
            record = _refused(record, f"the trial record refused {where}: {reason}", name)
    # Last resort: the cell, the agent's name and the error, nothing the agent reported.
    message = f"the trial record could not be made: {reason}"
    return Trial(
        task_id=task.id,
        trial=cell.trial,
        variant=cell.variant,
        agent=str(agent.name),
        model=agent.model if isinstance(agent.model, str) else None,
        success=False,
        score=0.0,
        status="error",
        error=message if error is None else f"{error}; {message}",
        error_kind=kind or "infra",
        seed=cell.seed,
    )


#: Values of a trial record that come from the agent or its environment, which the
#: record may refuse (`_finish`); the environment's are those of `_FROM_ENVIRONMENT`.
_DROPPABLE = frozenset(
    {
        "events",
        "answer",
        "final_state",
        "tool_calls",
        "model_calls",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "confidence",
        "turns",
        "metadata",
    }
)
_FROM_ENVIRONMENT = frozenset({"final_state", "turns"})


def _refused(record: dict[str, Any], message: str, name: str) -> dict[str, Any]:
    """``record`` as the error it now is: a completed trial becomes an error (the
    environment's, when the refused value is its state; else the agent's), and an
    error it already had keeps its class, with the refusal added to its message."""
    if record["status"] == "completed":
        kind = "infra" if name in _FROM_ENVIRONMENT else "agent"
        return {**record, "status": "error", "error": message, "error_kind": kind}
    return {**record, "error": f"{record['error']}; {message}"}


def _cancelled_by_runner() -> bool:
    """Whether this task has a cancellation pending: the runner's (Ctrl-C) or an
    enclosing timeout's. An agent that raises `asyncio.CancelledError` itself
    leaves none (``Task.cancelling()`` counts ``cancel()`` requests not yet
    taken back), and its trial is recorded as its error."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _close(env: Environment | None) -> None:
    if env is None:
        return
    with contextlib.suppress(Exception):  # best effort; the trial is recorded anyway
        env.close()
