"""Shape checks on a JSON document a user hands us, with errors naming the element.

Foreign result files (tau-bench results, Inspect logs) are JSON documents
rather than lines, so the place a user can find is the element path
(``[3].traj[2].role``, ``messages[2].tool_calls[0].function``). A hostile
file may hold anything anywhere, so every value is checked before it is
used, and a failure is one `InputError`, never an ``AttributeError``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

from agentgauge.errors import InputError, first_error
from agentgauge.schema import INT64_MAX

__all__ = ["Shape", "finite", "kind", "shown"]

M = TypeVar("M", bound=BaseModel)


class Shape:
    """Checks on the values of one document, failing as ``FILE: where: reason``."""

    #: Added to "expected a string, got a list": what a list there usually means.
    list_hint = ""

    def __init__(self, path: str | Path) -> None:
        self.path = path

    def fail(self, where: str, reason: str) -> NoReturn:
        raise InputError(reason, file=self.path, field=where or None)

    def required(self, obj: dict[str, Any], key: str, where: str) -> Any:
        """``obj[key]``, failing at ``where`` when the key is absent: a default in its
        place (``""`` for a role, ``{}`` for a call's function) stored a made-up value."""
        if key not in obj:
            self.fail(where, "required field is missing")
        return obj[key]

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        """An object, or ``{}`` for a missing or null one."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {kind(value)}")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        """A list, or ``[]`` for a missing or null one."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(where, f"expected a list, got {kind(value)}")
        return value

    def text(self, value: Any, where: str, *, optional: bool = True) -> str | None:
        if value is None and optional:
            return None
        if isinstance(value, list):
            self.fail(where, f"expected a string, got a list{self.list_hint}")
        if not isinstance(value, str):
            self.fail(where, f"expected a string, got {kind(value)}")
        return value

    def number(self, value: Any, where: str, *, minimum: float | None = 0) -> float | None:
        """A finite JSON number (at least ``minimum`` when given), or ``None`` for null."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(where, f"expected a number, got {kind(value)}")
        if not finite(value):
            self.fail(where, "must be a finite number")
        if minimum is not None and value < minimum:
            self.fail(where, f"must be at least {minimum:g}, got {shown(value)}")
        return float(value)

    def integer(self, value: Any, where: str, *, minimum: int = 0) -> int | None:
        """A JSON integer within what the store holds, or ``None`` for null."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"expected an integer, got {kind(value)}")
        if not minimum <= value <= INT64_MAX:
            self.fail(where, f"must be an integer from {minimum} to 2^63 - 1, got {shown(value)}")
        return value

    def validated(self, where: str, model: type[M], /, **values: Any) -> M:
        """``model(**values)``, with a pydantic error reported under ``where``."""
        try:
            return model(**values)
        except ValidationError as exc:
            field, reason = first_error(exc, metadata_hint=False)
            self.fail(f"{where}.{field}" if field and where else field or where, reason)


def kind(value: Any) -> str:
    """What a JSON value is, in words for an error message."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


def finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)  # an int past a float's range raises
    except OverflowError:
        return False


def shown(value: Any) -> str:
    """A value as an error message quotes it: short, and never a 4,000-digit integer."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return "a huge integer"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
