"""How the answer grader reads numbers in text, and the `number` check's tolerance."""

from __future__ import annotations

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
    assert checks == [("number", True, "found [5.0, 10.0]")]
