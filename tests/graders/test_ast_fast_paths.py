"""The fast paths of `agentgauge.graders.ast` give the reference's exact result.

`_check_param` reads a parameter's schema and acceptable values on every check
(the reference); `ast_match` judges scalars directly (`_ast_spec.direct`) and
compiled keys through per-parameter sets (`_ast_spec.Spec`). Both must return
the reference's verdict, error type *and* detail, for every kind of schema and
for the values that sets confuse (``1 == 1.0 == True``, NaN, ``""``, strings
equal only after normalisation).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.graders._ast_spec import canon
from agentgauge.graders.ast import _check_param, ast_match, compile_key, normalize_string

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 2, -1]),
    st.sampled_from([0.0, 1.0, 2.0, 2.5, float("nan")]),
    st.sampled_from(["", "a", "A", " a-", "b", "1", "x_var", "Straße", "STRASSE", "It's", 'it"s']),
)
_VALUES = st.one_of(
    _SCALARS,
    st.lists(_SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["k", "j"]), st.lists(_SCALARS, max_size=2), max_size=2),
)
_SCHEMAS = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "float"},
        {"type": "boolean"},
        {"type": "any"},
        {"type": "null"},
        {"type": "dict"},
        {"type": ["integer", "null"]},
        {"type": "weird"},
        {},
        {"type": "array", "items": {"type": "string"}},
        {"type": "array", "items": {"type": "float"}},
        {"type": "array", "items": {"type": "integer"}},
        {"type": "array"},
    ]
)


def _reference(schema: dict[str, Any], options: list[Any], value: Any) -> tuple[Any, ...]:
    err, why = _check_param("p", value, schema, options, "python")
    return (err is None, err, why)


@settings(deadline=None, max_examples=1500)
@given(_SCHEMAS, st.lists(_VALUES, min_size=1, max_size=3), _VALUES)
def test_direct_and_compiled_checks_equal_the_reference(
    schema: dict[str, Any], options: list[Any], value: Any
) -> None:
    docs = [{"name": "f", "parameters": {"properties": {"p": schema}, "required": []}}]
    key = [{"f": {"p": options}}]
    calls = [{"f": {"p": value}}]
    expected = _reference(schema, options, value)
    assert ast_match(docs, calls, key) == expected
    compiled = compile_key(docs, key)
    assert compiled.match(calls) == expected
    assert compiled.match(calls) == expected  # the sets, once built, answer alike


@given(st.text(max_size=12), st.text(max_size=12))
def test_canonical_strings_meet_exactly_when_normalised_strings_do(a: str, b: str) -> None:
    assert (canon(a) == canon(b)) == (normalize_string(a) == normalize_string(b))


@given(st.text(max_size=16))
def test_normalize_string_is_bfcl_normalisation_case_folded(text: str) -> None:
    # BFCL: re.sub(r"[ ,./\-_*^]", "", s).lower().replace("'", '"'); we case-fold.
    bfcl = re.sub(r"[ ,./\-_*^]", "", text).replace("'", '"').casefold()
    assert normalize_string(text) == bfcl


def test_int_float_bool_stay_apart() -> None:
    """Sets compare 1 == 1.0 == True; the checks must not."""
    docs = [{"name": "f", "parameters": {"properties": {"p": {"type": "integer"}}}}]
    key = [{"f": {"p": [1]}}]
    compiled = compile_key(docs, key)
    for value, valid in ((1, True), (True, False), (1.0, False)):
        assert ast_match(docs, [{"f": {"p": value}}], key)[0] is valid
        assert compiled.match([{"f": {"p": value}}])[0] is valid
