"""The BFCL rules read naively, from docs/graders.md alone: the reference the
AST-matching tests hold `agentgauge.graders.ast` to (verdicts only)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

_DECLARED = {"string": "str", "integer": "int", "float": "float", "boolean": "bool"}
_DECLARED |= {"any": "any", "null": "null", "dict": "dict", "object": "dict", "array": "list"}


def _kind(v: Any) -> str:
    for cls, name in ((type(None), "null"), (bool, "bool"), (int, "int"), (float, "float")):
        if isinstance(v, cls):
            return name
    return "str" if isinstance(v, str) else "list" if isinstance(v, list | tuple) else "dict"


def _declared(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):  # ["integer", "null"]: the first non-null
        t = next((x for x in t if x != "null"), "any")
    return _DECLARED.get(t, "any") if isinstance(t, str) else "any"


def _typed(v: Any, schema: dict[str, Any]) -> bool:
    """Strict types, bool apart from int, int accepted for float, through items."""
    want, got = _declared(schema), _kind(v)
    if want in ("any", got) or (want == "float" and got == "int"):
        items = schema.get("items")
        return want != "list" or not isinstance(items, dict) or all(_typed(x, items) for x in v)
    return False


def _equal(v: Any, o: Any) -> bool:
    """Strings normalised, numbers by value, lists in order, dicts key by key."""
    kv, ko = _kind(v), _kind(o)
    if kv == ko == "str":
        return bool(_bfcl_normal(v) == _bfcl_normal(o))
    if {kv, ko} <= {"int", "float"}:
        return bool(v == o)
    if kv != ko:
        return False
    if kv == "list":
        return len(v) == len(o) and all(map(_equal, v, o))
    if kv == "dict":
        return v.keys() == o.keys() and all(_equal(v[k], o[k]) for k in v)
    return bool(v == o)


def _fits(v: Any, o: Any) -> bool:
    """One acceptable value in BFCL's key structure: an acceptable dict lists
    acceptable values per key ("" allowing its omission)."""
    if isinstance(o, dict):
        alts = {k: a if isinstance(a, list) else [a] for k, a in o.items()}
        return (
            isinstance(v, dict)
            and all(k in alts and any(_fits(v[k], a) for a in alts[k]) for k in v)
            and all(k in v or "" in a for k, a in alts.items())
        )
    if isinstance(o, list) and isinstance(v, list | tuple):
        return len(v) == len(o) and all(
            _fits(x, a) if isinstance(a, dict) else _equal(x, a) for x, a in zip(v, o, strict=True)
        )
    return _equal(v, o)


def _bfcl_valid(schema: dict[str, Any], options: list[Any], value: Any) -> bool:
    if _typed(value, schema):
        return any(_fits(value, o) for o in options)
    # The variable rule: the key accepts a value of a type the schema rejects.
    same = [o for o in options if o != "" and _kind(o) == _kind(value) and not _typed(o, schema)]
    return any(bool(value == o) for o in same)


def _bfcl_normal(text: str) -> str:
    # BFCL: re.sub(r"[ ,./\-_*^]", "", s).lower().replace("'", '"'); we case-fold.
    return re.sub(r"[ ,./\-_*^]", "", text).replace("'", '"').casefold()


@pytest.fixture(scope="session")
def bfcl_valid() -> Callable[[dict[str, Any], list[Any], Any], bool]:
    """``bfcl_valid(schema, options, value)``: whether BFCL's rules accept the
    value for a parameter with this schema and these acceptable values."""
    return _bfcl_valid
