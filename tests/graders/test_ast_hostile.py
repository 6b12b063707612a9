"""Hostile model output: a verdict or a ``malformed_call``, never an exception,
a crash or a hang, and explanations of bounded size.

A Python agent can hand the grader anything: arguments nested 200,000 deep
(which segfaulted the native matcher this replaced), cyclic lists and dicts,
megabyte strings, objects of any class. No timing is asserted (speed lives in
benchmarks/); a hang would show as the test's timeout.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.graders.ast import ast_match, check_call, compile_key, literal_eq

DOCS = [
    {
        "name": "f",
        "parameters": {
            "properties": {"x": {"type": "array"}, "s": {"type": "string"}, "a": {}},
            "required": [],
        },
    }
]
KEY = [{"f": {"x": [[1, 2]], "s": ["abc", ""], "a": [1, ""]}}]
MB10 = 10_000_000


def deep(n: int = 200_000) -> list[Any]:
    x: list[Any] = []
    for _ in range(n):
        x = [x]
    return x


def cyclic_list() -> list[Any]:
    a: list[Any] = []
    a.append(a)
    return a


def cyclic_dict() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["k"] = d
    return d


def results(calls: list[Any], key: list[Any] = KEY) -> list[tuple[Any, ...]]:
    """The result through every entry point: ast_match and a compiled key (twice),
    one call as simple, and the same call among parallel ones."""
    out = [ast_match(DOCS, calls, key)]
    compiled = compile_key(DOCS, key)
    out += [compiled.match(calls), compiled.match(calls)]
    parallel = ast_match(
        DOCS, [*calls, {"f": {"s": "abc"}}], [*key, {"f": {"s": ["abc"]}}], "parallel"
    )
    prefix = "no call matches expected call 0 (f): "
    assert parallel[:2] == out[0][:2] and parallel[2] == prefix + out[0][2]
    assert out[1] == out[2] == out[0]
    return out


NESTING = "nested deeper than 100 levels, or cyclic"


@pytest.mark.parametrize("param", ["x", "s", "a"])
def test_an_argument_nested_200000_deep_is_a_malformed_call(param: str) -> None:
    (result, *_) = results([{"f": {param: deep()}}])
    assert result == (False, "malformed_call", f"{param!r}: {NESTING}")


@pytest.mark.parametrize("make", [cyclic_list, cyclic_dict], ids=["list", "dict"])
def test_a_cyclic_argument_is_a_malformed_call(make: Any) -> None:
    (result, *_) = results([{"f": {"a": make()}}])
    assert result == (False, "malformed_call", f"'a': {NESTING}")
    # Inside an acceptable-looking dict, too.
    (result, *_) = results([{"f": {"a": {"k": make()}}}])
    assert result == (False, "malformed_call", f"'a': {NESTING}")


def test_a_shared_structure_too_large_to_read_is_a_malformed_call() -> None:
    """60 levels of [x, x] is 2**60 items when read: refused, not walked."""
    x: list[Any] = []
    for _ in range(60):
        x = [x, x]
    (result, *_) = results([{"f": {"x": x}}])
    assert result == (False, "malformed_call", "'x': more than 100,000 items")


def test_a_deep_or_cyclic_call_itself_is_malformed() -> None:
    for call in (deep(), cyclic_list()):
        valid, error, detail = ast_match(DOCS, [call], KEY)
        assert (valid, error) == (False, "malformed_call")
        assert detail == (
            "a call must be a one-key object {name: {arg: value}}, got <list that cannot be shown>"
        )
    # Arguments as JSON text nested too deep for the JSON parser.
    assert ast_match(DOCS, [{"f": "[" * 200_000}], KEY) == (
        False,
        "malformed_call",
        "arguments of 'f' are not valid JSON",
    )


@pytest.mark.parametrize("text", ["a" * MB10, "é" * MB10], ids=["ascii", "unicode"])
def test_a_10_mb_string_is_judged_and_shown_shortened(text: str) -> None:
    (result, *_) = results([{"f": {"s": text}}])
    valid, error, detail = result
    assert (valid, error) == (False, "value_error:string")
    shown = repr(text)[:1000]
    assert detail == f"'s': {shown}… ({MB10 + 2:,} characters) not in ['abc']"
    # The same text written exactly as an acceptable value passes.
    assert ast_match(DOCS, [{"f": {"s": text}}], [{"f": {"s": [text]}}]) == (True, None, "")


def test_10_mb_names_are_shown_shortened() -> None:
    name = "g" * MB10
    valid, error, detail = ast_match(DOCS, [{name: {"s": "abc"}}], KEY)
    assert (valid, error) == (False, "wrong_func_name") and len(detail) < 1100
    valid, error, detail = ast_match(DOCS, [{"f": {name: 1}}], KEY)
    assert (valid, error) == (False, "unexpected_param") and len(detail) < 1100


def test_a_value_of_normal_size_is_shown_whole() -> None:
    """BFCL's longest argument prints in 341 characters; up to 1,000 are shown."""
    text = "b" * 998  # 1,000 characters with its quotes
    assert ast_match(DOCS, [{"f": {"s": text}}], KEY)[2] == f"'s': {text!r} not in ['abc']"


class Hostile:
    """An object whose own methods fail."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    __hash__ = object.__hash__


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (Hostile(), "'a': <Hostile that cannot be shown> not in [1]"),
        (10**5000, "'a': <int that cannot be shown> not in [1]"),  # too long for repr
        (float("nan"), "'a': nan not in [1]"),  # a NaN equals nothing, not even itself
        ({1, 2}, "'a': {1, 2} not in [1]"),
    ],
    ids=["failing methods", "huge int", "nan", "set"],
)
def test_values_outside_json_are_judged(value: Any, detail: str) -> None:
    (result, *_) = results([{"f": {"a": value}}])
    assert result == (False, "value_error:others", detail)


def test_odd_shapes_of_calls() -> None:
    assert ast_match(DOCS, ["f(x=1)"], KEY)[:2] == (False, "malformed_call")
    assert ast_match(DOCS, [{"f": {1: 2}}], KEY) == (
        False,
        "unexpected_param",
        "unexpected parameter 1",
    )
    assert ast_match(DOCS, [{"f": {}}] * 1_000_000, KEY) == (
        False,
        "wrong_count",
        "expected 1 call(s), got 1000000",
    )
    assert check_call(DOCS[0], {"f": {"a": deep()}}, KEY[0])[1] == "malformed_call"


@pytest.mark.parametrize("language", ["java", "javascript"])
@pytest.mark.parametrize(
    "literal",
    ["[" * 200_000, "[" + "1, " * 3_000_000 + "1]", '"' + "a" * MB10 + '"', "\\" * MB10],
    ids=["deep", "10 MB list", "10 MB string", "10 MB backslashes"],
)
def test_hostile_source_literals_stay_text(language: Any, literal: str) -> None:
    """Java/JavaScript literals too deep or too long to read stay text, which
    an array parameter does not accept."""
    docs = [{"name": "f", "parameters": {"properties": {"x": {"type": "ArrayList"}}}}]
    valid, error, detail = ast_match(
        docs, [{"f": {"x": literal}}], [{"f": {"x": [[1]]}}], language=language
    )
    assert (valid, error) == (False, "type_error:simple") and len(detail) < 1100


def test_literal_eq_on_unreadable_values() -> None:
    assert literal_eq(deep(), deep()) is False
    assert literal_eq(cyclic_list(), cyclic_list()) is False
    assert literal_eq([[1.0]], [[1]]) is True
