"""The checks of `agentgauge.bounds`, value by value (the end-to-end runs are in
tests/harness/test_poison.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentgauge.bounds import (
    MAX_COUNT,
    OutOfBounds,
    add_amount,
    check_amount,
    check_count,
    plain_json,
)


def test_counts_fit_a_signed_64_bit_integer() -> None:
    assert MAX_COUNT == 9_223_372_036_854_775_807
    assert check_count("n", MAX_COUNT) == MAX_COUNT
    assert check_count("n", np.int64(7)) == 7 and type(check_count("n", np.int64(7))) is int
    assert check_count("n", None) is None
    for bad in (MAX_COUNT + 1, 2**64, -1, 1.5, True, "3"):
        with pytest.raises(OutOfBounds, match=r"^n must be"):
            check_count("n", bad)


def test_amounts_are_finite_and_not_negative() -> None:
    assert check_amount("usd", 1.7e308) == 1.7e308
    assert check_amount("usd", 3) == 3.0 and check_amount("usd", np.float32(0.5)) == 0.5
    for bad in (float("inf"), float("nan"), -0.01, 10**400, True, "1"):
        with pytest.raises(OutOfBounds, match=r"^usd must be a finite number >= 0"):
            check_amount("usd", bad)


def test_a_sum_past_the_largest_float_is_refused() -> None:
    assert add_amount("usd", 1e308, 7e307) == 1.7e308
    with pytest.raises(OutOfBounds, match=r"usd 1e\+308 would take the trial's total from 1e\+308"):
        add_amount("usd", 1e308, 1e308)


def test_numpy_scalars_become_python_values() -> None:
    rng = np.random.default_rng(0)
    value = {"n": rng.integers(5, 6), "x": np.float64(0.25), "b": np.bool_(True), "t": (1, 2)}
    plain = plain_json(value)
    assert plain == {"n": 5, "x": 0.25, "b": True, "t": [1, 2]}
    assert [type(plain[k]) for k in ("n", "x", "b")] == [int, float, bool]


class Thing:
    pass


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": [1, {"b": Thing()}]}, f"arguments.a[1].b is a {__name__}.Thing"),
        ({"a": np.arange(3)}, "arguments.a is a numpy.ndarray, which JSON has no type for"),
        ({"a": [float("nan")]}, "arguments.a[0] is nan, which JSON has no number for"),
        ({"a": {1: "x"}}, "arguments.a has the key 1; JSON keys are strings"),
        ({"a": np.float64("inf")}, "arguments.a is inf"),
    ],
)
def test_other_values_are_refused_by_path(value: Any, message: str) -> None:
    with pytest.raises(OutOfBounds) as refused:
        plain_json(value)
    assert str(refused.value).startswith(message)


def test_cycles_and_deep_values_are_left_to_the_serialiser() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert plain_json({"a": cyclic})["a"] is cyclic
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert plain_json({"a": deep})["a"] is deep
