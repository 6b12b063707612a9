"""The answer grader: checks on the agent's final answer text (docs/graders.md, "`answer`").

The answer is ``Trial.answer``, else the last assistant message with text.
Each declared check must hold: ``contains`` (every substring, case-folded),
``regex`` (``re.search``), ``exact`` (whole text after stripping whitespace),
``number`` (some number in the text within ``tolerance``; thousands
separators ``1,234.5`` are read). The score is the share of checks that hold,
for partial credit; the grade passes when all do.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal

from agentgauge.graders.base import fail, pass_, register
from agentgauge.schema import AnswerSpec, Grade, MessageEvent, Task, Trial

__all__ = ["AnswerGrader", "answer_text", "check_answer", "number_within", "numbers_in"]

# A sign only where it cannot be a hyphen or dash between words and numbers
# ("5-10 days" is 5 and 10, "2024-05-01" is 2024, 5 and 1); a thousands form only
# when its last group ends the digits ("12,3456" is 12 and 3456, not 12345 and 6).
# An exponent only after a digit: with every part optional, the "e2" of "page2" was a
# number, which no decimal reads.
_NUMBER = re.compile(
    r"(?:(?<![\w.])[-+])?(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:[eE][-+]?\d+)?"
)


# 100 significant digits: the difference of two written numbers is exact in practice.
# No trap, so an exponent beyond any range reads as an infinity (too far from any
# target), not an error.
_DECIMAL = decimal.Context(
    prec=100, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[], flags=[]
)


def answer_text(trial: Trial) -> str | None:
    """The final answer: ``trial.answer`` or the last assistant text."""
    if trial.answer is not None:
        return trial.answer
    for event in reversed(trial.events):
        if isinstance(event, MessageEvent) and event.role == "assistant" and event.content:
            return event.content
    return None


def _number_tokens(text: str) -> list[str]:
    """Every number written in ``text`` as written, without thousands separators; a
    token no decimal reads is passed over."""
    tokens = (m.group(0).replace(",", "") for m in _NUMBER.finditer(text))
    return [t for t in tokens if not _DECIMAL.copy().create_decimal(t).is_nan()]


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` (``1,234.5`` -> 1234.5)."""
    return [float(token) for token in _number_tokens(text)]


def number_within(
    token: str, target: int | float | Decimal, tolerance: int | float | Decimal
) -> bool:
    """Whether the number written as ``token`` is within ``tolerance`` of ``target``,
    compared as the decimals written: in binary floating point 1.1 - 1.0 is
    0.10000000000000009, so "1.1" failed ``number: 1.0, tolerance: 0.1``. The target
    and tolerance are read as written: an integer or a `Decimal` exactly, a float as
    its shortest decimal form, as in the suite."""
    ctx = _DECIMAL.copy()
    diff = ctx.abs(ctx.subtract(ctx.create_decimal(token), Decimal(str(target))))
    return diff <= Decimal(str(tolerance))


def check_answer(text: str, spec: AnswerSpec) -> list[tuple[str, bool, str]]:
    """``(check, held, detail)`` for each declared check."""
    checks: list[tuple[str, bool, str]] = []
    folded = text.casefold()
    for needle in spec.contains:
        checks.append((f"contains:{needle}", needle.casefold() in folded, ""))
    if spec.regex is not None:
        try:
            held = re.search(spec.regex, text) is not None
            checks.append(("regex", held, spec.regex))
        except re.error as exc:
            checks.append(("regex", False, f"invalid pattern: {exc}"))
    if spec.exact is not None:
        checks.append(("exact", text.strip() == spec.exact.strip(), ""))
    if spec.number is not None:
        tokens = _number_tokens(text)
        held = any(number_within(t, spec.number, spec.tolerance) for t in tokens)
        # The numbers as written: as floats, 12345678901234567 showed as 1.2345678901234568e+16.
        checks.append(("number", held, f"found {', '.join(tokens[:10]) or 'no number'}"))
    return checks


@register("answer")
class AnswerGrader:
    """The final answer satisfies every check of ``Expectations.answer``."""

    name = "answer"
    kind = "code"

    def enabled(self, task: Task) -> bool:
        return task.expectations.answer is not None

    def grade(self, task: Task, trial: Trial) -> Grade:
        spec = task.expectations.answer
        if spec is None:
            return pass_(self.name, evidence="no answer checks declared")
        text = answer_text(trial)
        if text is None:
            return fail(self.name, "answer:missing", "the agent gave no answer")
        checks = check_answer(text, spec)
        if not checks:
            return pass_(self.name, evidence="no answer checks declared")
        held = [c for c in checks if c[1]]
        failed = [{"check": c, "detail": d} for c, ok, d in checks if not ok]
        score = len(held) / len(checks)
        if failed:
            status = "answer:" + failed[0]["check"].split(":", 1)[0]
            return fail(self.name, status, {"failed": failed}, score=score)
        return pass_(self.name, evidence={"checks": [c for c, _, _ in checks]})
