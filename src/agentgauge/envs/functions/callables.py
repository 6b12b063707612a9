"""Implementations of the built-in suite's executable functions.

The ``executable`` grader runs the agent's calls to these (in a worker process)
and compares what they return with each task's expected result, as BFCL's
executable categories do. They are small and deterministic on purpose; each
raises `ValueError` on input it cannot serve, so a mistyped argument shows up
as ``exec:raised`` with the exception as evidence.
"""

from __future__ import annotations

from datetime import date

__all__ = ["compound_interest", "convert_length", "days_between", "split_bill"]

#: Metres per unit.
_METRES = {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048, "in": 0.0254}


def convert_length(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit`` (m, km, mi, ft, in)."""
    for unit in (from_unit, to_unit):
        if unit not in _METRES:
            raise ValueError(f"unknown unit {unit!r} (known: {', '.join(_METRES)})")
    return value * _METRES[from_unit] / _METRES[to_unit]


def compound_interest(
    principal: float, annual_rate: float, years: int, compounds_per_year: int = 12
) -> float:
    """The balance after ``years`` at ``annual_rate`` (0.05 for 5%), rounded to cents."""
    if compounds_per_year < 1:
        raise ValueError("compounds_per_year must be at least 1")
    periods = compounds_per_year * years
    return round(principal * (1 + annual_rate / compounds_per_year) ** periods, 2)


def days_between(start: str, end: str) -> int:
    """Days from ``start`` to ``end`` (ISO dates, YYYY-MM-DD)."""
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def split_bill(total: float, people: int, tip_percent: float = 0.0) -> dict[str, float]:
    """The tip and each person's share of ``total`` plus tip, rounded to cents."""
    if people < 1:
        raise ValueError("people must be at least 1")
    tip = round(total * tip_percent / 100, 2)
    return {"tip": tip, "per_person": round((total + tip) / people, 2)}
