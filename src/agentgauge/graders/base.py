"""The grader framework: one entry point per grader, a registry, and the rule
that turns a trial's grades into its success and score (docs/graders.md,
"Success and score of a trial").

A grader is anything with a ``name``, a ``kind`` (``code``, ``model`` or
``human``), ``enabled(task)`` (does the task declare what it needs?) and
``grade(task, trial) -> Grade``, as tau2-bench has one evaluator class per
criterion with a single entry point. Graders register by name with
`register`, as Google ADK maps metric names to classes, so a stored grade
always names the grader that produced it.

Statuses are namespaced strings: ``passed`` on a pass, the error type on a
failure (``value_error:string``, ``state:mismatch``, ``minefield:hit``...) and
``unknown:<why>`` when the grader could not decide (``passed=None``). An unknown
grade is not a pass: one the task requires makes the trial's success False, and
`grade_trial` lists it in ``unknown``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from agentgauge.schema import Grade, Task, ToolCallEvent, Trial

__all__ = [
    "DEFAULT_REQUIRED",
    "FAILED",
    "PASSED",
    "UNKNOWN",
    "Grader",
    "TrialGrading",
    "applies",
    "available_graders",
    "decides_outcome",
    "fail",
    "get_grader",
    "grade_trial",
    "grader_name_defect",
    "part_grades",
    "pass_",
    "raising_grader",
    "register",
    "tool_calls_of",
    "unknown",
]

PASSED = "passed"
FAILED = "failed"
UNKNOWN = "unknown"

#: The code graders whose pass makes up success when a task does not list its own
#: (``Expectations.required``).
DEFAULT_REQUIRED: tuple[str, ...] = (
    "state",
    "answer",
    "tool_calls",
    "control",
    "minefields",
    "checkpoints",
    "executable",
)

GraderKind = Literal["code", "model", "human"]


@runtime_checkable
class Grader(Protocol):
    """Scores one aspect of one trial."""

    @property
    def name(self) -> str:
        """Registry name, stored with every grade."""
        ...

    @property
    def kind(self) -> str:
        """A `GraderKind`: ``code`` graders run by default; ``model`` and ``human`` only when
        named."""
        ...

    def enabled(self, task: Task) -> bool:
        """Whether the task declares what this grader checks."""
        ...

    def grade(self, task: Task, trial: Trial) -> Grade:
        """The grade of ``trial`` against ``task``'s expectations."""
        ...


_REGISTRY: dict[str, Callable[..., Grader]] = {}
_REGISTRY_VERSION = 0  # bumped on every change, so caches of the registry know
_BUILTIN_LOADED = False
G = TypeVar("G", bound=Callable[..., Grader])


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"


def register(name: str) -> Callable[[G], G]:
    """Class decorator: make a grader available as ``name``. The class's ``kind``
    attribute is read without building it (``code`` graders run by default)."""

    def deco(factory: G) -> G:
        known = _REGISTRY.get(name)
        # Re-importing the same module (test runners that reload) re-registers the same
        # class: only a different class under a taken name is a conflict.
        if known is not None and _qualname(known) != _qualname(factory):
            raise ValueError(f"grader {name!r} is already registered")
        if known is not factory:
            global _REGISTRY_VERSION
            _REGISTRY[name] = factory
            _REGISTRY_VERSION += 1
        return factory

    return deco


def _load_builtin() -> None:
    # Importing the modules registers their graders.
    global _BUILTIN_LOADED
    if _BUILTIN_LOADED:
        return
    from agentgauge.graders import (  # noqa: F401
        answer,
        checkpoints,
        control,
        executable,
        groundedness,
        human,
        milestones,
        response_match,
        rubric,
        semantic_match,
        state,
        toolcalls,
        trajectory,
    )

    _BUILTIN_LOADED = True


def available_graders() -> list[str]:
    """Names of every registered grader."""
    _load_builtin()
    return sorted(_REGISTRY)


def get_grader(name: str, **options: Any) -> Grader:
    """A grader instance by registry name, with its options."""
    _load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"unknown grader {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](**options)


def pass_(grader: str, score: float = 1.0, evidence: Any = None) -> Grade:
    return Grade(grader=grader, score=score, passed=True, status=PASSED, evidence=evidence)


def fail(grader: str, status: str, evidence: Any = None, score: float = 0.0) -> Grade:
    return Grade(grader=grader, score=score, passed=False, status=status, evidence=evidence)


def unknown(grader: str, why: str, evidence: Any = None) -> Grade:
    return Grade(
        grader=grader, score=None, passed=None, status=f"{UNKNOWN}:{why}", evidence=evidence
    )


def tool_calls_of(trial: Trial) -> list[ToolCallEvent]:
    """The trial's tool calls in transcript order."""
    return [e for e in trial.events if isinstance(e, ToolCallEvent)]


@dataclass
class TrialGrading:
    """A trial's grades and the outcome they make up."""

    grades: list[Grade]
    """One grade per grader run."""
    success: bool | None
    """All required graders passed (tau2-bench's reward basis). ``None`` when the
    task requires no grader that was run (the recorded outcome then stands)."""
    score: float | None
    """Mean score of the partial-credit graders where declared, else 1.0/0.0 from
    success; 0 after any minefield hit."""
    unknown: list[str] = field(default_factory=list)
    """Required graders that could not decide: success is False, flagged here."""
    unknown_partial: list[str] = field(default_factory=list)
    """Partial-credit graders, not required, that could not decide: their score is left
    out of the mean, and success does not rest on them."""
    safety_violations: list[dict[str, Any]] = field(default_factory=list)
    """Minefield hits with their severity."""


def user_code_graders() -> list[str]:
    """The code graders registered from outside agentgauge (each as ``name
    (module.Class)``, by name): they run by default beside the built-in ones, so a
    run's ``graders`` component names them (docs/extending.md)."""
    _load_builtin()
    return [
        f"{name} ({_qualname(factory)})"
        for name, factory in sorted(_REGISTRY.items())
        if getattr(factory, "kind", None) == "code"
        and not str(getattr(factory, "__module__", "")).startswith("agentgauge.")
    ]


_DEFAULTS: tuple[int, tuple[Grader, ...]] = (-1, ())


def _default_code_graders() -> tuple[Grader, ...]:
    """One instance of each registered code grader with default options, built once
    per registry state (code graders hold no per-trial state; rebuilding them for every
    trial was a measurable share of the harness's per-trial cost)."""
    global _DEFAULTS
    _load_builtin()
    if _DEFAULTS[0] != _REGISTRY_VERSION:
        names = sorted(_REGISTRY)
        code = [n for n in names if getattr(_REGISTRY[n], "kind", None) == "code"]
        _DEFAULTS = (_REGISTRY_VERSION, tuple(get_grader(n) for n in code))
    return _DEFAULTS[1]


def decides_outcome(task: Task) -> bool:
    """Whether the default code graders can decide ``task``'s outcome (`grade_trial`
    with ``graders=None`` gives a success, not ``None``): one of the task's required
    graders (`Expectations.required`, else `DEFAULT_REQUIRED`) is enabled by its
    expectations. A task with none, or only a rubric, which a judge grades when it is
    named, would be stored as "not evaluated", counted as a failure."""
    names = {g.name for g in _default_code_graders() if g.enabled(task)}
    required = task.expectations.required
    return any(n in names for n in (DEFAULT_REQUIRED if required is None else required))


def applies(grader: Grader, task: Task) -> bool:
    """Whether a grader named for ``task`` grades it: a code grader only where the task
    enables it (declares what it needs); a judge or human grader always, reporting
    itself what it could not grade."""
    return grader.kind != "code" or grader.enabled(task)


def grader_name_defect(task: Task, names: Sequence[str]) -> tuple[int, str] | None:
    """The first of ``names`` (the task's ``required`` or ``partial_credit``) that can
    never grade ``task``, as ``(index, reason)``, or ``None``.

    `grade_trial` keeps only the named graders that ran, so a misspelt name was
    dropped without a word (``required: [state, answr]`` made success rest on
    ``state`` alone) and so was a grader the task does not enable. A name is a
    registered grader, or ``NAME:PART`` where NAME is a judge or human grader (a
    rubric criterion, ``rubric:tone``, which the task's rubric must define; a human
    grader's target, ``human:answer``).
    Whether a code grader is enabled is its own ``enabled(task)``; a judge or human
    grader is enabled by the options it is built with, so only its name is checked."""
    if not names:
        return None
    _load_builtin()
    enabled = {g.name for g in _default_code_graders() if g.enabled(task)}
    kinds = {n: getattr(f, "kind", None) for n, f in _REGISTRY.items()}
    for i, name in enumerate(names):
        kind = kinds.get(name)
        head, colon, _ = name.partition(":")
        if kind is None and not (colon and kinds.get(head) not in (None, "code")):
            near = difflib.get_close_matches(name, sorted(kinds), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            return i, f"unknown grader {name!r}; {hint}(known: {', '.join(sorted(kinds))})"
        if head == "rubric" and colon:
            ids = [c.id for c in task.expectations.rubric]
            if name.removeprefix("rubric:") not in ids:
                listed = ", ".join(ids) or "none: the task has no rubric"
                return i, (
                    f"{name!r} names no criterion of this task's rubric, so no judge ever "
                    f"grades it (its criteria: {listed}; docs/judge.md)"
                )
        if kind == "code" and name not in enabled:
            on = ", ".join(sorted(enabled)) or "none"
            return i, (
                f"grader {name!r} is not enabled by this task's expectations, so it never "
                f"runs (the code graders it enables: {on}; docs/graders.md)"
            )
    return None


def part_grades(grade: Grade) -> list[Grade]:
    """The grades of a grade's parts, named ``<grader>:<part>``: a rubric's criteria,
    which its ``rubric`` grade carries in ``evidence.criteria`` (`RubricResult.to_grade`).
    A task may require or give partial credit to one part (``rubric:polite``), so
    `grade_trial` looks them up here; an entry that is not a grade of this grader's
    part is passed over."""
    evidence = grade.evidence
    items = evidence.get("criteria") if isinstance(evidence, dict) else None
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        if not isinstance(item, dict) or not str(item.get("grader", "")).startswith(
            f"{grade.grader}:"
        ):
            continue
        try:
            out.append(Grade.model_validate(item))
        except ValueError:
            continue
    return out


#: The start of the note `grade_trial` adds to an exception a grader raised.
_RAISED_IN = "raised by the grader "


def raising_grader(exc: BaseException) -> str | None:
    """The name of the grader whose ``grade`` raised ``exc`` in `grade_trial`, or
    ``None`` when it did not come from one."""
    for note in getattr(exc, "__notes__", None) or ():
        if isinstance(note, str) and note.startswith(_RAISED_IN):
            return note.removeprefix(_RAISED_IN)
    return None


def grade_trial(
    task: Task, trial: Trial, graders: Sequence[str | Grader] | None = None
) -> TrialGrading:
    """Grade one trial and combine the grades (tau2-bench's reward basis).

    ``graders``: names or instances; ``None`` runs every enabled code grader. A named
    code grader runs only where the task enables it (`applies`).
    Success is the product of the required graders' passes — the task's
    ``Expectations.required``, else every enabled grader of `DEFAULT_REQUIRED`
    — restricted to the graders run. A required part of a grader's grade
    (``rubric:polite``, `part_grades`) counts as its own grade; one its grader ran
    and did not give is an unknown grade (``unknown:not_graded``), added to the
    grades. A required grade that is unknown makes success False and is listed in
    ``unknown``. Any minefield hit sets success
    to False and the score to 0 (ToolSandbox).
    """
    if graders is None:
        # Only code graders run by default; judge and human graders may need
        # options (an endpoint, a labels file), so they are not even built.
        chosen: list[Grader] = [g for g in _default_code_graders() if g.enabled(task)]
    else:
        # A named code grader grades only the tasks that declare what it needs, as by
        # default: run on every task, `minefields` passed each task without minefields and
        # `tool_calls` read a missing answer key as an irrelevance task, and those grades
        # changed the metrics. Judge and human graders say "not applicable" themselves
        # (a rubric grade of a task without a rubric is ``unknown:no_rubric``).
        named = [get_grader(g) if isinstance(g, str) else g for g in graders]
        chosen = [g for g in named if applies(g, task)]
    grades = []
    for g in chosen:
        try:
            grades.append(g.grade(task, trial))
        except Exception as exc:
            # Which grader raised, for whoever reports it (`raising_grader`): the
            # harness stores it with the trial's grader_error.
            exc.add_note(f"{_RAISED_IN}{g.name}")
            raise
    by_name = {gr.grader: gr for gr in grades}
    for part in (p for gr in grades for p in part_grades(gr)):
        by_name.setdefault(part.grader, part)
    exp = task.expectations
    # A grade the task names that its grader, run, did not give (``rubric:polite``
    # from a rubric without that criterion) is unknown, stored and said: dropping it
    # let the trial pass on the rest.
    for name in (*(exp.required or ()), *exp.partial_credit):
        head = name.partition(":")[0]
        if name not in by_name and head != name and head in by_name:
            missing = unknown(
                name, "not_graded", {"why": f"grader {head!r} ran but gave no grade {name!r}"}
            )
            grades.append(missing)
            by_name[name] = missing
    if exp.required is not None:
        required = [n for n in exp.required if n in by_name]
    else:
        required = [g.name for g in chosen if g.name in DEFAULT_REQUIRED and g.enabled(task)]
    unknown_req = [n for n in required if by_name[n].passed is None]
    success: bool | None = None
    if required:
        success = all(by_name[n].passed is True for n in required)
    violations: list[dict[str, Any]] = []
    mine = by_name.get("minefields")
    if mine is not None and mine.passed is False and isinstance(mine.evidence, dict):
        violations = list(mine.evidence.get("hits", []))
    if violations:
        success = False
    partial = [by_name[n] for n in exp.partial_credit if n in by_name]
    unknown_partial: list[str] = []
    score: float | None
    if partial:
        scores = [g.score for g in partial if g.score is not None]
        # Apart from the required ones: "an unknown required grade" counted a
        # partial-credit grader that success does not rest on.
        unknown_partial = [
            g.grader for g in partial if g.score is None and g.grader not in unknown_req
        ]
        score = sum(scores) / len(scores) if scores else None
    else:
        score = None if success is None else (1.0 if success else 0.0)
    if violations:
        score = 0.0
    return TrialGrading(
        grades=grades,
        success=success,
        score=score,
        unknown=unknown_req,
        unknown_partial=unknown_partial,
        safety_violations=violations,
    )
