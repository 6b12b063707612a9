"""How the answer grader reads numbers in text, and the `number` check's tolerance."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgauge.graders.answer import numbers_in

naturals = st.integers(min_value=0, max_value=10**12)


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        # A hyphen between numbers is not a minus sign: these read [5, -10] and
        # [2024, -5, -1], so `number: 10` failed on "5-10 business days".
        ("Delivery takes 5-10 business days.", [5.0, 10.0]),
        ("Shipped on 2024-05-01.", [2024.0, 5.0, 1.0]),
        ("order W-1234", [1234.0]),
        # A thousands form ends where the digits end: this read [12345, 6].
        ("12,3456", [12.0, 3456.0]),
        ("1,234,5678", [1234.0, 5678.0]),
        # Signs where they are signs, and scientific notation, as before.
        ("-5", [-5.0]),
        ("it is -5", [-5.0]),
        ("(-5)", [-5.0]),
        ("x=-2.5e-3, +7", [-0.0025, 7.0]),
        ("-3, 1e3 and 2,500.25", [-3.0, 1000.0, 2500.25]),
        ("5 - 3", [5.0, 3.0]),
        # An exponent needs a digit before it: "e2" of "page2" was read as a number.
        ("see page2", [2.0]),
        ("code5e3 or E10", [5000.0, 10.0]),
        (".5e2", [50.0]),
    ],
)
def test_numbers_in(text: str, numbers: list[float]) -> None:
    assert numbers_in(text) == numbers


@given(naturals, naturals, st.sampled_from(["-", "–"]))
def test_a_range_reads_both_ends_as_written(a: int, b: int, dash: str) -> None:
    assert numbers_in(f"takes {a}{dash}{b} days") == [float(a), float(b)]


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(["", " ", "(", "= "]))
def test_a_signed_number_keeps_its_sign(n: int, before: str) -> None:
    assert numbers_in(f"{before}{n}") == [float(n)]
    assert numbers_in(f"{before}{n:,}") == [float(n)]


def test_the_number_check_finds_the_upper_end_of_a_range() -> None:
    from agentgauge.graders.answer import check_answer
    from agentgauge.schema import AnswerSpec

    checks = check_answer("Delivery takes 5-10 business days.", AnswerSpec(number=10))
    assert checks == [("number", True, "found 5, 10")]


@pytest.mark.parametrize(
    ("text", "number", "tolerance", "held"),
    [
        # At the tolerance exactly: in binary floating point 1.1 - 1.0 is
        # 0.10000000000000009, and these failed.
        ("It is 1.1", 1.0, 0.1, True),
        ("It is 0.9", 1.0, 0.1, True),
        ("It costs 100.01", 100.0, 0.01, True),
        ("It costs 100.02", 100.0, 0.01, False),
        ("It is 1.10001", 1.0, 0.1, False),
        ("It is 1,234.50", 1234.5, 0.0, True),
        # An exponent beyond any range is a number far away, not an error.
        ("It is 1e99999999999999999999999", 1.0, 0.1, False),
    ],
)
def test_the_tolerance_is_inclusive_on_the_numbers_as_written(
    text: str, number: float, tolerance: float, held: bool
) -> None:
    from agentgauge.graders.answer import check_answer
    from agentgauge.schema import AnswerSpec

    checks = check_answer(text, AnswerSpec(number=number, tolerance=tolerance))
    assert [(name, ok) for name, ok, _ in checks] == [("number", held)]


def _cents(n: int) -> str:
    sign = "-" if n < 0 else ""
    return f"{sign}{abs(n) // 100}.{abs(n) % 100:02d}"


@given(
    st.integers(min_value=-(10**9), max_value=10**9),
    st.integers(min_value=-(10**9), max_value=10**9),
    st.integers(min_value=0, max_value=10**6),
)
def test_the_tolerance_decides_as_exact_arithmetic_on_the_written_decimals(
    written: int, target: int, tolerance: int
) -> None:
    from agentgauge.graders.answer import number_within

    held = number_within(_cents(written), float(_cents(target)), float(_cents(tolerance)))
    assert held == (abs(written - target) <= tolerance)


@pytest.mark.parametrize(
    "text", ["The total is 42 (see page2).", "See page2: the total is 42.", "code5: 42"]
)
def test_a_word_ending_in_a_digit_does_not_stop_the_grader(text: str) -> None:
    # `grader 'answer' raised ValueError: could not convert string to float: 'e2'`
    # (and decimal.InvalidOperation): the trial could not be graded at all.
    from agentgauge.graders import grade_trial
    from agentgauge.schema import AnswerSpec, Expectations, Task, Trial

    task = Task(id="t", instruction="sum?", expectations=Expectations(answer=AnswerSpec(number=42)))
    graded = grade_trial(task, Trial(task_id="t", success=False, answer=text))
    assert (graded.success, graded.grades[0].status) == (True, "passed")


@given(st.text(alphabet=st.sampled_from("0123456789eE+-.,pag ")))
def test_any_text_reads_without_raising(text: str) -> None:
    from agentgauge.graders.answer import check_answer
    from agentgauge.schema import AnswerSpec

    numbers_in(text)
    check_answer(text, AnswerSpec(number=1, tolerance=0.5))


@pytest.mark.parametrize(
    ("number", "text", "held"),
    [
        # As a float the target was 12345678901234568: the exact answer failed, and the
        # evidence showed "found [1.2345678901234568e+16]".
        (12345678901234567, "It is 12345678901234567.", True),
        (12345678901234567, "It is 12345678901234568.", False),
        (Decimal("0.10000000000000000001"), "It is 0.10000000000000000001", True),
        (Decimal("0.10000000000000000001"), "It is 0.1", False),
    ],
)
def test_the_target_is_compared_as_written(number: int | Decimal, text: str, held: bool) -> None:
    from agentgauge.graders import grade_trial
    from agentgauge.schema import AnswerSpec, Expectations, Task, Trial

    task = Task(
        id="t", instruction="?", expectations=Expectations(answer=AnswerSpec(number=number))
    )
    # Through the store's JSON, as a re-grade reads the task.
    task = Task.model_validate_json(task.model_dump_json())
    assert task.expectations.answer is not None and task.expectations.answer.number == number
    grade = grade_trial(task, Trial(task_id="t", success=False, answer=text)).grades[0]
    assert grade.passed is held
    if not held:
        (failed,) = grade.evidence["failed"]
        assert failed["detail"] == f"found {text.removeprefix('It is ').rstrip('.')}"


def test_the_target_from_a_suite_file_is_kept_as_written(tmp_path: Path) -> None:
    from agentgauge.suite import load_suite

    path = tmp_path / "s.yaml"
    path.write_text(
        "tasks:\n  - id: t\n    instruction: sum?\n"
        "    expectations: {answer: {number: 12345678901234567}}\n"
    )
    answer = load_suite(path).tasks[0].expectations.answer
    assert answer is not None and answer.number == 12345678901234567
