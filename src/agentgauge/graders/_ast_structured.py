"""Dicts and lists of dicts judged by structure, for `agentgauge.graders._ast_spec`.

BFCL's key gives a dict parameter's acceptable values as dicts whose values
are themselves lists of acceptable values (``""`` allowing a key's
omission), and a list parameter's as lists that may hold such dicts.
`_ast_reference._check_param` walks that structure on every check (``_dict_match``,
``_value_match``); `Alternatives` reads it once: literal values become
canonical forms in one set (`canon_value`), each acceptable dict a
`DictPattern` with one `Alternatives` per key.
"""

from __future__ import annotations

from typing import Any

from agentgauge.graders._ast_spec import _FALSE, _NULL, _TRUE, canon

__all__ = ["Alternatives", "DictPattern", "alternatives", "canon_value"]

_UNKNOWN: Any = object()  # a value canonical forms cannot represent
_DICT = object()


def canon_value(value: Any) -> Any:
    """A hashable form equal for two values exactly when `ast.literal_eq` holds:
    strings normalised (`canon`), ints and floats as numbers, bools and null
    apart, lists (and tuples) item by item, dicts key by key. `_UNKNOWN` for a
    value of another type."""
    t = type(value)
    if t is str:
        return canon(value)
    if t is int or t is float:
        return value
    if t is bool:
        return _TRUE if value else _FALSE
    if value is None:
        return _NULL
    if t is list or t is tuple:
        items = tuple(map(canon_value, value))
        return _UNKNOWN if _UNKNOWN in items else items
    if t is dict:
        pairs = [(k, canon_value(v)) for k, v in value.items()]
        if any(c is _UNKNOWN for _, c in pairs):
            return _UNKNOWN
        return (_DICT, frozenset(pairs))
    return _UNKNOWN


def _has_nan(value: Any) -> bool:
    if type(value) is float:
        return value != value
    if type(value) is list:
        return any(map(_has_nan, value))
    if type(value) is dict:
        return any(map(_has_nan, value.values()))
    return False


class Alternatives:
    """A list of acceptable values in BFCL's key structure, read once: `accepts`
    mirrors ``any((o != "" or type(v) is str) and ast._value_match(v, o) for o
    in options)`` (a dict against an acceptable dict key by key, each of its
    values against that key's own list of acceptable values; a list against an
    acceptable list item by item; anything else by `ast.literal_eq`)."""

    __slots__ = ("dicts", "lists", "literals")

    def __init__(self, options: list[Any]) -> None:
        # Acceptable values compared by literal_eq, as canonical forms.
        self.literals = frozenset(canon_value(o) for o in options if not _structured(o))
        self.dicts = [DictPattern(o) for o in options if type(o) is dict]
        # Lists with a dict item: one pattern per position.
        self.lists = [
            [DictPattern(a) if type(a) is dict else canon_value(a) for a in o]
            for o in options
            if type(o) is list and _structured(o)
        ]

    def accepts(self, value: Any) -> bool:
        t = type(value)
        if t is dict:
            return any(d.accepts(value) for d in self.dicts)
        if canon_value(value) in self.literals:
            return True
        if (t is list or t is tuple) and self.lists:
            n = len(value)
            for pattern in self.lists:
                if len(pattern) == n and all(
                    (type(v) is dict and p.accepts(v))
                    if type(p) is DictPattern
                    else canon_value(v) == p
                    for v, p in zip(value, pattern, strict=True)
                ):
                    return True
        return False


def _structured(option: Any) -> bool:
    """An acceptable value matched by structure, not literally: a dict, or a
    list with a dict item."""
    return type(option) is dict or (type(option) is list and any(type(a) is dict for a in option))


class DictPattern:
    """One acceptable dict: each key's acceptable values (`ast._dict_match`)."""

    __slots__ = ("keys", "needed")

    def __init__(self, option: dict[str, Any]) -> None:
        self.keys = {k: Alternatives(v if isinstance(v, list) else [v]) for k, v in option.items()}
        # Keys whose acceptable values do not include "" (omission).
        self.needed = [
            k for k, v in option.items() if "" not in (v if isinstance(v, list) else [v])
        ]

    def accepts(self, value: dict[str, Any]) -> bool:
        keys = self.keys
        for k, v in value.items():
            alt = keys.get(k)
            if alt is None or not alt.accepts(v):
                return False
        return all(k in value for k in self.needed)


def alternatives(options: list[Any]) -> Alternatives | None:
    """`Alternatives` for a parameter's non-empty options, or ``None`` when one
    holds a NaN or a value of another type than JSON's (the full check then)."""
    for o in options:
        if _has_nan(o) or canon_value(o) is _UNKNOWN:
            return None
    return Alternatives(options)
