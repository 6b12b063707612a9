"""The errors of a run, by class, with their most frequent messages.

A run that ends with "55 infra errors" and nothing else sends its user digging
in SQLite; `summarize_errors` gives what the end of ``agentgauge run`` prints
instead: each error class (docs/metrics.md, "Infrastructure errors") with its
count, and its most frequent messages, each with the count and one trial that
had it, so the user can look at that trial. Messages are grouped as written
(no pattern guessing: two messages that differ are two lines).

`summarize_ungraded` does the same for the completed trials counted as failures that
no grader judged failed: a grader raised (a ``grader_error`` grade), or a grade the
task requires was unknown (docs/graders.md, "Success and score of a trial").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentgauge.schema import Task, Trial

__all__ = [
    "ERROR_CLASSES",
    "ErrorClass",
    "ErrorMessage",
    "Ungraded",
    "cell_label",
    "one_line",
    "summarize_errors",
    "summarize_ungraded",
    "trial_label",
    "ungraded_lines",
]

#: (status, error_kind) -> the class's name for one trial and for several, in the order
#: classes are shown.
_NAMES: dict[tuple[str, str | None], tuple[str, str]] = {
    ("error", "infra"): ("infra error", "infra errors"),
    ("timeout", "infra"): (
        "infra timeout (in a provider call)",
        "infra timeouts (in a provider call)",
    ),
    ("error", "agent"): ("agent error", "agent errors"),
    ("timeout", "agent"): ("agent timeout (the agent hung)", "agent timeouts (the agent hung)"),
    ("error", None): ("error (unclassified)", "errors (unclassified)"),
    ("timeout", None): ("timeout (unclassified)", "timeouts (unclassified)"),
}
#: (status, error_kind) -> the class's name, in the order classes are shown.
ERROR_CLASSES: dict[tuple[str, str | None], str] = {k: many for k, (_, many) in _NAMES.items()}
#: A class's name for one trial ("1 agent error", not "1 agent errors").
_ONE: dict[str, str] = {many: one for one, many in _NAMES.values()}


@dataclass(frozen=True)
class ErrorMessage:
    """One distinct message of a class."""

    text: str
    count: int
    example: str
    """One trial that had it (`trial_label`)."""


@dataclass(frozen=True)
class ErrorClass:
    """The trials of one error class."""

    name: str
    count: int
    distinct: int
    """Distinct messages in the class (``messages`` holds the most frequent)."""
    messages: list[ErrorMessage]
    infra: bool

    @property
    def counted(self) -> str:
        """The count with the class's name: ``1 agent error``, ``3 agent errors``."""
        return f"{self.count} {_ONE.get(self.name, self.name) if self.count == 1 else self.name}"

    """Whether the class counts as infra errors (excludable from success rates)."""


#: How long a message may be in a summary before it is cut (one terminal line or two).
MESSAGE_WIDTH = 160


def one_line(message: str, width: int = MESSAGE_WIDTH) -> str:
    """An agent's message as one plain line of at most ``width`` characters: control
    characters must not steer the terminal. Line breaks and tabs read as spaces; any
    other control (a terminal escape, a bidi override) is shown as its escape
    (``\\x1b``), as `agentgauge show` shows it, not blanked out of sight."""
    from agentgauge.display import visible

    flat = " ".join(
        "".join(c if c.isprintable() or c.isspace() else visible(c) for c in message).split()
    )
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def trial_label(trial: Trial) -> str:
    """``TASK trial N``, with the variant when it is not ``base``."""
    return cell_label(trial.task_id, trial.trial, trial.variant)


def cell_label(task_id: str, trial: int | None, variant: str) -> str:
    """`trial_label` of the trial a (task, trial, variant) cell makes."""
    return f"{task_id} trial {trial}" + ("" if variant == "base" else f" {variant}")


def summarize_errors(trials: Iterable[Trial], *, per_class: int = 3) -> list[ErrorClass]:
    """Error classes of ``trials`` (most frequent first within a class, ties by first
    seen), with up to ``per_class`` messages each; classes with no trial are left out."""
    counts: dict[str, Counter[str]] = {}
    examples: dict[tuple[str, str], str] = {}
    infra: dict[str, bool] = {}
    for t in trials:
        if t.status == "completed":
            continue
        name = ERROR_CLASSES.get((t.status, t.error_kind), f"{t.status} ({t.error_kind})")
        text = t.error or "(no message recorded)"
        counts.setdefault(name, Counter())[text] += 1
        examples.setdefault((name, text), trial_label(t))
        infra[name] = t.is_infra_error
    order = list(ERROR_CLASSES.values())
    out = []
    for name in sorted(counts, key=lambda n: order.index(n) if n in order else len(order)):
        by_text = counts[name]
        top = by_text.most_common(max(per_class, 0))
        out.append(
            ErrorClass(
                name=name,
                count=sum(by_text.values()),
                distinct=len(by_text),
                messages=[ErrorMessage(m, c, examples[(name, m)]) for m, c in top],
                infra=infra[name],
            )
        )
    return out


@dataclass(frozen=True)
class Ungraded:
    """Completed trials counted as failures for want of a grade, by message."""

    count: int
    distinct: int
    messages: list[ErrorMessage]
    """The most frequent messages: ``grader 'x' raised KeyError: 'y'``, or the unknown
    required grades (``answer unknown:no_answer``)."""


def summarize_ungraded(
    trials: Iterable[Trial], tasks: Mapping[str, Task] | None = None, *, per_class: int = 3
) -> tuple[Ungraded | None, Ungraded | None]:
    """The completed, failed trials that could not be graded (a grader raised: the
    harness's ``grader_error`` grade) and those counted as failures only because a
    required grade was unknown (no required grade failed, no minefield was hit), each
    grouped by message as `summarize_errors` groups errors; ``None`` where there is no
    such trial. ``tasks`` (by id) give each task's ``expectations.required``; a task not
    among them requires the default graders (`agentgauge.graders.DEFAULT_REQUIRED`)."""
    from agentgauge.graders.base import DEFAULT_REQUIRED

    raised: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    examples: dict[tuple[str, str], str] = {}
    for t in trials:
        if t.status != "completed" or t.success:
            continue
        crash = next(
            (g for g in t.grades if g.grader == "harness" and g.status == "grader_error"), None
        )
        if crash is not None:
            text = crash.evidence if isinstance(crash.evidence, str) else "(no message recorded)"
            raised[text] += 1
            examples.setdefault(("raised", text), trial_label(t))
            continue
        task = (tasks or {}).get(t.task_id)
        listed = None if task is None else task.expectations.required
        names = DEFAULT_REQUIRED if listed is None else listed
        required = [g for g in t.grades if g.grader in names]
        if not required or any(g.passed is False for g in required):
            continue  # failed on a grade, or nothing required was graded ("not evaluated")
        if any(g.grader == "minefields" and g.passed is False for g in t.grades):
            continue
        undecided = [g for g in required if g.passed is None]
        if undecided:
            text = ", ".join(f"{g.grader} {g.status or 'unknown'}" for g in undecided)
            unknown[text] += 1
            examples.setdefault(("unknown", text), trial_label(t))

    def group(kind: str, counts: Counter[str]) -> Ungraded | None:
        if not counts:
            return None
        top = counts.most_common(max(per_class, 0))
        return Ungraded(
            count=sum(counts.values()),
            distinct=len(counts),
            messages=[ErrorMessage(m, c, examples[(kind, m)]) for m, c in top],
        )

    return group("raised", raised), group("unknown", unknown)


def ungraded_lines(
    raised: Ungraded | None, unknown: Ungraded | None, regrade: str
) -> list[tuple[str, list[ErrorMessage], str]]:
    """What to say of `summarize_ungraded`'s two groups: ``(header, messages, advice)``
    for each group there is, ``regrade`` being the command that re-grades the run."""
    out = []
    if raised is not None:
        out.append(
            (
                f"{raised.count} {_trials(raised.count)} could not be graded",
                raised.messages,
                f"they count as failures; fix the grader and re-grade with: {regrade}",
            )
        )
    if unknown is not None:
        out.append(
            (
                f"{unknown.count} {_trials(unknown.count)} counted as failures because a "
                "required grade was unknown",
                unknown.messages,
                'they count as failures (docs/graders.md, "Success and score of a trial")',
            )
        )
    return out


def _trials(n: int) -> str:
    return "trial" if n == 1 else "trials"
