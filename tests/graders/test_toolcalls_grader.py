"""The tool_calls grader: AST matching on a trial's tool-call events."""

from __future__ import annotations

from typing import Any

from agentgauge.graders.toolcalls import ToolCallsGrader, infer_category
from agentgauge.schema import Expectations, Task, ToolCallEvent, Trial

FUNCS = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    }
]


def _trial(*calls: tuple[str, dict[str, Any]]) -> Trial:
    events = [ToolCallEvent(name=n, arguments=a) for n, a in calls]
    return Trial(task_id="t", success=False, events=events)


def test_grades_calls_and_reuses_the_compiled_key() -> None:
    key = [{"get_weather": {"city": ["Paris"], "days": [3, ""]}}]
    task = Task(id="t", instruction="", expectations=Expectations(functions=FUNCS, answer_key=key))
    grader = ToolCallsGrader()
    g = grader.grade(task, _trial(("get_weather", {"city": "paris", "days": 3})))
    assert (g.passed, g.evidence["category"]) == (True, "simple")
    g = grader.grade(task, _trial(("get_weather", {"city": "Paris", "days": 3.0})))
    assert (g.passed, g.status) == (False, "type_error:simple")
    assert len(grader._keys) == 1
    # A changed task (new expectations object) is compiled afresh.
    task2 = task.model_copy(update={"expectations": Expectations(functions=FUNCS, answer_key=[])})
    g = grader.grade(task2, _trial(("get_weather", {"city": "Paris"})))
    assert (g.passed, g.status, g.evidence["category"]) == (
        False,
        "irrelevance:called",
        "irrelevance",
    )


def test_parallel_and_language() -> None:
    key = [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}]
    task = Task(id="p", instruction="", expectations=Expectations(functions=FUNCS, answer_key=key))
    calls = [("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Paris"})]
    assert ToolCallsGrader().grade(task, _trial(*calls)).passed is True
    java = Task(
        id="j",
        instruction="",
        metadata={"language": "java"},
        expectations=Expectations(
            functions=FUNCS, answer_key=[{"get_weather": {"city": ["Paris"], "days": [3]}}]
        ),
    )
    g = ToolCallsGrader().grade(java, _trial(("get_weather", {"city": '"Paris"', "days": "3"})))
    assert g.passed is True


def test_infer_category() -> None:
    one = [{"f": {}}]
    assert infer_category(FUNCS, []) == "irrelevance"
    assert infer_category(FUNCS, one) == "simple"
    assert infer_category([*FUNCS, {"name": "g"}], one) == "multiple"
    assert infer_category(FUNCS, [{"f": {}}, {"f": {}}]) == "parallel"
    assert infer_category(FUNCS, [{"f": {}}, {"g": {}}]) == "parallel_multiple"
