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
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise OutOfBounds(f"{field} must be a whole number, got {value!r}")
    if not 0 <= value <= MAX_COUNT:
        raise OutOfBounds(f"{field} must be between 0 and 2**63 - 1, got {value}")
    return int(value)


def check_amount(field: str, value: Any) -> float | None:
    """``value`` as a float if it is ``None`` or a finite number >= 0; else `OutOfBounds`."""
    if value is None:
        return None
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
        return _plain(value, path, set())
    except (RecursionError, _Cycle):
        return value


class _Cycle(Exception):
    pass


def _plain(value: Any, path: str, seen: set[int]) -> Any:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise OutOfBounds(f"{path} is {value!r}, which JSON has no number for")
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return _plain(float(value), path, seen)
    if isinstance(value, dict | list | tuple):
        if id(value) in seen:
            raise _Cycle
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise OutOfBounds(f"{path} has the key {key!r}; JSON keys are strings")
                    out[key] = _plain(item, f"{path}.{key}", seen)
                return out
            return [_plain(item, f"{path}[{i}]", seen) for i, item in enumerate(value)]
        finally:
            seen.discard(id(value))
    kind = type(value)
    hint = " (use .tolist())" if isinstance(value, np.ndarray) else ""
    raise OutOfBounds(
        f"{path} is a {kind.__module__}.{kind.__qualname__}, which JSON has no type for{hint}"
    )
