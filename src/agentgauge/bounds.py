"""What fits in a trial record: the checks a value meets where it enters agentgauge.

A number an agent or a server reports is checked once, where it comes in (the
trial session, a provider's usage report), so that nothing downstream — SQLite,
numpy, the JSON of ``metrics --json`` — discovers it later and takes the run
down with it:

- counts (tokens) are integers in [0, 2**63 - 1]: SQLite's INTEGER is a 64-bit
  signed number, and a larger one makes the insert fail;
- amounts (US dollars, seconds) are finite and >= 0, and so is their running
  total in a trial (two costs of 1e308 add up to ``inf``, which JSON cannot
  write);
- tool-call arguments are plain JSON: numpy scalars (``session.rng`` draws
  them) become the Python numbers their author meant; anything else JSON has
  no type for is refused with the path of the offending value.

Each refusal is an `OutOfBounds` (a `ValueError`) whose message names the field
and the value; the caller decides whose fault it is (the agent's, or the
provider's).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

__all__ = [
    "MAX_COUNT",
    "OutOfBounds",
    "add_amount",
    "check_amount",
    "check_count",
    "plain_json",
]

#: The largest integer SQLite stores (its INTEGER is 64-bit signed).
MAX_COUNT = 2**63 - 1


class OutOfBounds(ValueError):
    """A value that cannot be recorded as it is; the message names field and value."""


def check_count(field: str, value: Any) -> int | None:
    """``value`` if it is ``None`` or an integer in [0, `MAX_COUNT`]; else `OutOfBounds`."""
    if value is None or (type(value) is int and 0 <= value <= MAX_COUNT):
        return value  # the common case, checked first: this runs on every model call
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise OutOfBounds(f"{field} must be a whole number, got {value!r}")
    if not 0 <= value <= MAX_COUNT:
        raise OutOfBounds(f"{field} must be between 0 and 2**63 - 1, got {value}")
    return int(value)


def check_amount(field: str, value: Any) -> float | None:
    """``value`` as a float if it is ``None`` or a finite number >= 0; else `OutOfBounds`."""
    if value is None:
        return None
    if type(value) is float and 0.0 <= value < math.inf:  # the common case, first
        return value
    number = math.nan
    if not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating):
        with contextlib.suppress(OverflowError):  # an int past 1.8e308
            number = float(value)
    if not math.isfinite(number) or number < 0:
        raise OutOfBounds(f"{field} must be a finite number >= 0, got {value!r}")
    return number


def add_amount(field: str, total: float, value: float) -> float:
    """``total + value``, or `OutOfBounds` when the sum is no longer a finite number."""
    result = total + value
    if not math.isfinite(result):
        raise OutOfBounds(
            f"{field} {value!r} would take the trial's total from {total!r} past the "
            "largest float (about 1.8e308)"
        )
    return result


def plain_json(value: Any, path: str = "arguments") -> Any:
    """``value`` with numpy scalars turned into Python numbers and tuples into lists.

    Refuses (`OutOfBounds`, naming the path, e.g. ``arguments.items[2]``) a float
    that is not finite, a key that is not a string, and any object JSON has no
    type for. A value too deep for Python's recursion, or one that contains
    itself, is returned unchanged: the caller's serialiser reports those.
    """
    try:
        return _plain(value, set())
    except _Refused as refused:
        where = path + "".join(
            f"[{step}]" if isinstance(step, int) else f".{step}" for step in reversed(refused.steps)
        )
        raise OutOfBounds(f"{where} {refused.why}") from None
    except (RecursionError, _Cycle):
        return value


class _Cycle(Exception):
    pass


class _Refused(Exception):
    """Raised at the offending value; each container on the way out adds its key, so
    the happy path builds no path strings."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.steps: list[str | int] = []


def _plain(value: Any, seen: set[int]) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if value - value != 0.0:  # inf - inf and nan - nan are nan: not finite
            raise _Refused(f"is {value!r}, which JSON has no number for")
        return value
    if isinstance(value, dict | list | tuple):
        if id(value) in seen:
            raise _Cycle
        seen.add(id(value))
        try:
            return _container(value, seen)
        finally:
            seen.discard(id(value))
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return _plain(float(value), seen)
    if isinstance(value, str | int | float):  # subclasses (an IntEnum, a str enum)
        return value
    hint = " (use .tolist())" if isinstance(value, np.ndarray) else ""
    raise _Refused(f"is a {kind.__module__}.{kind.__qualname__}, which JSON has no type for{hint}")


def _container(value: dict[Any, Any] | list[Any] | tuple[Any, ...], seen: set[int]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused(f"has the key {key!r}; JSON keys are strings")
            try:
                out[key] = _plain(item, seen)
            except _Refused as refused:
                refused.steps.append(key)
                raise
        return out
    items = []
    for i, item in enumerate(value):
        try:
            items.append(_plain(item, seen))
        except _Refused as refused:
            refused.steps.append(i)
            raise
    return items
