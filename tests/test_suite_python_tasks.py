"""A suite given in Python (a list of tasks or dicts) is checked as a file's tasks are.

Before this change a list went through the task model alone: a retail price written
as text, a state assertion on a path the world never has, or an unknown user_scenario
key loaded, and the retail task's expected final state was never derived from its
reference calls. Each error names ``tasks[i]`` and the field, since there is no file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.suite import as_suite

OK = {"id": "ok", "instruction": "hi", "expectations": {"answer": {"contains": ["hi"]}}}


def retail(**extra: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": "t1",
        "environment": "retail",
        "instruction": "Please cancel order W1001",
        "expectations": {"control": "refuse", "final_state": {}},
    }
    task.update(extra)
    return task


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (
            retail(initial_state={"products": [{"item_id": "1001", "price": "25.00"}]}),
            "tasks[1].initial_state.products.0.price: task 't1': expected a number of US "
            "dollars, got text (write it unquoted: 25.00)",
        ),
        (
            retail(user_scenario={"knwon": {}}),
            "tasks[1].user_scenario.knwon: task 't1': unknown key in a retail user_scenario",
        ),
        (
            retail(environment="retial"),
            "tasks[1].environment: task 't1': unknown environment 'retial'",
        ),
        (
            retail(
                expectations={
                    "state_assertions": [{"path": "orderz.W1001.status", "exists": False}]
                }
            ),
            "tasks[1].expectations.state_assertions.0.path: task 't1': the retail world's "
            "state has no 'orderz'",
        ),
        (
            retail(
                expectations={
                    "reference_calls": [
                        {
                            "name": "cancel_pending_order",
                            "arguments": {"order_id": "W9999", "reason": "ordered by mistake"},
                        }
                    ]
                }
            ),
            "tasks[1].expectations.reference_calls.0: task 't1': reference call 0 "
            "(cancel_pending_order) failed on a fresh environment",
        ),
        (
            {"id": "t1", "instruction": "hi", "expectations": {"answer": {"regex": "("}}},
            "tasks[1].expectations.answer.regex: task 't1': not a valid regular expression",
        ),
        (
            {"id": "t1", "instruction": "hi", "expectations": {"required": ["anwser"]}},
            "tasks[1].expectations.required.0: task 't1': ",
        ),
    ],
)
@pytest.mark.parametrize("as_model", [False, True])
def test_a_python_task_fails_the_checks_a_file_task_fails(
    tmp_path: Path, task: dict[str, Any], message: str, as_model: bool
) -> None:
    given: Any = Task.model_validate(task) if as_model else task
    with pytest.raises(InputError) as caught:
        run([OK, given], "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    assert str(caught.value).startswith(message), str(caught.value)
    assert not (tmp_path / "s.db").exists()


def test_a_python_retail_task_gets_its_final_state_derived() -> None:
    call = {"name": "cancel_pending_order",
            "arguments": {"order_id": "W1001", "reason": "ordered by mistake"}}  # fmt: skip
    suite = as_suite([retail(expectations={"reference_calls": [call]})])
    final = suite.tasks[0].expectations.final_state
    assert final is not None and final["orders"]["W1001"]["status"] == "cancelled"


def test_a_duplicate_python_id_names_both_places() -> None:
    with pytest.raises(InputError) as caught:
        as_suite([OK, {"id": "x", "instruction": "a"}, {**OK}])
    assert str(caught.value) == "tasks[2].id: duplicate task id 'ok' (first defined at tasks[0])"
