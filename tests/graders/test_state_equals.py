"""A state assertion's ``equals`` compares JSON values: numbers by value, booleans strictly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.graders.state import failed_assertions
from agentgauge.schema import StateAssertion
from agentgauge.suite import load_suite

COUNTER = """tasks:
  - id: add3
    environment: agentgauge.testing.worlds:make_counter_env
    instruction: Please add 3
    expectations:
      state_assertions: [{path: counter, equals: 3.0}]
"""


def test_a_whole_float_equals_the_integer_a_world_keeps(tmp_path: Path) -> None:
    # Compared as canonical JSON texts, "3.0" != "3": the agent that added 3 failed
    # with "counter: expected 3.0, got 3".
    suite = tmp_path / "suite.yaml"
    suite.write_text(COUNTER)
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(suite), "--store", str(tmp_path / "s.db"),
         "--run-id", "r", "--agent", "agentgauge.testing.worlds:counting_agent"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "1 trial, success 100.0%" in out.stdout + out.stderr


def test_a_retail_amount_written_as_an_integer_holds_at_load(tmp_path: Path) -> None:
    # Refused at load: "refunds.F1.amount: expected 85, got 85.0".
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks:\n  - id: c\n    environment: retail\n    instruction: Cancel W1001\n"
        "    expectations:\n      reference_calls:\n"
        "        - {name: cancel_pending_order, arguments: {order_id: W1001, "
        "reason: no longer needed}}\n"
        "      state_assertions: [{path: refunds.F1.amount, equals: 85}]\n"
    )
    assert load_suite(suite).tasks[0].expectations.state_assertions[0].equals == 85


@pytest.mark.parametrize(
    ("state", "equals", "holds"),
    [
        (3, 3.0, True),
        (85.0, 85, True),
        ({"a": [1, 2.5]}, {"a": [1.0, 2.5]}, True),
        ({"1": 2}, {1: 2.0}, True),  # YAML's integer key, JSON's text one
        (True, 1, False),
        (1, True, False),
        (0, False, False),
        (False, False, True),
        ("3", 3, False),
        ("Pending", "pending", False),
        ([1, 2], [1, 2, 3], False),
        (None, None, True),
        ({"a": 1}, {"a": 1, "b": None}, False),
    ],
)
def test_equals_compares_values(state: object, equals: object, holds: bool) -> None:
    assertion = StateAssertion(path="x", equals=equals)
    assert (failed_assertions({"x": state}, [assertion]) == []) is holds
