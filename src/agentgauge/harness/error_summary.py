"""The errors of a run, by class, with their most frequent messages.

A run that ends with "55 infra errors" and nothing else sends its user digging
in SQLite; `summarize_errors` gives what the end of ``agentgauge run`` prints
instead: each error class (docs/metrics.md, "Infrastructure errors") with its
count, and its most frequent messages, each with the count and one trial that
had it, so the user can look at that trial. Messages are grouped as written
(no pattern guessing: two messages that differ are two lines).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from agentgauge.schema import Trial

__all__ = [
    "ERROR_CLASSES",
    "ErrorClass",
    "ErrorMessage",
    "cell_label",
    "one_line",
    "summarize_errors",
    "trial_label",
]

#: (status, error_kind) -> the class's name, in the order classes are shown.
ERROR_CLASSES: dict[tuple[str, str | None], str] = {
    ("error", "infra"): "infra errors",
    ("timeout", "infra"): "infra timeouts (in a provider call)",
    ("error", "agent"): "agent errors",
    ("timeout", "agent"): "agent timeouts (the agent hung)",
    ("error", None): "errors (unclassified)",
    ("timeout", None): "timeouts (unclassified)",
}


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
    """Whether the class counts as infra errors (excludable from success rates)."""


#: How long a message may be in a summary before it is cut (one terminal line or two).
MESSAGE_WIDTH = 160


def one_line(message: str, width: int = MESSAGE_WIDTH) -> str:
    """An agent's message as one plain line of at most ``width`` characters: control
    characters (newlines, terminal escapes) must not steer the terminal."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in message).split())
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
