"""The reference check of one argument, with BFCL semantics (for
`agentgauge.graders.ast`).

`_check_param` reads a parameter's JSON schema and its acceptable values on
every call and decides as BFCL's checker does (see `agentgauge.graders.ast`
for the rules and where we depart from BFCL). It is the slow path: the
per-parameter sets of `_ast_spec` and the structure matchers of
`_ast_structured` answer most values without it, and the tests hold every
fast path to this module's verdict, error type and detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from agentgauge.graders._ast_spec import DELETE, QUOTE, declared, kind_of
from agentgauge.graders._literals import parse_literal

Language = Literal["python", "java", "javascript"]


def normalize_string(text: str) -> str:
    """BFCL's string standardisation: drop spaces and ``,./-_*^``, ``'`` -> ``"``,
    case-fold (BFCL lowers; case-folding also equates e.g. ``ß`` and ``ss``)."""
    if text.isascii():  # one bytes.translate: str.translate deletes slowly
        return text.encode().translate(QUOTE, DELETE).lower().decode()
    return text.translate(_TABLE).casefold()


_TABLE = str.maketrans({**dict.fromkeys(" ,./-_*^"), "'": '"'})
_kind = kind_of
_declared = declared


def _type_ok(value: Any, schema: Mapping[str, Any] | None) -> bool:
    """Strict JSON typing, recursive through ``items``; int is accepted for float
    at every depth (BFCL only does so at the top level)."""
    want = _declared(schema)
    got = _kind(value)
    if want == "any":
        return True
    if want == "float":
        return got in ("float", "int")
    if got != want:
        return False
    if want == "list" and schema is not None and isinstance(schema.get("items"), Mapping):
        return all(_type_ok(v, schema["items"]) for v in value)
    return True


def literal_eq(value: Any, expected: Any) -> bool:
    """Equality with BFCL's string normalisation, strict bools, and ints equal to
    floats of the same value (JSON does not distinguish ``1`` from ``1.0``)."""
    vk, ek = _kind(value), _kind(expected)
    if vk == "str" and ek == "str":
        return bool(normalize_string(value) == normalize_string(expected))
    if vk in ("int", "float") and ek in ("int", "float"):
        return bool(value == expected)
    if vk != ek:
        return False
    if vk == "list":
        return len(value) == len(expected) and all(
            literal_eq(a, b) for a, b in zip(value, expected, strict=True)
        )
    if vk == "dict":
        return value.keys() == expected.keys() and all(
            literal_eq(value[k], expected[k]) for k in value
        )
    return bool(value == expected)


def _acceptables(options: Any) -> list[Any]:
    return list(options) if isinstance(options, list) else [options]


def _dict_match(value: Mapping[str, Any], key: Mapping[str, Any]) -> tuple[str | None, str]:
    """A dict against one acceptable dict whose values are lists of acceptables."""
    for k, v in value.items():
        if k not in key:
            return "value_error:dict_key", f"unexpected dict key {k!r}"
        opts = _acceptables(key[k])
        if not any((o != "" or type(v) is str) and _value_match(v, o) for o in opts):
            return "value_error:dict_value", f"dict key {k!r}: {v!r} not in {opts!r}"
    for k, opts in key.items():
        if k not in value and "" not in _acceptables(opts):
            return "value_error:dict_key", f"missing dict key {k!r}"
    return None, ""


def _value_match(value: Any, acceptable: Any) -> bool:
    """One value against one acceptable value (recursive key structure)."""
    if isinstance(acceptable, dict) and isinstance(value, dict):
        return _dict_match(value, acceptable)[0] is None
    if isinstance(acceptable, list) and isinstance(value, list | tuple):
        return len(value) == len(acceptable) and all(
            _value_match(v, a) if isinstance(a, dict) else literal_eq(v, a)
            for v, a in zip(value, acceptable, strict=True)
        )
    return literal_eq(value, acceptable)


def _check_param(
    param: str,
    value: Any,
    schema: Mapping[str, Any],
    options: list[Any],
    language: Language,
    explain: bool = True,
) -> tuple[str | None, str]:
    if language != "python" and isinstance(value, str):
        # Java/JS values arrive as source literals; ``any`` keeps the text as BFCL does.
        declared = _declared(schema)
        if declared == "str":
            value = _unquote(value)
        elif declared != "any":
            value = parse_literal(value, language)
    non_empty = [o for o in options if o != ""]
    want = _declared(schema)
    if not _type_ok(value, schema):
        # BFCL's "variable" rule: the key lists a value of another type than the
        # schema says (a variable name for an int, null for an optional, ...).
        variable = [o for o in non_empty if _kind(o) == _kind(value) and not _type_ok(o, schema)]
        if variable:
            if any(_strict_eq(value, o) for o in variable):
                return None, ""
            why = f"{param!r}: {value!r} not in {non_empty!r}" if explain else ""
            return "value_error:others", why
        nested = want == "list" and _kind(value) == "list"
        why = (
            f"{param!r}: expected {schema.get('type')}, got {_kind(value)} ({value!r})"
            if explain
            else ""
        )
        return ("type_error:nested" if nested else "type_error:simple"), why
    # A string may also equal "" itself (as BFCL compares it): giving an empty
    # string where omission is allowed is accepted.
    candidates = options if type(value) is str else non_empty
    if any(_value_match(value, o) for o in candidates):
        return None, ""
    kind = _kind(value)
    if kind == "dict":
        errors = [_dict_match(value, o) for o in non_empty if isinstance(o, dict)] or [
            ("value_error:dict_value", "no acceptable dict")
        ]
        err, why = errors[0]
        return err, f"{param!r}: {why}"
    error = {"str": "value_error:string", "list": "value_error:list"}.get(
        kind, "value_error:others"
    )
    return error, f"{param!r}: {value!r} not in {non_empty!r}" if explain else ""


def _strict_eq(a: Any, b: Any) -> bool:
    return _kind(a) == _kind(b) and bool(a == b)


def _unquote(text: str) -> str:
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return text
