"""Typos inside the open mappings of a task fail when the suite loads (exit 2), not at run time.

On the main branch before this change, each of these suites loaded: ``knwon:`` was
ignored (the user knew nothing and tasks that need no facts still passed),
``environment: retial`` became an infra error in every trial, and an unknown
``initial_state`` table in a task with its own final state failed every trial too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentgauge
from agentgauge.errors import InputError
from agentgauge.suite import load_suite

TASK = """tasks:
  - id: t1
    environment: {env}
    instruction: Please cancel order W1001
{extra}    expectations: {{control: refuse, final_state: {{}}}}
"""


def write(tmp_path: Path, extra: str = "", env: str = "retail") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(TASK.format(env=env, extra=extra))
    return path


@pytest.mark.parametrize(
    ("env", "extra", "line", "field", "reason"),
    [
        ("retial", "", 3, "environment", "unknown environment 'retial'"),
        (
            "retail",
            "    user_scenario:\n      knwon: {email: a@example.com}\n",
            6,
            "user_scenario.knwon",
            "unknown key in a retail user_scenario (its fields: known, confirm",
        ),
        (
            "retail",
            "    user_scenario: {max_turns: 0}\n",
            5,
            "user_scenario.max_turns",
            "greater than or equal to 1",
        ),
        (
            "functions",
            "    user_scenario: {known: {}}\n",
            5,
            "user_scenario.known",
            "unknown key in a functions user_scenario (its fields: none)",
        ),
        (
            "retail",
            "    initial_state:\n      oders: [{order_id: W1001}]\n",
            6,
            "initial_state.oders",
            "unknown table 'oders'",
        ),
    ],
)
def test_a_typo_names_file_line_and_field(
    tmp_path: Path, env: str, extra: str, line: int, field: str, reason: str
) -> None:
    path = write(tmp_path, extra, env)
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert reason in err.reason and "task 't1'" in err.reason


def test_jsonl_tasks_are_checked_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    good = {"id": "a", "environment": "retail", "instruction": "hi"}
    bad = {**good, "id": "b", "user_scenario": {"knwon": {}}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as caught:
        load_suite(path)
    assert (caught.value.line, caught.value.field) == (2, "user_scenario.knwon")


def test_valid_scenarios_and_own_environments_still_load(tmp_path: Path) -> None:
    extra = "    user_scenario: {known: {email: a@example.com}, confirm: false, max_turns: 3}\n"
    assert load_suite(write(tmp_path, extra)).tasks[0].user_scenario["confirm"] is False
    # A package.module:factory world defines its own scenario (checked when it is loaded).
    own = write(tmp_path, "    user_scenario: {replies: [ok]}\n",
                "agentgauge.testing.worlds:make_counter_env")  # fmt: skip
    assert load_suite(own).tasks[0].user_scenario == {"replies": ["ok"]}
    assert len(load_suite("builtin:retail").tasks) >= 40


def test_the_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, "    user_scenario:\n      knwon: {email: a@example.com}\n")
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"agentgauge: error: {path}:6: user_scenario.knwon: task 't1': ")
    assert not (tmp_path / "s.db").exists()


def test_an_own_environment_that_declares_its_scenario_is_checked_before_any_trial(
    tmp_path: Path,
) -> None:
    # The loader does not import a user's factory, so its `scenario` model is applied
    # when the run loads the factory: a typo stops the run at once, with no store made,
    # where the counter world's user used to go silent and the task still pass.
    path = write(tmp_path, "    user_scenario: {replys: [ok]}\n",
                 "agentgauge.testing.worlds:make_counter_env")  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent",
         "agentgauge.testing.worlds:counting_agent", "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line == (  # the file and the field's line (it was the task's, line 2)
        f"agentgauge: error: {path}:5: user_scenario.replys: task 't1': unknown key in the "
        "agentgauge.testing.worlds:make_counter_env user_scenario (its fields: replies)"
    )
    assert not (tmp_path / "s.db").exists()
    wrong_type = write(tmp_path, "    user_scenario: {replies: ok}\n",
                       "agentgauge.testing.worlds:make_counter_env")  # fmt: skip
    with pytest.raises(InputError) as caught:
        agentgauge.run(load_suite(wrong_type), "agentgauge.testing.worlds:counting_agent",
                       store=tmp_path / "s.db", progress=False)  # fmt: skip
    assert caught.value.field == "user_scenario.replies"
    assert not (tmp_path / "s.db").exists()


EXPECTING = """tasks:
  - id: t1
    environment: retail
    instruction: Please cancel order W1001
    expectations:
      final_state: {{}}
      {extra}
"""


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        # Each loaded, then failed every trial with the same unknown grade.
        (
            'answer: {regex: "([unclosed"}',
            "expectations.answer.regex",
            "not a valid regular expression: unterminated character set",
        ),
        (
            "milestones: [{id: a, tool: get_order_details, after: [nosuch]}]",
            "expectations.milestones.0.after.0",
            "milestone 'a' comes after 'nosuch', which is no milestone of the task",
        ),
        (
            "milestones: [{id: a, tool: get_order_details, after: [b]}, "
            "{id: b, tool: issue_refund, after: [a]}]",
            "expectations.milestones.0.after",
            "milestone 'a' comes, through 'after', after itself",
        ),
        # Loaded, then every trial's grading raised (tolerances must be non-negative).
        (
            "answer: {number: 3, tolerance: -1}",
            "expectations.answer.tolerance",
            "greater than or equal to 0",
        ),
        (
            "milestones: [{id: a, tool: get_order_details}, {id: a, tool: issue_refund}]",
            "expectations.milestones.1.id",
            "milestone id 'a' is used twice (first at milestones[0])",
        ),
    ],
)
def test_expectations_no_grader_can_apply_fail_at_load(
    tmp_path: Path, extra: str, field: str, reason: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(EXPECTING.format(extra=extra))
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert err.value.field == field
    assert reason in str(err.value)


def assert_load_error(tmp_path: Path, extra: str, field: str, reason: str) -> None:
    """The EXPECTING task with ``extra`` fails to load at line 7, ``field``, ``reason``."""
    path = tmp_path / "suite.yaml"
    path.write_text(EXPECTING.format(extra=extra))
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert (err.value.line, err.value.field) == (7, field)
    assert err.value.reason.startswith(f"task 't1': {reason}")


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        # Each typo was dropped by grade_trial, which keeps only required graders that
        # ran: a do-nothing agent passed every trial on `state` alone.
        (
            "required: [state, answr, contrl]",
            "expectations.required.1",
            "unknown grader 'answr'; did you mean 'answer'? (known: answer, checkpoints,",
        ),
        (
            "partial_credit: [state, milestone]",
            "expectations.partial_credit.1",
            "unknown grader 'milestone'; did you mean 'milestones'?",
        ),
        # A grader the task does not enable never runs, so it never decided anything.
        (
            "required: [state, answer]",
            "expectations.required.1",
            "grader 'answer' is not enabled by this task's expectations, so it never runs "
            "(the code graders it enables: state; docs/graders.md)",
        ),
    ],
)
def test_required_and_partial_credit_name_graders_that_can_grade_the_task(
    tmp_path: Path, extra: str, field: str, reason: str
) -> None:
    assert_load_error(tmp_path, extra, field, reason)


def test_judge_and_human_grader_names_are_accepted_in_required(tmp_path: Path) -> None:
    # Their options (an endpoint, a labels file) enable them, not the task: only the
    # name is checked, and a criterion or target after a colon is theirs.
    path = tmp_path / "suite.yaml"
    rubric = "rubric: [{id: tone, text: Is it kind?}]\n      "
    path.write_text(
        EXPECTING.format(extra=rubric + "required: [state, rubric, human:state, rubric:tone]")
    )
    assert load_suite(path).tasks[0].expectations.required == [
        "state", "rubric", "human:state", "rubric:tone"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("required: [state, rubric:tone]", "none: the task has no rubric"),
        (
            "rubric: [{id: tone, text: Is it kind?}]\n      partial_credit: [rubric:tnoe]",
            "tone",
        ),
    ],
)
def test_a_rubric_criterion_the_task_does_not_define_is_refused(
    tmp_path: Path, extra: str, reason: str
) -> None:
    # No judge grades a criterion the rubric lacks: required, it was dropped, and the
    # trial passed without it.
    path = tmp_path / "suite.yaml"
    path.write_text(EXPECTING.format(extra=extra))
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert err.value.reason.endswith(
        f"names no criterion of this task's rubric, so no judge ever grades it (its "
        f"criteria: {reason}; docs/judge.md)"
    )


def test_a_misspelt_required_grader_is_named_instead_of_nothing_grades(tmp_path: Path) -> None:
    # It used to be "nothing grades the outcome of 1 task(s)", with no file or line.
    path = tmp_path / "suite.yaml"
    path.write_text(EXPECTING.format(extra="required: [stat]"))
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:null",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(
        f"agentgauge: error: {path}:7: expectations.required.0: task 't1': unknown grader "
        "'stat'; did you mean 'state'?"
    )
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        # Each loaded, and could never fire or be met: safety read 100%.
        (
            "minefields: [{tool: cancel_pendng_order}]",
            "expectations.minefields.0.tool",
            "unknown tool 'cancel_pendng_order'; did you mean 'cancel_pending_order'? "
            "(the retail world's tools: cancel_pending_order, exchange_delivered_order_items,",
        ),
        (
            "minefields: [{tool: cancel_pending_order, arguments: {ordr_id: W1001}}]",
            "expectations.minefields.0.arguments.ordr_id",
            "cancel_pending_order has no argument 'ordr_id'; did you mean 'order_id'? "
            "(its arguments: order_id, reason)",
        ),
        (
            "milestones: [{id: a, tool: get_ordr_details}]",
            "expectations.milestones.0.tool",
            "unknown tool 'get_ordr_details'; did you mean 'get_order_details'?",
        ),
        (
            "milestones: [{id: a, tool: get_order_details, arguments: {order: W1001}}]",
            "expectations.milestones.0.arguments.order",
            "get_order_details has no argument 'order'",
        ),
        (
            "reference_calls: [{name: get_ordr_details, arguments: {order_id: W1001}}]",
            "expectations.reference_calls.0.name",
            "unknown tool 'get_ordr_details'",
        ),
    ],
)
def test_an_expectation_naming_a_tool_the_world_lacks_fails_at_load(
    tmp_path: Path, extra: str, field: str, reason: str
) -> None:
    assert_load_error(tmp_path, extra, field, reason)


def test_function_calling_expectations_are_checked_against_the_task_functions(
    tmp_path: Path,
) -> None:
    fn = "{name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}"
    text = (
        "tasks:\n  - id: f\n    instruction: weather in Paris?\n    expectations:\n"
        f"      functions: [{fn}]\n      answer_key: [{{get_wether: {{city: [Paris]}}}}]\n"
    )
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert (err.value.line, err.value.field) == (6, "expectations.answer_key.0")
    assert (
        "unknown tool 'get_wether'; did you mean 'get_weather'? (the task's functions: "
        "get_weather)" in err.value.reason
    )
    mine = "\n      minefields: [{tool: get_weather, arguments: {town: x}}]"
    path.write_text(text.replace("get_wether", "get_weather").rstrip("\n") + mine + "\n")
    with pytest.raises(
        InputError, match=r"get_weather has no argument 'town' \(its arguments: city\)"
    ):
        load_suite(path)


def test_state_assertions_must_hold_on_the_reference_plan(tmp_path: Path) -> None:
    # A misspelt path loaded, and the oracle, which plays the reference calls, then
    # failed every trial; checkpoints were already checked this way.
    text = """tasks:
  - id: t1
    environment: retail
    instruction: Please cancel order W1001
    expectations:
      reference_calls:
        - {name: cancel_pending_order, arguments: {order_id: W1001, reason: no longer needed}}
      state_assertions:
        - {path: orders.W1001.status, equals: cancelled}
        - {path: orders.W1007.status, equals: x}
"""
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_suite(path)
    assert (err.value.line, err.value.field) == (10, "expectations.state_assertions.1")
    assert err.value.reason == (
        "task 't1': does not hold on the final state of the reference calls "
        "(orders.W1007.status: expected 'x', got 'delivered')"
    )
    path.write_text(text.replace("W1007.status, equals: x", "W1001.status, equals: pending"))
    with pytest.raises(InputError, match="expected 'pending', got 'cancelled'"):
        load_suite(path)
    path.write_text(text.replace("W1007.status, equals: x", "W1001.status, exists: true"))
    assert len(load_suite(path).tasks[0].expectations.state_assertions) == 2


@pytest.mark.parametrize(
    "expectations", ["", "    expectations: {rubric: [{id: polite, text: Is it polite?}]}\n"]
)
def test_a_retail_task_with_nothing_to_check_is_refused(tmp_path: Path, expectations: str) -> None:
    # Its derived final state was the database unchanged (an empty plan), so doing
    # nothing passed: builtin:null scored 100% on an instruction alone.
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\ntasks:\n  - id: r1\n    environment: retail\n    instruction: hi\n" + expectations
    )
    assert load_suite(path).tasks[0].expectations.final_state is None
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:null",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout
    assert "nothing grades the outcome of 1 task, 'r1'" in out.stderr
    assert not (tmp_path / "s.db").exists()
    # Beside another check (a refusal), the unchanged database is still required.
    path.write_text(
        "name: s\ntasks:\n  - id: r1\n    environment: retail\n    instruction: hi\n"
        "    expectations: {control: refuse}\n"
    )
    assert load_suite(path).tasks[0].expectations.final_state is not None


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        # SQLite refused to bind the list: "SQLite refused the store", as if the store
        # were at fault, with no file, line or field.
        (
            "payment_methods: [{payment_id: card_4242, description: [1, 2]}]",
            "initial_state.payment_methods.0.description",
            "expected text or a number, got a list",
        ),
        # OverflowError from sqlite3: a traceback, exit 1.
        (
            "orders: [{order_id: W1001, zip: 99999999999999999999999}]",
            "initial_state.orders.0.zip",
            "99999999999999999999999 is out of range: an integer must lie within ±2^63",
        ),
        # YAML reads an unquoted date as a date, which json.dumps refused: a traceback.
        (
            "orders: [{order_id: W1001, placed_on: 2024-06-01}]",
            "initial_state.orders.0.placed_on",
            "expected text or a number, got a date (quote it: '2024-06-01')",
        ),
        (
            "returns: [{return_id: R1, order_id: W1002, item_ids: 2002, payment_id: card_4242, "
            "amount: 120.0, status: requested}]",
            "initial_state.returns.0.item_ids",
            "expected a list of item ids (text, such as '1001'), got a number",
        ),
        # "got a list", though a list is what the column holds: the item was the fault.
        (
            "returns: [{return_id: R1, order_id: W1002, item_ids: [1001], payment_id: card_4242, "
            "amount: 120.0, status: requested}]",
            "initial_state.returns.0.item_ids",
            "expected a list of item ids (text, such as '1001'); its item 0 is a number, 1001 "
            "(quote it: '1001')",
        ),
        (
            "exchanges: [{exchange_id: X1, order_id: W1002, item_ids: ['2002'], "
            "new_item_ids: ['2003', [1]], payment_id: card_4242, price_difference: 0}]",
            "initial_state.exchanges.0.new_item_ids",
            "expected a list of item ids (text, such as '1001'); its item 1 is a list",
        ),
        (
            "orders: [{order_id: W1001, totl: 5}]",
            "initial_state.orders.0.totl",
            "unknown column(s) ['totl'] (its columns: order_id, customer_id,",
        ),
    ],
)
def test_a_value_no_column_can_hold_is_named_where_it_is_written(
    tmp_path: Path, row: str, field: str, reason: str
) -> None:
    path = write(tmp_path, f"    initial_state:\n      {row}\n")
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), 6, field)
    assert err.reason.startswith(f"task 't1': {reason}")


def test_a_wrong_initial_value_stops_the_cli_with_one_line_and_no_store(tmp_path: Path) -> None:
    path = write(tmp_path, "    initial_state:\n      orders: [{order_id: W1001, zip: 1e400}]\n")
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"agentgauge: error: {path}:6: initial_state.orders.0.zip: task 't1': "
        "must be a finite number, got inf"
    ]
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("assertion", "field", "reason"),
    [
        # With exists: false a path the state never has passed every trial (the
        # builtin:null agent scored 100%); with equals it failed every one.
        (
            "{path: orderz.W1001.status, exists: false}",
            "expectations.state_assertions.0.path",
            "the retail world's state has no 'orderz'; did you mean 'orders'? (it has: "
            "customers, exchanges, orders, payment_methods, refunds, returns, transfers), "
            "so no trial's state has this path",
        ),
        (
            "{path: orders.W1001.statuss, equals: pending}",
            "expectations.state_assertions.0.path",
            "orders.W1001 has no 'statuss'; did you mean 'status'? (it has: city, "
            "customer_id, delivered_on, items, payment_id, placed_on, state, status, street, "
            "tracking, zip), so no trial's state has this path",
        ),
        # Products are not part of the state: the agent cannot change them.
        (
            "{path: products.1001.price, equals: 25.0}",
            "expectations.state_assertions.0.path",
            "the retail world's state has no 'products'",
        ),
    ],
)
def test_a_state_path_the_world_never_has_is_refused(
    tmp_path: Path, assertion: str, field: str, reason: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "tasks:\n  - id: t1\n    environment: retail\n    instruction: Hi\n"
        "    expectations:\n      control: refuse\n"
        f"      state_assertions:\n        - {assertion}\n"
    )
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.line, err.field) == (8, field)
    assert err.reason.startswith(f"task 't1': {reason}")


def test_a_checkpoint_path_or_table_the_world_never_has_is_refused(tmp_path: Path) -> None:
    text = """tasks:
  - id: t1
    environment: retail
    instruction: Please cancel order W1001
    expectations:
      checkpoints:
        - calls:
            - {name: cancel_pending_order, arguments: {order_id: W1001, reason: ordered by mistake}}
          state_assertions: [{path: orders.W1001.status, equals: cancelled}]
"""
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    assert load_suite(path).tasks[0].expectations.final_state is not None
    path.write_text(text.replace("path: orders.W1001.status", "path: orders.W1001.stauts"))
    with pytest.raises(InputError) as caught:
        load_suite(path)
    assert (caught.value.line, caught.value.field) == (
        9,
        "expectations.checkpoints.0.state_assertions.0.path",
    )
    assert "orders.W1001 has no 'stauts'; did you mean 'status'?" in caught.value.reason
    assertions = "state_assertions: [{path: orders.W1001.status, equals: cancelled}]"
    path.write_text(text.replace(assertions, "state: {order: {}}"))
    with pytest.raises(InputError) as caught:
        load_suite(path)
    assert (caught.value.line, caught.value.field) == (9, "expectations.checkpoints.0.state.order")
    assert "has no 'order'; did you mean 'orders'?" in caught.value.reason


def test_a_final_state_table_the_world_never_has_is_refused(tmp_path: Path) -> None:
    """A misspelt table in ``final_state`` (``orderz:``) was compared with a state that
    never holds it: every trial failed, the reference plan's too, with no word at load."""
    path = tmp_path / "suite.yaml"
    text = TASK.format(env="retail", extra="").replace(
        "final_state: {}", "final_state: {orders: {}}"
    )
    path.write_text(text)
    load_suite(path)
    path.write_text(text.replace("{orders: {}}", "{orderz: {}}"))
    with pytest.raises(InputError) as caught:
        load_suite(path)
    assert (caught.value.line, caught.value.field) == (5, "expectations.final_state.orderz")
    assert "has no 'orderz'; did you mean 'orders'?" in caught.value.reason


def test_the_retail_state_shape_names_what_the_state_holds() -> None:
    from agentgauge.envs.retail import db

    state = db.export_state(db.fresh_connection(db.template()))
    assert set(state) == set(db.STATE_SHAPE)
    for table, rows in state.items():
        for row in rows.values():
            assert set(row) == set(db.STATE_SHAPE[table]["*"]), table


def run_cli(tmp_path: Path, path: Path, agent: str = "builtin:oracle") -> str:
    """The one line ``agentgauge run`` prints on stderr, after checking it exits 2 and
    writes no store."""
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", agent,
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert not (tmp_path / "s.db").exists()
    (line,) = out.stderr.strip().splitlines()
    return line.replace(str(path), "FILE")


def test_refusals_after_loading_name_the_file_and_line_of_the_task(tmp_path: Path) -> None:
    # Each named no file or line: "agentgauge: error: expectations: nothing grades ...",
    # "environment: cannot load environment 'nopkg.w:make': ..."
    path = tmp_path / "a.yaml"
    path.write_text(
        "- {id: a, environment: retail, instruction: hi, expectations: {control: refuse}}\n"
        "- id: b\n  environment: retail\n  instruction: hi\n"
    )
    assert run_cli(tmp_path, path).startswith(
        "agentgauge: error: FILE:2: expectations: nothing grades the outcome of 1 task, 'b'"
    )
    path.write_text(
        "- id: a\n  instruction: hi\n  environment: nopkg.w:make\n"
        "  expectations: {answer: {contains: [x]}}\n"
    )
    assert run_cli(tmp_path, path) == (
        "agentgauge: error: FILE:3: environment: task 'a': cannot find module 'nopkg.w' for "
        f"environment 'nopkg.w:make' (installed? on PYTHONPATH? in the current folder {tmp_path}?)"
    )
    # A module beside the suite, in the folder the run starts from, is found.
    (tmp_path / "here_world.py").write_text(
        "from agentgauge.testing.worlds import make_counter_env as make\n"
    )
    path.write_text(path.read_text().replace("nopkg.w:make", "here_world:make"))
    suite = subprocess.run(
        [sys.executable, "-c", "from agentgauge.suite import load_suite; "
         f"print(load_suite({str(path)!r}).places)"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert suite.stdout.strip() == f"{{'a': ({str(path)!r}, 1)}}", suite.stderr


RETAIL_PLAN = """tasks:
  - id: t1
    environment: retail
    instruction: Please help
    initial_state:
      {row}
    expectations:
      reference_calls:
        - {call}
"""


def write_plan(tmp_path: Path, row: str, call: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(RETAIL_PLAN.format(row=row, call=call))
    return path


@pytest.mark.parametrize(
    ("row", "call", "line", "field", "reason"),
    [
        # "100.00" as text: a TypeError (str + float) in the tool, a traceback, exit 1.
        (
            'payment_methods: [{payment_id: gift_ana, balance: "100.00"}]',
            "{name: modify_pending_order_payment, arguments: {order_id: W1001, payment_id: "
            "gift_ana}}",
            6,
            "initial_state.payment_methods.0.balance",
            "expected a number of US dollars or null, got text (write it unquoted: 100.00)",
        ),
        (
            "refunds: [{refund_id: F9, order_id: W1002, payment_id: card_4242, amount: ten, "
            "reason: damaged}]",
            "{name: get_order_details, arguments: {order_id: W1002}}",
            6,
            "initial_state.refunds.0.amount",
            "expected a number of US dollars, got text",
        ),
        # A card made a gift card, with no balance: None + amount in the tool.
        (
            "payment_methods: [{payment_id: card_4242, kind: gift_card}]",
            "{name: cancel_pending_order, arguments: {order_id: W1001, reason: no longer needed}}",
            6,
            "initial_state.payment_methods.0",
            "gift card 'card_4242' has no balance: a gift card keeps one (balance: 0.0, say)",
        ),
        # A line whose item the catalogue lacks: the tool's own assertion, a traceback;
        # then refused at the reference call; now at the line's item_id.
        (
            'order_items: [{order_id: W1002, line: 2, item_id: "9999", price: 5.0, '
            "status: ordered}]",
            "{name: exchange_delivered_order_items, arguments: {order_id: W1002, "
            'item_ids: ["9999"], new_item_ids: ["2001"], payment_id: card_4242}}',
            6,
            "initial_state.order_items.0.item_id",
            "item_id '9999' names no item in products",
        ),
    ],
)
def test_initial_state_the_tools_cannot_work_with_is_refused_at_its_line(
    tmp_path: Path, row: str, call: str, line: int, field: str, reason: str
) -> None:
    path = write_plan(tmp_path, row, call)
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert err.reason.startswith(f"task 't1': {reason}")
    ending = reason if "broke" not in reason else "check the task's initial_state"
    assert err.reason.endswith(ending)


def test_an_order_with_no_items_cancels_for_nothing(tmp_path: Path) -> None:
    # SUM(price) over no lines is NULL: round(None) was a traceback, exit 1.
    order = (
        "orders: [{order_id: W2000, customer_id: C01, status: pending, placed_on: '2024-06-01', "
        "delivered_on: null, payment_id: gift_ana, tracking: null, street: a, city: b, "
        "state: c, zip: d}]"
    )
    call = "{name: cancel_pending_order, arguments: {order_id: W2000, reason: no longer needed}}"
    final = load_suite(write_plan(tmp_path, order, call)).tasks[0].expectations.final_state
    assert final is not None
    assert final["orders"]["W2000"]["status"] == "cancelled"
    assert final["refunds"]["F1"]["amount"] == 0
    assert final["payment_methods"]["gift_ana"]["balance"] == 50.0


def test_a_new_id_skips_one_the_initial_state_has_taken(tmp_path: Path) -> None:
    # The next refund id was COUNT(*) + 1 = F2, which the task's refund had taken:
    # "SQLite refused the store: UNIQUE constraint failed" (exit 2, blaming the store).
    refund = (
        "refunds: [{refund_id: F2, order_id: W1002, payment_id: card_4242, amount: 10.0, "
        "reason: damaged}]"
    )
    call = "{name: cancel_pending_order, arguments: {order_id: W1001, reason: no longer needed}}"
    path = write_plan(tmp_path, refund, call)
    final = load_suite(path).tasks[0].expectations.final_state
    assert final is not None
    assert final["refunds"]["F2"]["amount"] == 10.0
    assert final["refunds"]["F3"] == {
        "amount": 85.0, "order_id": "W1001", "payment_id": "card_4242", "reason": "cancellation"
    }  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "success 100.0%" in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        (
            "products: [{item_id: '1001', price: -5}]",
            "initial_state.products.0.price",
            "expected 0 or more US dollars, got -5",
        ),
        (
            "products: [{item_id: '1001', available: 3}]",
            "initial_state.products.0.available",
            "expected true or false (whether the item can be ordered), got a number, 3",
        ),
        (
            "order_items: [{order_id: W1001, line: 1.5}]",
            "initial_state.order_items.0.line",
            "expected the line's number, a whole number from 1, got a number, 1.5",
        ),
        (
            "customers: [{customer_id: C01, zip: 94110}]",
            "initial_state.customers.0.zip",
            "expected text, got a number, 94110 (quote it: '94110')",
        ),
        (
            "orders: [{order_id: W1001, status: pendng}]",
            "initial_state.orders.0.status",
            "expected one of pending, shipped, delivered, cancelled, return requested, "
            "exchange requested (what the tools know), got 'pendng'",
        ),
        (
            "orders: [{order_id: W1001, placed_on: June 1}]",
            "initial_state.orders.0.placed_on",
            "expected a date, YYYY-MM-DD (the tools compare dates as text), got 'June 1'",
        ),
        (
            "payment_methods: [{payment_id: card_4242, kind: giftcard}]",
            "initial_state.payment_methods.0.kind",
            "expected one of credit_card, gift_card, paypal",
        ),
        # The tools reported these to the agent as its error (cancel: "payment method
        # 'card_9999' not found"), or left the line out of the order the agent saw.
        (
            "orders: [{order_id: W1001, payment_id: card_9999}]",
            "initial_state.orders.0.payment_id",
            "payment_id 'card_9999' names no payment method in payment_methods",
        ),
        (
            "orders: [{order_id: W1001, payment_id: card_1881}]",
            "initial_state.orders.0.payment_id",
            "order 'W1001', of customer 'C01', names payment method 'card_1881', which "
            "belongs to customer 'C02' (the tools refuse another customer's payment method)",
        ),
        # Giving a payment method to another customer breaks the world's own order.
        (
            "payment_methods: [{payment_id: card_4242, customer_id: C02}]",
            "initial_state.payment_methods.0.customer_id",
            "order 'W1001', of customer 'C01', names payment method 'card_4242', which "
            "belongs to customer 'C02'",
        ),
        (
            "order_items: [{order_id: W1001, line: 1, item_id: '1999'}]",
            "initial_state.order_items.0.item_id",
            "item_id '1999' names no item in products",
        ),
        (
            "orders: [{order_id: W1001, customer_id: C99}]",
            "initial_state.orders.0.customer_id",
            "customer_id 'C99' names no customer in customers",
        ),
        (
            "returns: [{return_id: R1, order_id: W1002, item_ids: ['2002', '2999'], "
            "payment_id: card_4242, amount: 120.0, status: requested}]",
            "initial_state.returns.0.item_ids",
            "item_ids '2999' names no item in products",
        ),
    ],
)
def test_a_retail_value_outside_its_column_or_naming_no_row_is_refused(
    tmp_path: Path, row: str, field: str, reason: str
) -> None:
    path = write(tmp_path, f"    initial_state:\n      {row}\n")
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), 6, field), str(err)
    assert err.reason.startswith(f"task 't1': {reason}"), err.reason


def test_a_retail_order_paid_with_no_payment_method_stops_the_cli(tmp_path: Path) -> None:
    # Cancelling the order was "Error: payment method 'card_9999' not found", the
    # agent's tool error, in every trial; now the suite does not load.
    path = write(
        tmp_path, "    initial_state:\n      orders: [{order_id: W1001, payment_id: card_9999}]\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"agentgauge: error: {path}:6: initial_state.orders.0.payment_id: task 't1': "
        "payment_id 'card_9999' names no payment method in payment_methods"
    ]
    assert not (tmp_path / "s.db").exists()


OWN_WORLD = """name: own
defaults:
  family: add
  environment: {env}
tasks:
  - id: a
    instruction: add 1
    user_scenario: {{replies: [ok]}}
    expectations: {{final_state: {{counter: 1}}}}
  - id: b
    instruction: add 2
    environment: {env}
    user_scenario:
      replies: [ok]
      {scenario}
    expectations: {{final_state: {{counter: 2}}}}
"""


@pytest.mark.parametrize(
    ("module", "env", "scenario", "line", "field", "said"),
    [
        # The module raises when imported: at the line that names it (in defaults,
        # for task a), not at the task's first line.
        ("raising_world", "raising_world:make", "", 4, "environment",
         "task 'a': cannot load environment 'raising_world:make': RuntimeError: no key"),
        # The factory is not in the module.
        ("no_factory", "no_factory:make", "", 4, "environment",
         "task 'a': cannot load environment 'no_factory:make': module 'no_factory' has no "
         "attribute"),
        # An own world's scenario model refuses a key: at the key's line.
        ("counter_world", "counter_world:make", "replys: [no]", 15, "user_scenario.replys",
         "task 'b': unknown key in the counter_world:make user_scenario (its fields: replies)"),
    ],
)  # fmt: skip
def test_an_own_world_error_names_the_line_of_its_field(
    tmp_path: Path, module: str, env: str, scenario: str, line: int, field: str, said: str
) -> None:
    (tmp_path / "raising_world.py").write_text("raise RuntimeError('no key')\n")
    (tmp_path / "no_factory.py").write_text("def other(task, *, variant, seed):\n    pass\n")
    (tmp_path / "counter_world.py").write_text(
        "from agentgauge.testing.worlds import make_counter_env as make\n"
    )
    path = tmp_path / "suite.yaml"
    path.write_text(OWN_WORLD.format(env=env, scenario=scenario))
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent",
         "agentgauge.testing.worlds:counting_agent", "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    (shown,) = out.stderr.strip().splitlines()
    assert shown.startswith(f"agentgauge: error: {path}:{line}: {field}: {said}"), shown
    assert not (tmp_path / "s.db").exists()
