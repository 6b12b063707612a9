"""The response_match grader: ROUGE-1 F-measure of the final answer against the
task's reference answer, as Google ADK's ``response_match_score`` (ADK's
evaluation criteria docs; docs/graders.md, "`response_match`").

ROUGE-1 (Lin 2004) counts the words the answer and the reference share:
with ``overlap`` = the sum over words of the smaller of their two counts,
precision = overlap / answer words, recall = overlap / reference words, and
F = 2PR / (P + R) (0 when both are 0). Words are those of rouge-score's
default tokenizer: the text lower-cased, every run of characters outside
``a-z0-9`` replaced by a space, split on spaces, so "Café" is the word "caf"
and a text of only punctuation has no words. ADK builds its scorer with
``use_stemmer=True`` (NLTK's Porter stemmer on words longer than three
letters); agentgauge stems only when a task asks (``response_match.stem``,
which needs the ``nltk`` package), so by default "refunded" and "refund" are
different words and a score can sit below ADK's on inflected text.

The grade's score is F; it passes when F >= the threshold (ADK's default
0.8). No answer at all scores 0 and fails, as in ADK (an absent response is
the empty text there); a reference with no words cannot be compared and is
``unknown:reference has no words``.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from agentgauge.graders.answer import answer_text
from agentgauge.graders.base import fail, pass_, register, unknown
from agentgauge.schema import Grade, ResponseMatchSpec, Task, Trial

__all__ = ["ResponseMatchGrader", "Rouge1", "porter_stemmer", "rouge1", "rouge_tokens"]

_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[a-z0-9]+")


def rouge_tokens(text: str, stem: Callable[[str], str] | None = None) -> list[str]:
    """The words of ``text`` as rouge-score's default tokenizer finds them; ``stem``
    applies to words longer than three letters, as there."""
    words = _NON_ALPHANUMERIC.sub(" ", text.lower()).split()
    if stem is None:
        return words
    # A stemmer's output is filtered as rouge-score does: only a-z0-9 words are kept.
    stemmed = (stem(w) if len(w) > 3 else w for w in words)
    return [w for w in stemmed if _WORD.fullmatch(w)]


@functools.cache
def porter_stemmer() -> Callable[[str], str]:
    """NLTK's Porter stemmer, the one rouge-score (and so ADK) uses; `ImportError`
    without ``nltk``."""
    from nltk.stem import porter  # type: ignore[import-not-found,import-untyped,unused-ignore]

    stem: Callable[[str], str] = porter.PorterStemmer().stem
    return stem


@dataclass(frozen=True)
class Rouge1:
    """ROUGE-1 of an answer against a reference."""

    precision: float
    """Shared words / answer words (0 for an empty answer)."""
    recall: float
    """Shared words / reference words (0 for an empty reference)."""
    fmeasure: float
    """2PR / (P + R), or 0 when P + R is 0."""
    overlap: int
    """Shared words, each counted as often as it appears in both."""
    answer_words: int
    reference_words: int


def rouge1(answer: str, reference: str, stem: Callable[[str], str] | None = None) -> Rouge1:
    """ROUGE-1 precision, recall and F of ``answer`` against ``reference``."""
    said, ref = rouge_tokens(answer, stem), rouge_tokens(reference, stem)
    overlap = sum((Counter(said) & Counter(ref)).values())
    precision = overlap / max(len(said), 1)
    recall = overlap / max(len(ref), 1)
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    f = min(f, 1.0)  # a last-bit rounding above 1 would fail Grade's [0, 1] check
    return Rouge1(precision, recall, f, overlap, len(said), len(ref))


@register("response_match")
class ResponseMatchGrader:
    """ROUGE-1 F of the answer against ``Expectations.reference_answer`` (Google ADK)."""

    name = "response_match"
    kind = "code"

    def enabled(self, task: Task) -> bool:
        return task.expectations.reference_answer is not None

    def grade(self, task: Task, trial: Trial) -> Grade:
        exp = task.expectations
        reference = exp.reference_answer
        if reference is None:
            return unknown(self.name, "no reference answer")
        spec = exp.response_match or ResponseMatchSpec()
        threshold = spec.threshold
        stem: Callable[[str], str] | None = None
        if spec.stem:
            try:
                stem = porter_stemmer()
            except ImportError:
                return unknown(self.name, "stemming needs nltk", "pip install nltk")
        if not rouge_tokens(reference, stem):
            return unknown(self.name, "reference has no words", {"reference": reference})
        text = answer_text(trial)
        if text is None:
            evidence = {"threshold": threshold, "detail": "the agent gave no answer"}
            return fail(self.name, "response_match:no_answer", evidence, score=0.0)
        r = rouge1(text, reference, stem)
        # Kept short: every retail trial carries one (the score is F itself).
        evidence = {
            "precision": round(r.precision, 4),
            "recall": round(r.recall, 4),
            "shared_words": r.overlap,
            "threshold": threshold,
        }
        if r.fmeasure >= threshold:
            return pass_(self.name, score=r.fmeasure, evidence=evidence)
        return fail(self.name, "response_match:below_threshold", evidence, score=r.fmeasure)
