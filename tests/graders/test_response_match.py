"""response_match: ROUGE-1 by hand, against the rouge-score package (Google's, which
ADK calls), the grade's statuses, the retail tasks' reference answers, and a store
round trip."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.graders import get_grader, grade_trial
from agentgauge.graders.response_match import rouge1, rouge_tokens
from agentgauge.schema import Expectations, MessageEvent, ResponseMatchSpec, Run, Task, Trial
from agentgauge.store import Store
from agentgauge.suite import load_suite

rouge_scorer = pytest.importorskip(
    "rouge_score.rouge_scorer", reason="rouge-score (the dev extra) is needed for the cross-check"
)
SCORER = rouge_scorer.RougeScorer(["rouge1"])  # use_stemmer=False, its default


def task(reference: str | None, threshold: float | None = None) -> Task:
    spec = ResponseMatchSpec(threshold=threshold) if threshold is not None else None
    exp = Expectations(reference_answer=reference, response_match=spec)
    return Task(id="t", instruction="answer", expectations=exp)


def said(answer: str | None) -> Trial:
    return Trial(task_id="t", success=False, answer=answer)


def grade(t: Task, trial: Trial) -> object:
    return get_grader("response_match").grade(t, trial)


# --------------------------------------------------------------------------- by hand


def test_rouge1_by_hand() -> None:
    # 3 shared words; P = 3/3, R = 3/6; F = 2 * 1 * 0.5 / 1.5 = 2/3.
    r = rouge1("the cat sat", "the cat sat on the mat")
    assert (r.overlap, r.precision, r.recall) == (3, 1.0, 0.5)
    assert math.isclose(r.fmeasure, 2 / 3)
    # Repeats count as often as they appear in both: a min(3, 1) + b min(1, 2) = 2;
    # P = 2/4, R = 2/3, F = 2 * (1/2)(2/3) / (7/6) = 4/7.
    r = rouge1("a a a b", "a b b")
    assert r.overlap == 2 and math.isclose(r.fmeasure, 4 / 7)
    # Case and punctuation do not count; word order does not either.
    assert rouge1("Hello, WORLD!", "world hello").fmeasure == 1.0
    # No shared word: 0. An empty side: 0 (P + R = 0).
    assert rouge1("yes", "no").fmeasure == 0.0
    assert rouge1("", "a reference").fmeasure == 0.0
    assert rouge1("an answer", "").fmeasure == 0.0


def test_tokens_are_rouge_scores_default_words() -> None:
    # Lower-cased, anything outside a-z0-9 is a separator, no stemming.
    assert rouge_tokens("Refunded $35.00 to card-9090!") == [
        "refunded",
        "35",
        "00",
        "to",
        "card",
        "9090",
    ]
    assert rouge_tokens("Café crème") == ["caf", "cr", "me"]
    assert rouge_tokens("…!?") == []
    assert rouge_tokens("refunds refunded") == ["refunds", "refunded"]


# --------------------------------------------------------------------------- cross-check

CORPUS = [
    ("", ""),
    ("", "the reference"),
    ("an answer", ""),
    (
        "W1014 will now ship to 12 Oxford St, Cambridge, MA 02138.",
        "W1014 will now ship to 12 Oxford St, Cambridge, MA 02138.",
    ),
    (
        "Your order W1014 ships to 12 Oxford St.",
        "W1014 will now ship to 12 Oxford St, Cambridge, MA 02138.",
    ),
    ("I'm sorry, I can't help with that request.", "I'm sorry, W1027 has already shipped."),
    ("Café crème brûlée, s'il vous plaît", "cafe creme brulee"),
    ("ÅNGSTRÖM Ω ﬁ K İstanbul", "angstrom fi k istanbul"),
    ("日本語のテキスト 123", "123 テキスト"),
    ("tab\tnew\nline  spaces", "tab new line spaces"),
    ("the the the the", "the"),
    ("$35.00 refunded; $35.00!", "35 00 refunded"),
    ("emoji 🎉 party 🎉", "party emoji"),
    ("\u0000nul and \ufffd replacement", "nul and replacement"),
]


@pytest.mark.parametrize(("answer", "reference"), CORPUS)
def test_rouge1_equals_rouge_score_on_a_fixed_corpus(answer: str, reference: str) -> None:
    theirs = SCORER.score(reference, answer)["rouge1"]
    ours = rouge1(answer, reference)
    assert (ours.precision, ours.recall, ours.fmeasure) == pytest.approx(
        (theirs.precision, theirs.recall, theirs.fmeasure), abs=1e-12
    )


WORDS = st.sampled_from(["the", "order", "W1014", "refund", "Refunded", "35.00", "ça", "日本", "x"])
TEXT = st.one_of(
    st.text(max_size=80),
    st.lists(WORDS, max_size=12).map(" ".join),
    st.lists(st.one_of(WORDS, st.text(max_size=4)), max_size=12).map(", ".join),
)


@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT)
def test_rouge1_equals_rouge_score_on_generated_strings(answer: str, reference: str) -> None:
    theirs = SCORER.score(reference, answer)["rouge1"]
    ours = rouge1(answer, reference)
    assert ours.fmeasure == pytest.approx(theirs.fmeasure, abs=1e-12)
    assert ours.precision == pytest.approx(theirs.precision, abs=1e-12)
    assert ours.recall == pytest.approx(theirs.recall, abs=1e-12)


def test_stemming_when_asked_matches_rouge_score_with_its_stemmer() -> None:
    pytest.importorskip("nltk", reason="stemming needs nltk (a dependency of rouge-score)")
    from agentgauge.graders.response_match import porter_stemmer

    stem = porter_stemmer()
    # "ships" -> "ship", "refunded" -> "refund"; "to" and "12" are too short to stem.
    assert rouge_tokens("Ships refunded to 12", stem) == ["ship", "refund", "to", "12"]
    stemmer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)  # ADK's scorer
    for answer, reference in [*CORPUS, ("It ships, refunded.", "It ship; refunds")]:
        theirs = stemmer.score(reference, answer)["rouge1"]
        assert rouge1(answer, reference, stem).fmeasure == pytest.approx(theirs.fmeasure, abs=1e-12)
    t = Task(
        id="t",
        instruction="answer",
        expectations=Expectations(
            reference_answer="W1014 will now ship", response_match=ResponseMatchSpec(stem=True)
        ),
    )
    # Stemmed, all 4 answer words are shared: P = R = 1.
    assert grade(t, said("W1014 now ships, will")).score == 1.0
    assert grade(task("W1014 will now ship"), said("W1014 now ships, will")).score == 0.75


# --------------------------------------------------------------------------- the grade


def test_the_score_is_f_and_passes_at_the_threshold() -> None:
    # 4 of 6 reference words, all 4 answer words shared: F = 2 * 1 * (2/3) / (5/3) = 0.8.
    g = grade(task("a b c d e f"), said("a b c d"))
    assert (g.passed, g.status, g.score) == (True, "passed", 0.8)  # ADK: score >= 0.8 passes
    assert g.evidence["shared_words"] == 4 and g.evidence["threshold"] == 0.8
    g = grade(task("a b c d e f"), said("a b c"))  # F = 2 * 1 * 0.5 / 1.5 = 2/3
    assert (g.passed, g.status) == (False, "response_match:below_threshold")
    assert g.score == pytest.approx(2 / 3)
    assert grade(task("a b c d e f", threshold=0.6), said("a b c")).passed is True


def test_the_answer_is_the_last_assistant_text_when_none_is_recorded() -> None:
    trial = Trial(
        task_id="t",
        success=False,
        events=[
            MessageEvent(role="user", content="hi"),
            MessageEvent(role="assistant", content="a b"),
        ],
    )
    assert grade(task("a b"), trial).score == 1.0


def test_no_answer_scores_zero_and_a_wordless_reference_is_unknown() -> None:
    g = grade(task("a reference"), said(None))
    assert (g.passed, g.status, g.score) == (False, "response_match:no_answer", 0.0)
    g = grade(task("…!"), said("anything"))
    assert (g.passed, g.status, g.score) == (None, "unknown:reference has no words", None)


def test_response_match_is_a_score_not_a_gate_by_default() -> None:
    t = task("the reference answer")
    graded = grade_trial(t, said("something else entirely"))
    assert [g.grader for g in graded.grades] == ["response_match"]
    assert graded.success is None  # not required unless the task lists it
    t = Task(
        id="t",
        instruction="answer",
        expectations=Expectations(reference_answer="the answer", required=["response_match"]),
    )
    assert grade_trial(t, said("the answer")).success is True
    assert grade_trial(t, said("no")).success is False


def test_retail_tasks_take_their_reference_answer_from_metadata() -> None:
    suite = load_suite("builtin:retail", include_heldout=True)
    assert suite.tasks
    for t in suite.tasks:
        assert t.expectations.reference_answer == t.metadata["reference_answer"]
        # The oracle's answer is the reference: F = 1.
        assert grade(t, said(t.metadata["reference_answer"])).score == 1.0


def test_response_match_grades_round_trip_through_the_store(tmp_path: Path) -> None:
    t = task("W1014 will now ship to 12 Oxford St")
    trials = []
    for i, answer in enumerate(["W1014 will now ship to 12 Oxford St", "It ships.", None]):
        g = grade(t, said(answer))
        trials.append(
            Trial(task_id="t", trial=i, success=bool(g.passed), answer=answer, grades=[g])
        )
    with Store(tmp_path / "s.db") as db:
        with db.transaction():
            db.create_run(Run(run_id="r", created_at="2026-12-01T00:00:00Z"))
            db.add_tasks("r", [t])
        db.add_trials("r", trials)
    with Store(tmp_path / "s.db", readonly=True) as db:
        back = db.trials("r")
    assert [b.grades[0].status for b in back] == [
        "passed",
        "response_match:below_threshold",
        "response_match:no_answer",
    ]
    # "It ships." shares no word ("ships" is not "ship": no stemming): F = 0.
    assert [b.grades[0].score for b in back] == [1.0, 0.0, 0.0]
    for before, after in zip(trials, back, strict=True):
        assert after.grades[0].model_dump() == before.grades[0].model_dump()
