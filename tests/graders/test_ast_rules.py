"""BFCL's rules as `ast_match` and compiled keys apply them (public API).

The rules are read once more, naively and from docs/graders.md alone (the
``bfcl_valid`` fixture, tests/graders/conftest.py); the verdicts of both entry
points must equal that reading for every kind of schema and for the values
that sets and hashes confuse (``1 == 1.0 == True``, NaN, ``""``, strings equal
only after normalisation), and a compiled key must give exactly what
`ast_match` gives (verdict, error type and detail), on first use and on reuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from agentgauge.graders.ast import (
    ast_match,
    check_call,
    compile_key,
    literal_eq,
    normalize_string,
)

Valid = Callable[[dict[str, Any], list[Any], Any], bool]

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

# ------------------------------------------------------------ one parameter


def _both(docs: Any, key: Any, calls: Any, category: str = "simple") -> tuple[Any, ...]:
    """``ast_match``'s result, asserted equal to a compiled key's, twice."""
    result = ast_match(docs, calls, key, category)
    compiled = compile_key(docs, key)
    assert compiled.match(calls, category) == result
    assert compiled.match(calls, category) == result  # the sets, once built, answer alike
    return result


@settings(deadline=None, max_examples=1500)
@given(_SCHEMAS, st.lists(_VALUES, min_size=1, max_size=3), _VALUES)
def test_verdicts_follow_the_rules(
    bfcl_valid: Valid, schema: dict[str, Any], options: list[Any], value: Any
) -> None:
    docs = [{"name": "f", "parameters": {"properties": {"p": schema}, "required": []}}]
    valid, error, detail = _both(docs, [{"f": {"p": options}}], [{"f": {"p": value}}])
    assert valid == bfcl_valid(schema, options, value)
    assert (error is None) == valid and (detail == "") == valid


@given(st.text(max_size=12), st.text(max_size=12))
def test_strings_are_equal_exactly_when_their_normal_forms_are(a: str, b: str) -> None:
    assert literal_eq(a, b) == (normalize_string(a) == normalize_string(b))


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


# Dicts and lists judged by structure: acceptable values in BFCL's key
# structure (a dict's values are lists of acceptable values, "" allowing
# omission; lists may hold such dicts).
_LEAF = st.sampled_from([0, 1, 1.0, True, None, "a", " A", "b", "", float("nan")])
_DICT_KEYS = st.sampled_from(["k", "j"])
_KEY_DICT = st.dictionaries(_DICT_KEYS, st.lists(_LEAF, min_size=1, max_size=2), max_size=2)
_NESTED_KEY_DICT = st.dictionaries(
    _DICT_KEYS, st.lists(st.one_of(_LEAF, _KEY_DICT), min_size=1, max_size=2), max_size=2
)
_STRUCTURED_OPTIONS = st.one_of(
    _LEAF,
    st.lists(_LEAF, max_size=2),
    _NESTED_KEY_DICT,
    st.lists(st.one_of(_KEY_DICT, _LEAF, st.lists(_LEAF, max_size=2)), max_size=2),
)
_FLAT_DICT = st.dictionaries(_DICT_KEYS, st.one_of(_LEAF, st.lists(_LEAF, max_size=2)), max_size=2)
_STRUCTURED_VALUES = st.one_of(
    _LEAF,
    st.lists(_LEAF, max_size=2),
    _FLAT_DICT,
    st.dictionaries(_DICT_KEYS, st.one_of(_LEAF, _FLAT_DICT), max_size=2),
    st.lists(st.one_of(_FLAT_DICT, _LEAF, st.lists(_LEAF, max_size=2)), max_size=2),
    st.tuples(_LEAF, _LEAF),
)
_STRUCTURED_SCHEMAS = st.sampled_from(
    [
        {"type": "dict"},
        {"type": "object", "properties": {"k": {"type": "integer"}}},
        {"type": "any"},
        {},
        {"type": "array"},
        {"type": "array", "items": {"type": "dict"}},
        {"type": "array", "items": {"type": "array"}},
        {"type": "array", "items": {"type": "integer"}},
        {"type": "string"},
        {"type": "integer"},
    ]
)


@settings(deadline=None, max_examples=2000)
@given(
    _STRUCTURED_SCHEMAS,
    st.lists(_STRUCTURED_OPTIONS, min_size=1, max_size=3),
    _STRUCTURED_VALUES,
)
def test_structured_values_follow_the_rules(
    bfcl_valid: Valid, schema: dict[str, Any], options: list[Any], value: Any
) -> None:
    """Dicts, lists of dicts, nested and flat lists."""
    docs = [{"name": "f", "parameters": {"properties": {"p": schema}, "required": []}}]
    valid, error, _ = _both(docs, [{"f": {"p": options}}], [{"f": {"p": value}}])
    assert valid == bfcl_valid(schema, options, value)
    assert (error is None) == valid


_NESTED_DOCS = [
    {
        "name": "f",
        "parameters": {
            "properties": {
                "cond": {"type": "dict"},
                "rows": {"type": "array", "items": {"type": "dict"}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "n": {"type": "integer"},
            },
            "required": [],
        },
    }
]
_NESTED_KEY = [
    {
        "f": {
            "cond": [{"city": ["Paris", "paris, fr"], "days": [3, ""]}, ""],
            "rows": [[{"k": [1]}, {"k": [2], "j": ["x", ""]}], ""],
            "tags": [["a", "b"], ["b", "a"], ""],
            "n": [1, ""],
        }
    }
]
_ROWS_KEY = "[[{'k': [1]}, {'k': [2], 'j': ['x', '']}]]"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # found by structure: a normalised string, an omitted optional dict key
        ({"cond": {"city": "PARIS, FR"}}, (True, None, "")),
        ({"rows": [{"k": 1}, {"k": 2.0, "j": "X"}]}, (True, None, "")),
        # a flat list found as written, or not found at all
        ({"tags": ["b", "a"]}, (True, None, "")),
        (
            {"tags": ["c"]},
            (False, "value_error:list", "'tags': ['c'] not in [['a', 'b'], ['b', 'a']]"),
        ),
        # a list or a dict where the schema declares an integer
        ({"n": ["x"]}, (False, "type_error:simple", "'n': expected integer, got list (['x'])")),
        (
            {"n": {"k": 1}},
            (False, "type_error:simple", "'n': expected integer, got dict ({'k': 1})"),
        ),
        # dicts and lists of dicts that fit no acceptable value, explained
        (
            {"cond": {"city": "Lyon"}},
            (
                False,
                "value_error:dict_value",
                "'cond': dict key 'city': 'Lyon' not in ['Paris', 'paris, fr']",
            ),
        ),
        (
            {"cond": {"city": "Paris", "unit": "C"}},
            (False, "value_error:dict_key", "'cond': unexpected dict key 'unit'"),
        ),
        ({"cond": {"days": 3}}, (False, "value_error:dict_key", "'cond': missing dict key 'city'")),
        (
            {"rows": [{"k": 1}, {"k": 3}]},
            (False, "value_error:list", f"'rows': [{{'k': 1}}, {{'k': 3}}] not in {_ROWS_KEY}"),
        ),
        (
            {"rows": [{"k": 1}]},
            (False, "value_error:list", f"'rows': [{{'k': 1}}] not in {_ROWS_KEY}"),
        ),
    ],
)
def test_dicts_and_lists_by_structure(args: dict[str, Any], expected: tuple[Any, ...]) -> None:
    """Verdicts and explanations (those of the implementation before this one,
    which checked them against its reference check)."""
    assert _both(_NESTED_DOCS, _NESTED_KEY, [{"f": args}]) == expected


def test_bfcl_category_names_keep_or_set_the_language() -> None:
    """BFCL's file names map to the categories (``live_`` dropped); only the
    Java and JavaScript names change the language (source literals read)."""
    docs = [{"name": "f", "parameters": {"properties": {"n": {"type": "long"}}}}]
    key = [{"f": {"n": [5]}}]
    compiled = compile_key(docs, key)
    for name in ("simple", "multiple", "live_simple", "live_multiple", "simple_python"):
        assert compiled.match([{"f": {"n": 5}}], name) == (True, None, "")
        assert compiled.match([{"f": {"n": "5L"}}], name)[1] == "type_error:simple"
    for name in ("simple_java", "live_simple_java"):
        assert compiled.match([{"f": {"n": "5L"}}], name) == (True, None, "")
        assert ast_match(docs, [{"f": {"n": "5L"}}], key, name) == (True, None, "")
    with pytest.raises(ValueError, match="unknown category"):
        compiled.match([{"f": {"n": 5}}], "sequential")


# Parallel calls: the key's order is tried first, a call that no output fits
# is reported without the full matching, and the explanation comes from the
# closest output. The reference below pairs by brute force.
_PAR_DOCS = [
    {
        "name": "f",
        "parameters": {
            "properties": {"x": {"type": "integer"}, "s": {"type": "string"}},
            "required": ["x"],
        },
    },
    {"name": "g.h", "parameters": {"properties": {"x": {"type": "integer"}}, "required": []}},
]
_PAR_KEYS = st.sampled_from(
    [
        {"f": {"x": [1], "s": ["a", ""]}},
        {"f": {"x": [2], "s": ["b"]}},
        {"f": {"x": [1, 2], "s": [""]}},
        {"g.h": {"x": [1]}},
        {"g.h": {"x": [2, ""]}},
    ]
)
_PAR_CALLS = st.one_of(
    st.builds(
        lambda name, args: {name: args},
        st.sampled_from(["f", "g.h", "g_h"]),
        st.dictionaries(
            st.sampled_from(["x", "s"]), st.sampled_from([1, 2, "a", " B", None]), max_size=2
        ),
    ),
    st.sampled_from([{"f": "not json"}, {"f": {"x": 1}, "g.h": {}}, "f(x=1)"]),
)


def _brute_force(
    calls: list[Any], key: list[dict[str, Any]], name_equivalence: bool
) -> tuple[bool, str | None, str]:
    """The verdict by definition: expected call i fails when calls 0..i of the
    key cannot all be paired (a maximum matching, scipy's assignment solver),
    explained with the first output of its name that does not fit it, else the
    first output of another name that does not."""
    if len(calls) != len(key):
        return False, "wrong_count", f"expected {len(key)} call(s), got {len(calls)}"
    docs = {d["name"]: d for d in _PAR_DOCS}
    verdicts = [
        [check_call(docs[next(iter(k))], c, k, name_equivalence=name_equivalence) for c in calls]
        for k in key
    ]
    for i in range(len(key)):
        fit = np.array([[v[0] for v in row] for row in verdicts[: i + 1]], dtype=float)
        rows, cols = linear_sum_assignment(-fit)
        if fit[rows, cols].sum() < i + 1:
            break
    else:
        return True, None, ""
    name = next(iter(key[i]))
    same = [isinstance(c, dict) and len(c) == 1 and next(iter(c)) == name for c in calls]
    misfits = [j for j in range(len(calls)) if not verdicts[i][j][0]]
    j = next((j for j in misfits if same[j]), None)
    if j is None:
        j = next(j for j in misfits if not same[j])
    _, err, why = verdicts[i][j]
    return False, err, f"no call matches expected call {i} ({name}): {why}"


@settings(deadline=None, max_examples=1500)
@given(
    st.lists(_PAR_KEYS, min_size=1, max_size=4),
    st.lists(_PAR_CALLS, min_size=1, max_size=4),
    st.booleans(),
    st.sampled_from(["parallel", "live_parallel_multiple"]),
)
def test_parallel_shortcuts_equal_brute_force_pairing(
    key: list[dict[str, Any]], calls: list[Any], name_equivalence: bool, category: str
) -> None:
    expected = _brute_force(calls, key, name_equivalence)
    kw: dict[str, Any] = {"name_equivalence": name_equivalence}
    assert ast_match(_PAR_DOCS, calls, key, category, **kw) == expected
    compiled = compile_key(_PAR_DOCS, key, **kw)
    assert compiled.match(calls, category) == expected
    assert compiled.match(calls, category) == expected


_MULTI_DOC = {
    "name": "f",
    "parameters": {
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string"},
            "c": {"type": "array", "items": {"type": "string"}},
            "d": {"type": "dict"},
        },
        "required": ["a", "zz"],
    },
}


@settings(deadline=None, max_examples=1500)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "a": st.lists(st.sampled_from([1, 2, "x", ""]), min_size=1, max_size=2),
            "b": st.lists(st.sampled_from(["x", " X", "y", ""]), min_size=1, max_size=2),
            "c": st.lists(st.one_of(st.just(""), st.lists(_LEAF, max_size=2)), max_size=2),
            "d": st.lists(st.one_of(st.just(""), _KEY_DICT), min_size=1, max_size=2),
            "e": st.just([1]),
        },
    ),
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e", "zz"]),
        st.one_of(_LEAF, st.lists(_LEAF, max_size=2), _FLAT_DICT),
        max_size=4,
    ),
    st.booleans(),
)
def test_one_call_shortcut_equals_the_direct_check(
    key_args: dict[str, Any], args: dict[str, Any], require_all: bool
) -> None:
    """Several arguments: which error comes first (a missing required
    parameter, then the arguments in the output's order, then a parameter the
    key does not let be omitted) is the same for a compiled key (which looks
    for required parameters only when needed) as for a single check."""
    doc = _MULTI_DOC
    if not require_all:  # no required parameter outside the key
        doc = {**doc, "parameters": {**doc["parameters"], "required": ["a"]}}  # type: ignore[dict-item]
    key = [{"f": key_args}]
    expected = check_call(doc, {"f": args}, key[0])
    compiled = compile_key([doc], key)
    assert compiled.match([{"f": args}]) == expected
    assert compiled.match([{"f": args}], "live_multiple") == expected
    assert ast_match([doc], [{"f": args}], key) == expected


_DOC = {
    "name": "f",
    "parameters": {
        "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["city"],
    },
}
_ANSWER = [{"f": {"city": ["Paris"], "n": [1, ""]}}]


@pytest.mark.parametrize(
    ("calls", "simple"),
    [
        (({"f": {"city": "Paris"}},), (True, None, "")),  # a tuple of calls
        ([{"f": '{"city": "Paris"}'}], (True, None, "")),  # arguments as JSON text
        ([{"f": {"city": "Paris"}, "g": {}}], (False, "malformed_call")),  # two names
        (["f(city='Paris')"], (False, "malformed_call")),  # not a call object
        ([{"f": {"city": "Lyon", "n": 1}}], (False, "value_error:string")),
        ([{"g": {"city": "Paris"}}], (False, "wrong_func_name")),
        ([], (False, "wrong_count")),
    ],
)
def test_unusual_shapes_of_output(calls: Any, simple: tuple[Any, ...]) -> None:
    """Shapes other than a list of ``{name: {arg: value}}`` (kept from the tests
    of the native matcher this implementation replaced)."""
    for category in ("simple", "parallel"):
        result = _both([_DOC], _ANSWER, calls, category)
        if category == "simple":
            assert result[: len(simple)] == simple
