"""The native path of AST matching (graders/_ast_native.c) gives the pure-Python
path's exact result: verdict, error type and detail.

`CompiledKey.match` is native where the module is built: it decides what the
compiled lookup sets decide and hands the rest to the Python `match`
(``ast._python_match``). Here every output is checked three ways: natively,
by the Python `match` alone (the reference the C code follows), and by
`ast_match` (the key read afresh).
CI sets ``AGENTGAUGE_REQUIRE_NATIVE``, so there the module must be built.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.graders import ast as ast_module
from agentgauge.graders.ast import CompiledKey, ast_match, compile_key
from agentgauge.graders.bfcl_data import SINGLE_TURN, load_category, reference_calls

needs_native = pytest.mark.skipif(
    not ast_module.NATIVE and not os.environ.get("AGENTGAUGE_REQUIRE_NATIVE"),
    reason="the native AST matcher is not built here (no C compiler when installed?); "
    "the pure-Python path is tested everywhere else",
)

_KEYED = [
    c for c in SINGLE_TURN if "relevance" not in c and c not in ("simple_java", "simple_javascript")
]


@needs_native
def test_the_native_path_is_in_use() -> None:
    assert ast_module.NATIVE
    assert CompiledKey.match is not ast_module._python_match
    assert "compiled key" in (CompiledKey.match.__doc__ or "")


def _pure(key: CompiledKey, calls: Any, category: str) -> tuple[bool, str | None, str]:
    """The Python `match` (no native code on its path)."""
    return ast_module._python_match(key, calls, category)


def _variants(value: Any) -> Iterator[Any]:
    """Values near `value` that take every branch: as written, normalised
    strings, other types, the variable rule, flat and structured containers."""
    if isinstance(value, bool):
        yield from (not value, int(value), None, "true")
    elif isinstance(value, int):
        yield from (value + 1, float(value), float(value) + 0.5, str(value), None, True)
    elif isinstance(value, float):
        yield from (int(value), value + 0.5, str(value), float("nan"), None)
    elif isinstance(value, str):
        yield from (
            f"{value}-x",
            value.upper(),
            f" {value}. ",
            value.replace("a", "á"),
            "Straße",
            "",
            None,
            5,
            [value],
        )
    elif isinstance(value, list):
        yield from (value[::-1], [], [*value, value[0]] if value else [1], [str(v) for v in value])
        yield [None]
        yield [[v] for v in value]
    elif isinstance(value, dict):
        yield {}
        yield {**value, "zz_extra": 1}
        for k in list(value)[:1]:
            yield {**value, k: None}
            yield {**value, k: f"{value[k]}-x"}
        yield "not a dict"
    else:
        yield from ("x", 0, [], {})


def _outputs(calls: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The reference output, then perturbations of its first two arguments in
    each call, missing and extra arguments, a wrong name, and for several calls
    their reverse order and one call fewer."""
    yield calls
    for c, call in enumerate(calls):
        ((name, args),) = call.items()
        for k in list(args)[:2]:
            for v in _variants(args[k]):
                out = copy.deepcopy(calls)
                out[c][name][k] = v
                yield out
            out = copy.deepcopy(calls)
            del out[c][name][k]
            yield out
        out = copy.deepcopy(calls)
        out[c][name]["zz_extra"] = "x"
        yield out
        yield [*calls[:c], {f"{name}_other": args}, *calls[c + 1 :]]
    if len(calls) > 1:
        yield calls[::-1]
        yield calls[1:]


@needs_native
@pytest.mark.parametrize("category", _KEYED)
def test_bfcl_outputs_give_the_python_result(shared_data: Path, category: str) -> None:
    """Every BFCL single-turn entry: its reference output and ~30 perturbations
    of it, each checked natively (twice: the first use builds the lookup sets),
    by the Python `match`, and by `ast_match`."""
    checked = 0
    entries = load_category(shared_data / "bfcl", category)
    for entry in entries:
        key = compile_key(entry.functions, entry.answer)
        for calls in _outputs(reference_calls(entry.answer)):
            fresh = json.loads(json.dumps(calls))  # no string shared with the key
            expected = ast_match(entry.functions, fresh, entry.answer, category)
            assert key.match(fresh, category) == expected, (entry.id, calls)
            assert key.match(fresh, category) == expected, (entry.id, calls)
            assert _pure(key, fresh, category) == expected, (entry.id, calls)
            checked += 1
    assert checked >= 10 * len(entries) > 0


_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 2, 1.0, 2.5, float("nan")]),
    st.sampled_from(["", "a", "A", " a-", "b", "Straße", "STRASSE", "It's", 'it"s', "é"]),
)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["k", "j"]), inner, max_size=2),
    ),
    max_leaves=6,
)
_SCHEMA = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "float"},
        {"type": "boolean"},
        {"type": "any"},
        {"type": "null"},
        {"type": "dict"},
        {"type": ["integer", "null"]},
        {"type": "array", "items": {"type": "string"}},
        {"type": "array", "items": {"type": "dict"}},
        {"type": "array", "items": {"type": "array"}},
        {"type": "array"},
        {"type": "weird"},
        {},
    ]
)
_OPTIONS = st.lists(
    st.one_of(
        _LEAF,
        st.lists(_LEAF, max_size=3),
        st.dictionaries(st.sampled_from(["k", "j"]), st.lists(_LEAF, max_size=2), max_size=2),
        st.lists(
            st.dictionaries(st.sampled_from(["k", "j"]), st.lists(_LEAF, max_size=2), max_size=2),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=3,
)


@needs_native
@settings(deadline=None, max_examples=1500)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.tuples(_SCHEMA, _OPTIONS), max_size=3),
    st.lists(
        st.dictionaries(st.sampled_from(["a", "b", "c", "z"]), _VALUE, max_size=3),
        min_size=1,
        max_size=3,
    ),
    st.lists(st.sampled_from(["a", "b", "c", "z"]), max_size=2),
    st.sampled_from(["simple", "live_multiple", "parallel", "parallel_multiple"]),
)
def test_generated_calls_give_the_python_result(
    params: dict[str, tuple[dict[str, Any], list[Any]]],
    outputs: list[dict[str, Any]],
    required: list[str],
    category: str,
) -> None:
    """Random schemas, keys (nested dicts and lists, "" for omission, NaN) and
    calls (one, or several of one function in parallel), each output matched
    three times natively (sets built on first use) against the Python `match`."""
    doc = {
        "name": "f",
        "parameters": {
            "properties": {p: schema for p, (schema, _) in params.items()},
            "required": required,
        },
    }
    parallel = "parallel" in category
    n = len(outputs) if parallel else 1
    answer = [{"f": {p: options for p, (_, options) in params.items()}}] * n
    calls = [{"f": args} for args in outputs[:n]]
    key = compile_key([doc], answer)
    expected = _pure(compile_key([doc], answer), calls, category)
    for _ in range(3):
        assert key.match(json.loads(json.dumps(calls)), category) == expected
    assert ast_match([doc], calls, answer, category) == expected


_DOC = {
    "name": "f",
    "parameters": {
        "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["city"],
    },
}
_ANSWER = [{"f": {"city": ["Paris"], "n": [1, ""]}}]


@needs_native
@pytest.mark.parametrize(
    "calls",
    [
        ({"f": {"city": "Paris"}},),  # a tuple of calls
        [{"f": '{"city": "Paris"}'}],  # arguments as JSON text
        [{"f": {"city": "Paris"}, "g": {}}],  # two names in one call
        ["f(city='Paris')"],  # not a call object
        [{"f": {"city": "Lyon", "n": 1}}],
        [{"g": {"city": "Paris"}}],
        [],
    ],
)
def test_unusual_shapes_are_left_to_python(calls: Any) -> None:
    key = compile_key([_DOC], _ANSWER)
    for category in ("simple", "parallel"):
        expected = ast_match([_DOC], calls, _ANSWER, category)
        assert key.match(calls, category) == expected
        assert key.match(calls, category=category) == expected  # by keyword: Python
        assert _pure(key, calls, category) == expected


@needs_native
def test_subclasses_and_bound_methods_keep_the_result() -> None:
    class Key(CompiledKey):
        pass

    calls = [{"f": {"city": "paris, ", "n": 2}}]
    expected = ast_match([_DOC], calls, _ANSWER)
    assert expected[1] == "value_error:others"
    assert Key([_DOC], _ANSWER).match(calls) == expected  # another class: Python
    key = compile_key([_DOC], _ANSWER)
    bound = key.match
    assert bound(calls) == expected
    assert CompiledKey.match(key, calls, "simple") == expected
    with pytest.raises(TypeError):
        key.match()


def test_pure_python_can_be_chosen() -> None:
    code = (
        "from agentgauge.graders import ast\n"
        "from agentgauge.graders.ast import compile_key\n"
        "k = compile_key([{'name': 'f', 'parameters': {'properties': {'x': {'type': 'string'}}}}],"
        " [{'f': {'x': ['A']}}])\n"
        "print(ast.NATIVE, k.match([{'f': {'x': 'a'}}]))"
    )
    env = {**os.environ, "AGENTGAUGE_PURE_PYTHON": "1"}
    env.pop("AGENTGAUGE_REQUIRE_NATIVE", None)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False (True, None, '')"


def test_a_missing_build_is_silent_and_a_broken_one_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    def broken(name: str) -> Any:
        raise ImportError("undefined symbol: f")

    monkeypatch.delenv("AGENTGAUGE_REQUIRE_NATIVE", raising=False)
    monkeypatch.setattr(ast_module.importlib, "import_module", missing)
    assert ast_module._native_module() is None
    monkeypatch.setattr(ast_module.importlib, "import_module", broken)
    with pytest.warns(RuntimeWarning, match="undefined symbol"):
        assert ast_module._native_module() is None
    monkeypatch.setenv("AGENTGAUGE_REQUIRE_NATIVE", "1")
    with pytest.raises(ImportError, match="undefined symbol"):
        ast_module._native_module()
    monkeypatch.setattr(ast_module.importlib, "import_module", missing)
    with pytest.raises(ModuleNotFoundError):
        ast_module._native_module()
