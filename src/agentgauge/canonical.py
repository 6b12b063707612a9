"""Canonical JSON: one text per value (sorted keys, no whitespace).

Hashes are taken over this text: a suite's version, and a final state's hash
(tau2-bench compares database hashes the same way). The store writes it too,
and addresses the documents it shares between trials by its SHA-256. Two values
are equal exactly when their canonical texts are.

Non-ASCII characters are kept as they are, except in ``ascii=True`` text (what
the store writes), where they are ``\\uXXXX`` escapes: SQLite keeps text as UTF-8,
and a lone surrogate, which JSON and Python strings allow, has no UTF-8 form.
Values JSON has no type for (a ``datetime``, a ``set``) are written as their
``str()``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json"]

# Encoders built once: json.dumps with options builds one per call.
_UNICODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
).encode
_ASCII = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


def canonical_json(value: Any, *, ascii: bool = False) -> str:
    """``value`` as canonical JSON text; ``ascii=True`` escapes every non-ASCII character."""
    return _ASCII(value) if ascii else _UNICODE(value)
