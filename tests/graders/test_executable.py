"""The executable grader: comparisons by hand, real calls in the worker process
(raising, hanging, hostile results), function names, parallel calls, environment
tools, the built-in executable tasks, and a store round trip of the grades."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.errors import InputError
from agentgauge.graders import get_grader, grade_trial
from agentgauge.graders.exec_runner import Executor
from agentgauge.graders.executable import result_difference
from agentgauge.schema import (
    ExecutableSpec,
    Expectations,
    Run,
    Task,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.store import Store
from agentgauge.suite import load_suite

# A module of callables, written once per session to a folder on the import path.
MODULE = "agentgauge_exec_fixture"
SOURCE = """
import os, sys

def add(a, b):
    return a + b

def pair(x):
    return (x, [x, {"k": x}])

def whole(x):
    return float(x)

def fail(x):
    raise ValueError(f"cannot use {x!r}")

def spin():
    while True:
        pass

def huge():
    return "x" * 2_000_000

def aset():
    return {1, 2}

def nan():
    return float("nan")

def vanish():
    os._exit(3)

def chatty():
    print("not the protocol")
    sys.stdout.write("{}\\n")
    return 7

def bad_message():
    class Hostile(Exception):
        def __str__(self):
            raise RuntimeError("no")
    raise Hostile()
"""


@pytest.fixture(scope="module", autouse=True)
def callables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    folder = tmp_path_factory.mktemp("callables")
    (folder / f"{MODULE}.py").write_text(textwrap.dedent(SOURCE))
    sys.path.insert(0, str(folder))
    yield
    sys.path.remove(str(folder))


def ref(name: str) -> str:
    return f"{MODULE}:{name}"


def task(expected: list[Any], *, functions: dict[str, str] | None = None, **spec: Any) -> Task:
    fns = functions if functions is not None else {"add": ref("add")}
    return Task(
        id="t",
        instruction="compute",
        expectations=Expectations(
            executable=ExecutableSpec(functions=fns, expected=expected, **spec)
        ),
    )


def calls(*pairs: tuple[str, dict[str, Any]]) -> Trial:
    events = [ToolCallEvent(name=n, arguments=a, call_id=f"c{i}") for i, (n, a) in enumerate(pairs)]
    return Trial(task_id="t", success=False, events=list(events))


def grade(t: Task, trial: Trial) -> Any:
    return get_grader("executable").grade(t, trial)


# --------------------------------------------------------------------------- comparisons


def test_numeric_tolerance_is_relative_and_inclusive_at_twenty_percent() -> None:
    # expected 100, tolerance 0.2: |r - 100| <= 0.2 * 100 = 20, so [80, 120] passes.
    for r in (100, 120, 80, 119.99, 80.01):
        assert result_difference(r, 100, "numeric", 0.2) is None, r
    for r in (120.01, 79.99, 0, -100):
        assert result_difference(r, 100, "numeric", 0.2) is not None, r
    # Negative expected: |r - (-50)| <= 10, so [-60, -40].
    assert result_difference(-60, -50, "numeric", 0.2) is None
    assert result_difference(-39.9, -50, "numeric", 0.2) is not None
    # Expected 0: any tolerance times 0 is 0, so only 0 passes.
    assert result_difference(0.0, 0, "numeric", 0.2) is None
    assert result_difference(1e-12, 0, "numeric", 0.2) is not None
    # Tolerance 0 is equality by value.
    assert result_difference(36.00000000000001, 36, "numeric", 0.0) is not None
    assert result_difference(36.00000000000001, 36, "numeric", 0.001) is None


def test_numeric_applies_inside_structures_and_names_the_path() -> None:
    expected = {"total": 100, "items": [10, "a"]}
    assert result_difference({"items": [11.9, "a"], "total": 81}, expected, "numeric") is None
    found = result_difference({"items": [12.5, "a"], "total": 100}, expected, "numeric")
    assert found is not None and found.startswith("$.items[0]") and "25.0% off" in found
    assert result_difference({"items": [10, "b"], "total": 100}, expected, "numeric") is not None


def test_exact_tells_int_from_float_and_bool_from_int_structural_does_not() -> None:
    assert result_difference(1.0, 1, "exact") is not None
    assert result_difference(1.0, 1, "structural") is None
    assert result_difference(True, 1, "exact") is not None
    assert result_difference(True, 1, "structural") is not None  # a bool is never a number
    assert result_difference(1, True, "numeric") is not None
    assert result_difference("1", 1, "structural") is not None
    assert result_difference(None, None, "exact") is None


def test_structural_ignores_key_order_but_not_list_order_or_keys() -> None:
    assert result_difference({"b": 2, "a": [1, 2]}, {"a": [1, 2], "b": 2}, "exact") is None
    assert result_difference([2, 1], [1, 2], "structural") is not None
    found = result_difference({"a": 1, "c": 2}, {"a": 1, "b": 2}, "structural")
    assert found is not None and "missing ['b']" in found and "unexpected ['c']" in found
    assert result_difference([1, 2, 3], [1, 2], "structural") == "$: expected 2 items, got 3"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON, JSON, st.sampled_from(["exact", "structural", "numeric"]))
def test_comparison_never_raises_and_a_value_matches_itself(a: Any, b: Any, match: str) -> None:
    found = result_difference(a, b, match, 0.2)
    assert found is None or isinstance(found, str)
    # inf - inf is nan, which no tolerance accepts: only finite numbers match themselves.
    if "inf" not in repr(a):
        assert result_difference(a, a, match, 0.2) is None


def test_hostile_values_are_differences_not_crashes() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert "nested deeper than 100 levels" in str(result_difference(deep, deep))
    # Integers beyond float range: the tolerance cannot be computed, equality can.
    big = 10**400
    assert result_difference(big, big, "numeric") is None
    assert result_difference(big + 1, big, "numeric") is not None
    assert result_difference(10**5000, 1, "structural") is not None  # too long to print


# --------------------------------------------------------------------------- real calls


def test_a_call_is_run_and_its_result_compared() -> None:
    g = grade(task([5]), calls(("add", {"a": 2, "b": 3})))
    assert (g.passed, g.status, g.score) == (True, "passed", 1.0)
    assert g.evidence["calls"] == [{"name": "add", "arguments": "{'a': 2, 'b': 3}", "result": "5"}]
    g = grade(task([6]), calls(("add", {"a": 2, "b": 3})))
    assert (g.passed, g.status) == (False, "exec:mismatch")
    assert g.evidence["differences"] == ["$: expected 6, got 5"]


def test_a_tuple_result_matches_a_list_structurally() -> None:
    t = task([[4, [4, {"k": 4}]]], functions={"pair": ref("pair")})
    assert grade(t, calls(("pair", {"x": 4}))).passed is True


def test_exact_fails_a_float_where_an_int_is_expected() -> None:
    t = task([3], functions={"whole": ref("whole")}, match="exact")
    g = grade(t, calls(("whole", {"x": 3})))
    assert g.status == "exec:mismatch" and "expected int 3, got 3.0" in g.evidence["differences"][0]
    t = task([3], functions={"whole": ref("whole")}, match="structural")
    assert grade(t, calls(("whole", {"x": 3}))).passed is True


def test_a_call_that_raises_fails_with_the_exception() -> None:
    t = task([1], functions={"fail": ref("fail")})
    g = grade(t, calls(("fail", {"x": "km"})))
    assert (g.passed, g.status) == (False, "exec:raised")
    assert g.evidence["calls"][0]["error"] == "ValueError: cannot use 'km'"
    # Arguments the function does not take raise in the function's call.
    g = grade(task([5]), calls(("add", {"a": 2, "c": 3})))
    assert g.status == "exec:raised" and g.evidence["calls"][0]["error"].startswith("TypeError:")
    g = grade(task([1], functions={"m": ref("bad_message")}), calls(("m", {})))
    assert g.status == "exec:raised" and "could not be read" in g.evidence["calls"][0]["error"]


def test_a_call_that_hangs_is_stopped_and_the_next_call_still_runs() -> None:
    t = task([1], functions={"spin": ref("spin")}, timeout_s=0.5)
    g = grade(t, calls(("spin", {})))
    assert (g.passed, g.status) == (False, "exec:timeout")
    assert g.evidence["calls"][0]["error"] == "still running after 0.5 s"
    assert grade(task([5]), calls(("add", {"a": 2, "b": 3}))).passed is True


@pytest.mark.parametrize(
    ("name", "status", "error"),
    [
        ("huge", "exec:output_too_large", "2000002 characters of JSON"),
        ("aset", "exec:unserialisable", "set: Object of type set is not JSON serializable"),
        ("nan", "exec:unserialisable", "float: Out of range float values are not JSON compliant"),
        ("vanish", "exec:crashed", "the worker process exited (3)"),
    ],
)
def test_hostile_results_fail_without_crashing_the_grading(
    name: str, status: str, error: str
) -> None:
    g = grade(task([1], functions={name: ref(name)}), calls((name, {})))
    assert (g.passed, g.status) == (False, status)
    assert g.evidence["calls"][0]["error"].startswith(error)
    assert grade(task([5]), calls(("add", {"a": 2, "b": 3}))).passed is True


def test_what_a_callable_prints_does_not_reach_the_protocol() -> None:
    assert grade(task([7], functions={"c": ref("chatty")}), calls(("c", {}))).passed is True


def test_a_callable_the_suite_cannot_load_is_unknown_not_the_agents_failure() -> None:
    t = task([1], functions={"add": f"{MODULE}:absent"})
    g = grade(t, calls(("add", {"a": 1, "b": 2})))
    assert (g.passed, g.status) == (None, "unknown:callable not found")
    assert "AttributeError" in g.evidence


def test_a_separate_executor_runs_calls_and_stops_a_runaway_one() -> None:
    ex = Executor()
    try:
        assert ex.call(ref("add"), {"a": 1, "b": 1}, 5.0).result == 2
        assert ex.call(ref("spin"), {}, 0.3).outcome == "timeout"
        assert ex.call(ref("add"), {"a": 1, "b": 2}, 5.0).result == 3
    finally:
        ex.close()


def _call_in_child(ex: Executor, out: Any) -> None:
    out.send(ex.call(ref("add"), {"a": 2, "b": 2}, 5.0).result)


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_a_forked_child_starts_its_own_worker_and_the_parents_still_answers() -> None:
    import multiprocessing

    ex = Executor()
    try:
        assert ex.call(ref("add"), {"a": 1, "b": 1}, 5.0).result == 2  # the parent's worker
        ctx = multiprocessing.get_context("fork")
        mine, theirs = ctx.Pipe()
        child = ctx.Process(target=_call_in_child, args=(ex, theirs))
        child.start()
        assert mine.poll(30) and mine.recv() == 4
        child.join(30)
        assert ex.call(ref("add"), {"a": 1, "b": 2}, 5.0).result == 3
    finally:
        ex.close()


# --------------------------------------------------------------------------- calls


def test_a_wrong_function_name_fails_without_running_anything() -> None:
    g = grade(task([5]), calls(("ad", {"a": 2, "b": 3})))
    assert (g.passed, g.status) == (False, "exec:wrong_func_name")
    assert g.evidence == {"called": ["ad"], "known": ["add"]}


def test_the_number_of_calls_must_match() -> None:
    g = grade(task([5]), calls(("add", {"a": 2, "b": 3}), ("add", {"a": 1, "b": 1})))
    assert g.status == "exec:wrong_count" and g.evidence["calls"] == 2
    assert grade(task([5]), calls()).status == "exec:wrong_count"
    # No expected result: passes only with no call (an irrelevance case).
    assert grade(task([]), calls()).passed is True


def test_a_tolerance_under_one_percent_is_shown_as_written() -> None:
    # `{tolerance:.0%}` wrote 0.004 as "within 0%", and a difference of 0.04% as "0.0%".
    g = grade(task([1000], match="numeric", tolerance=0.004), calls(("add", {"a": 1000, "b": 5})))
    assert g.status == "exec:mismatch"
    assert g.evidence["differences"] == ["$: expected 1000 within 0.4%, got 1005 (0.5% off)"]
    g = grade(task([10000], match="numeric", tolerance=0.0001), calls(("add", {"a": 1e4, "b": 4})))
    assert g.evidence["differences"] == ["$: expected 10000 within 0.01%, got 10004.0 (0.04% off)"]
    g = grade(task([10], match="numeric", tolerance=0.2), calls(("add", {"a": 10, "b": 2.5})))
    assert g.evidence["differences"] == ["$: expected 10 within 20%, got 12.5 (25.0% off)"]


def test_parallel_results_are_matched_as_a_set() -> None:
    t = task([5, 10], match="exact")
    trial = calls(("add", {"a": 4, "b": 6}), ("add", {"a": 2, "b": 3}))  # 10 then 5
    assert grade(t, trial).passed is True
    # Two calls returning 5 cannot cover 5 and 10.
    g = grade(t, calls(("add", {"a": 2, "b": 3}), ("add", {"a": 1, "b": 4})))
    assert g.status == "exec:mismatch" and g.evidence["differences"] == [
        "call 1: $: expected 10, got 5"
    ]


def test_environment_tools_are_judged_by_their_recorded_results() -> None:
    t = task([{"status": "shipped"}], functions={}, tools=["get_order"])
    events: list[Any] = [
        ToolCallEvent(name="find_user", arguments={}, call_id="a"),
        ToolResultEvent(call_id="a", content={"id": 1}),
        ToolCallEvent(name="get_order", arguments={"id": "W1"}, call_id="b"),
        ToolResultEvent(call_id="b", content={"status": "shipped"}),
    ]
    assert grade(t, Trial(task_id="t", success=False, events=events)).passed is True
    events[3] = ToolResultEvent(call_id="b", content="no such order", is_error=True)
    g = grade(t, Trial(task_id="t", success=False, events=events))
    assert g.status == "exec:raised" and "no such order" in g.evidence["calls"][0]["error"]
    g = grade(t, Trial(task_id="t", success=False, events=events[:3]))
    assert g.status == "exec:no_result"
    # Results are found by call id; without ids, the first result after the call.
    shuffled = [events[2], ToolResultEvent(call_id="z", content="other"), events[1]]
    assert grade(t, Trial(task_id="t", success=False, events=shuffled)).status == "exec:no_result"
    bare = [ToolCallEvent(name="get_order"), ToolResultEvent(content={"status": "shipped"})]
    assert grade(t, Trial(task_id="t", success=False, events=bare)).passed is True


def test_a_callable_reference_must_name_module_and_function(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "- id: t\n  instruction: x\n  expectations:\n"
        "    executable: {functions: {f: not-a-reference}, expected: [1]}\n"
    )
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert err.value.line == 4 and err.value.field == "expectations.executable.functions"
    assert "f: expected a callable as package.module:function, got 'not-a-reference'" in str(
        err.value
    )


def test_a_callable_whose_module_is_missing_fails_when_the_suite_loads(tmp_path: Path) -> None:
    # Else every trial's grade would be unknown: the suite's fault, said once, exit 2.
    path = tmp_path / "s.yaml"
    path.write_text(
        "- id: t\n  instruction: x\n  expectations:\n"
        "    executable: {functions: {f: no_such_module_here.sub:f}, expected: [1]}\n"
    )
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert err.value.field == "expectations.executable.functions.f"
    assert "cannot find module 'no_such_module_here.sub'" in str(err.value)
    path.write_text(
        "- id: t\n  instruction: x\n  expectations:\n"
        f"    executable: {{functions: {{f: '{MODULE}:absent'}}, expected: [1]}}\n"
    )
    assert len(load_suite(path).tasks) == 1  # the module is there: the function is the grader's


def test_a_callable_in_the_current_folder_loads_as_the_grader_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker looks on the import path and then in the current folder; the loader
    # looked only on the import path, so `agentgauge run` refused mycalc.py next to it.
    (tmp_path / "agentgauge_mycalc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "s.yaml").write_text(
        "- id: t\n  instruction: x\n  expectations:\n"
        "    executable: {functions: {add: 'agentgauge_mycalc:add'}, expected: [3]}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path and "" not in sys.path
    before = list(sys.path)
    (task,) = load_suite("s.yaml").tasks
    assert sys.path == before  # looked there without staying on the path
    trial = Trial(
        task_id="t", success=False, events=[ToolCallEvent(name="add", arguments={"a": 1, "b": 2})]
    )
    assert get_grader("executable").grade(task, trial).passed is True


# --------------------------------------------------------------------------- built-in tasks


EXEC = {t.id: t for t in load_suite("builtin:functions").tasks if t.expectations.executable}


def test_the_builtin_executable_tasks_pass_their_own_answer_key() -> None:
    assert set(EXEC) == {
        "fn_exec_length",
        "fn_exec_interest",
        "fn_exec_days",
        "fn_exec_bill",
        "fn_exec_parallel_lengths",
    }
    for t in EXEC.values():
        assert t.expectations.answer_key is not None
        # The key's first acceptable values, in reverse order (parallel calls are a set).
        key = [next(iter(e.items())) for e in t.expectations.answer_key][::-1]
        args = [(n, {p: v[0] for p, v in ps.items() if v[0] != ""}) for n, ps in key]
        graded = grade_trial(t, calls(*args))
        assert graded.success is True, (t.id, graded.grades)


def test_a_result_within_tolerance_passes_where_the_ast_match_fails() -> None:
    # 11 years instead of 10: 1000 * (1 + 0.05/12)^132 = 1731.27, 5.1% over 1647.01.
    t = EXEC["fn_exec_interest"]
    trial = calls(("compound_interest", {"principal": 1000, "annual_rate": 0.05, "years": 11}))
    graded = grade_trial(t, trial)
    by = {g.grader: g for g in graded.grades}
    assert by["executable"].passed is True and by["tool_calls"].passed is False
    assert graded.success is True  # the task requires the executable check only
    # A rate of 1.05 is far outside 20%.
    trial = calls(("compound_interest", {"principal": 1000, "annual_rate": 1.05, "years": 10}))
    assert grade_trial(t, trial).success is False


def test_builtin_bad_input_raises_and_a_wrong_function_raises_type_error() -> None:
    t = EXEC["fn_exec_length"]
    g = grade(t, calls(("convert_length", {"value": 5, "from_unit": "kmx", "to_unit": "mi"})))
    assert g.status == "exec:raised" and "unknown unit 'kmx'" in g.evidence["calls"][0]["error"]
    t = EXEC["fn_exec_days"]
    g = grade(t, calls(("convert_length", {"start": "2024-03-01", "end": "2024-12-25"})))
    assert g.status == "exec:raised" and g.evidence["calls"][0]["error"].startswith("TypeError")


# --------------------------------------------------------------------------- store


def test_executable_grades_round_trip_through_the_store(tmp_path: Path) -> None:
    t = EXEC["fn_exec_days"]
    made = [
        calls(("days_between", {"start": "2024-03-01", "end": "2024-12-25"})),
        calls(("days_between", {"start": "2024-03-01", "end": "2024-12-26"})),
        calls(("days_between", {"start": "2024-03-01", "end": "Christmas"})),
    ]
    trials = []
    for i, trial in enumerate(made):
        graded = grade_trial(t, trial)
        assert graded.success is not None
        trials.append(
            trial.model_copy(
                update={"trial": i, "success": graded.success, "grades": graded.grades}
            )
        )
    with Store(tmp_path / "s.db") as db:
        with db.transaction():
            db.create_run(Run(run_id="r", created_at="2026-12-01T00:00:00Z"))
            db.add_tasks("r", [t])
        db.add_trials("r", trials)
    with Store(tmp_path / "s.db", readonly=True) as db:
        back = db.trials("r")
    statuses = [[g.status for g in b.grades if g.grader == "executable"] for b in back]
    assert statuses == [["passed"], ["exec:mismatch"], ["exec:raised"]]
    assert [b.success for b in back] == [True, False, False]
    for before, after in zip(trials, back, strict=True):
        assert [g.model_dump() for g in after.grades] == [g.model_dump() for g in before.grades]


def test_tasks_without_the_new_fields_dump_and_version_as_before() -> None:
    # A user's suite keeps its version across this release: unset new fields are not
    # written, so the canonical JSON the version hashes is unchanged.
    plain = Expectations().model_dump(mode="json")
    assert not {"executable", "reference_answer", "response_match"} & set(plain)
    spec = ExecutableSpec(functions={"add": ref("add")}, expected=[5])
    full = Expectations(executable=spec, reference_answer="five")
    dumped = full.model_dump(mode="json")
    assert dumped["executable"]["expected"] == [5] and dumped["reference_answer"] == "five"
    assert Expectations.model_validate(dumped) == full
