"""Canonical JSON: one text per value (sorted keys, no whitespace).

Hashes are taken over this text: a suite's version, and a final state's hash
(tau2-bench compares database hashes the same way). The store writes it too,
and addresses the documents it shares between trials by its SHA-256. Two values
are equal exactly when their canonical texts are.

Non-ASCII characters are kept as they are, except in ``ascii=True`` text (what
the store writes), where they are ``\\uXXXX`` escapes: SQLite keeps text as UTF-8,
and a lone surrogate, which JSON and Python strings allow, has no UTF-8 form.
Values JSON has no type for (a ``datetime``, a ``set``) are written as their
``str()``. A float that is not finite (infinity, NaN) is refused with a
``ValueError`` naming where it is: JSON has no number for it, and the text
``Infinity`` that Python's encoder would write is refused by SQLite's JSON, which
then took the store for damaged.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json"]

# Encoders built once: json.dumps with options builds one per call.
_UNICODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str
).encode
_ASCII = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), allow_nan=False, default=str
).encode


def canonical_json(value: Any, *, ascii: bool = False) -> str:
    """``value`` as canonical JSON text; ``ascii=True`` escapes every non-ASCII character.
    A float that is not finite raises ``ValueError`` naming its path (``metadata.x``)."""
    try:
        return _ASCII(value) if ascii else _UNICODE(value)
    except ValueError as exc:
        if not str(exc).startswith("Out of range float"):
            raise
        found = _not_finite(value, "")
        where, number = found if found is not None else ("", float("nan"))
        raise ValueError(
            f"{where or 'value'}: is {number!r}, which JSON has no number for"
        ) from None


def _not_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The path and value of the first float in ``value`` that is not finite."""
    if isinstance(value, float):
        return (path, value) if value - value != 0.0 else None  # inf - inf is nan
    if isinstance(value, dict):
        steps: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        steps = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for step, item in steps:
        if (found := _not_finite(item, step)) is not None:
            return found
    return None
