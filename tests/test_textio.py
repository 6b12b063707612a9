"""`agentgauge.textio.has_long_integer`: where stored or traced JSON is read with
orjson, which reads an integer past 64 bits as a float, this says when to read it with
Python's reader instead. Its fast pre-check must never miss what the pattern finds."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from agentgauge.textio import _LONG_NUMBER, has_long_integer

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**60, max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8") | st.sampled_from("0123456789,:[ "), max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


@given(_values)
def test_it_says_what_the_pattern_says_and_flags_every_integer_orjson_would_float(
    value: object,
) -> None:
    text = json.dumps(value)
    found = has_long_integer(text)
    assert found == (_LONG_NUMBER.search(text) is not None)
    if not found:  # orjson then reads it exactly as Python's reader does
        assert orjson.loads(text) == json.loads(text)


@given(st.text(max_size=60))
def test_any_text_at_all(text: str) -> None:  # lone surrogates, digits anywhere
    assert has_long_integer(text) == (_LONG_NUMBER.search(text) is not None)


def test_hand_made_cases() -> None:
    assert has_long_integer('{"n": 1180591620717411303425}')
    assert has_long_integer("[-9223372036854775809]")
    assert not has_long_integer('{"id": "call_12345678901234567890"}')  # in a string: after _
    assert not has_long_integer('{"n": 123456789012345678}')  # 18 digits: within 64 bits
