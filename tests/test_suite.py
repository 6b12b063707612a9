"""Suites: built-in content, replayed reference plans, located YAML errors, versions,
and `as_suite` (what the harness accepts as a suite)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentgauge
from agentgauge.envs.retail.expected import replay
from agentgauge.envs.retail.tools import IRREVERSIBLE
from agentgauge.errors import InputError
from agentgauge.schema import Task
from agentgauge.suite import Suite, as_suite, load_suite, suite_version

RETAIL = load_suite("builtin:retail", include_heldout=True)


def test_builtin_retail_shape() -> None:
    dev = load_suite("builtin:retail")
    assert len(dev.tasks) >= 40
    assert len(dev.families) >= 8
    assert dev.heldout_excluded and all(t.split == "dev" for t in dev.tasks)
    assert {t.id for t in RETAIL.tasks} == {t.id for t in dev.tasks} | set(dev.heldout_excluded)
    assert dev.version == RETAIL.version  # the version covers held-out tasks too
    minutes = [t.human_minutes for t in dev.tasks]
    assert all(m is not None for m in minutes)
    assert min(m for m in minutes if m) == 1 and max(m for m in minutes if m) == 120
    controls = {t.expectations.control for t in dev.tasks}
    assert {"act", "ask", "confirm", "refuse", "transfer"} <= controls
    for t in RETAIL.tasks:
        assert t.family and t.capability and t.environment == "retail"
        assert len(t.paraphrases) >= 2 and t.instruction not in t.paraphrases
        assert "reference_answer" in t.metadata
        if t.expectations.control == "ask":
            assert "ask" in t.metadata
    assert sum(bool(t.expectations.rubric) for t in dev.tasks) >= 3
    assert sum(bool(t.expectations.minefields) for t in dev.tasks) >= 10
    assert sum(bool(t.expectations.milestones) for t in dev.tasks) >= 5


def test_confirm_tasks_have_irreversible_calls() -> None:
    for t in RETAIL.tasks:
        irreversible = [c for c in t.expectations.reference_calls if c.name in IRREVERSIBLE]
        if t.expectations.control == "confirm":
            assert irreversible or "declined_call" in t.metadata, t.id
        if t.expectations.control in ("refuse", "transfer"):
            assert not irreversible, t.id


@pytest.mark.parametrize("task", RETAIL.tasks, ids=lambda t: t.id)
def test_reference_plan_replays_to_expected_state(task: Task) -> None:
    expected = task.expectations.final_state
    assert expected is not None
    assert replay(task) == expected
    writes = [c for c in task.expectations.reference_calls
              if not c.name.startswith(("get_", "find_"))]  # fmt: skip
    initial = replay(task.model_copy(update={"expectations": task.expectations.model_copy(
        update={"reference_calls": []})}))  # fmt: skip
    assert (expected != initial) == bool(writes), task.id


def test_builtin_functions_shape() -> None:
    fns = load_suite("builtin:functions")
    assert len(fns.tasks) >= 20
    cats = {t.expectations.call_category for t in fns.tasks}
    assert {"simple", "multiple", "parallel", "irrelevance"} <= cats
    for t in fns.tasks:
        assert t.expectations.functions and t.expectations.answer_key is not None
        names = {f["name"] for f in t.expectations.functions}
        for entry in t.expectations.answer_key:
            assert set(entry) <= names
        if t.expectations.call_category == "irrelevance":
            assert t.expectations.answer_key == []
        if t.expectations.call_category == "parallel":
            assert len(t.expectations.answer_key) >= 2


def test_unknown_builtin_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown built-in suite"):
        load_suite("builtin:nope")
    with pytest.raises(InputError, match="no such file"):
        load_suite(tmp_path / "absent.yaml")


GOOD = """\
name: mine
defaults: {environment: retail, family: f}
tasks:
  - id: a
    instruction: "Cancel W1001"
    human_minutes: 3
    expectations:
      reference_calls:
        - {name: cancel_pending_order, arguments: {order_id: W1001, reason: no longer needed}}
  - id: b
    instruction: "Hello"
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_suite_loads_and_derives_state(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GOOD))
    assert [t.id for t in suite.tasks] == ["a", "b"]
    state = suite.task("a").expectations.final_state
    assert state is not None and state["orders"]["W1001"]["status"] == "cancelled"
    assert suite.task("b").family == "f"


def error_of(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.exit_code == 2
    return str(info.value).replace(str(path), "FILE")


def test_yaml_bad_value_names_its_line(tmp_path: Path) -> None:
    bad = GOOD.replace("human_minutes: 3", "human_minutes: -3")
    assert error_of(tmp_path, bad).startswith("FILE:6: human_minutes: task 'a': ")


def test_yaml_unknown_key_names_its_line(tmp_path: Path) -> None:
    bad = GOOD.replace('    instruction: "Hello"', '    instruction: "Hello"\n    famly: x')
    assert error_of(tmp_path, bad).startswith("FILE:12: famly: task 'b': unknown key")


def test_yaml_nested_error_names_its_line(tmp_path: Path) -> None:
    bad = GOOD.replace("      reference_calls:", "      control: maybe\n      reference_calls:")
    assert error_of(tmp_path, bad).startswith("FILE:8: expectations.control: task 'a': ")


def test_yaml_missing_field_points_at_the_task(tmp_path: Path) -> None:
    bad = GOOD.replace('    instruction: "Hello"\n', "")
    assert error_of(tmp_path, bad) == ("FILE:10: instruction: task 'b': required field is missing")


def test_yaml_syntax_error_and_bad_reference_call(tmp_path: Path) -> None:
    assert error_of(tmp_path, "tasks:\n  - id: a\n    instruction: [unclosed\n").startswith(
        "FILE:4: invalid YAML"
    )
    bad = GOOD.replace("order_id: W1001", "order_id: W9999")
    # At the call's own line and field: it was the task's line (FILE:4), with no field.
    assert error_of(tmp_path, bad) == (
        "FILE:9: expectations.reference_calls.0: task 'a': reference call 0 "
        "(cancel_pending_order) failed on a fresh environment: Error: order 'W9999' not found"
    )
    assert error_of(tmp_path, "oops: 1\ntasks: []\n").startswith("FILE:1: oops: unknown key")


def test_yaml_duplicate_key_is_an_error(tmp_path: Path) -> None:
    bad = GOOD.replace(
        '    instruction: "Hello"', '    instruction: "Hello"\n    instruction: "Bye"'
    )
    assert (
        error_of(tmp_path, bad)
        == "FILE:12: tasks.1.instruction: key appears twice in the same mapping"
    )


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "one.yaml")
    write(tmp_path, "- {id: a, instruction: again}\n", "two.yaml")
    with pytest.raises(InputError, match=r"two.yaml:1: id: duplicate task id 'a' \(first "
                       r"defined at .*one.yaml:4\)"):  # fmt: skip
        load_suite(tmp_path)


def test_ids_that_differ_only_in_normalization_are_one_id(tmp_path: Path) -> None:
    # "café" with U+00E9, and with "e" and U+0301: two tasks that every table showed
    # as one id, each with half the trials.
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    write(
        tmp_path,
        f"- {{id: {composed}, instruction: hi}}\n- {{id: {decomposed}, instruction: hi}}\n",
    )
    with pytest.raises(InputError, match="differ only in Unicode normalization") as info:
        load_suite(tmp_path)
    assert ":2: id: duplicate task id" in str(info.value)
    with pytest.raises(InputError, match="duplicate task id"):
        as_suite([Task(id=composed, instruction="hi"), Task(id=decomposed, instruction="hi")])


def test_ids_that_differ_only_in_invisible_characters_are_one_id(tmp_path: Path) -> None:
    # "add" and "add" with a zero-width space: one id in every table, two tasks.
    text = '- {id: add, instruction: hi}\n- {id: "ad\\u200bd", instruction: hi}\n'
    assert error_of(tmp_path, text) == (
        "FILE:2: id: duplicate task id 'ad\\u200bd' ('add' and 'ad\\u200bd' differ only in "
        "invisible characters) (first defined at FILE:1)"
    )
    with pytest.raises(InputError, match="differ only in invisible characters"):
        as_suite([Task(id="add", instruction="hi"), Task(id="ad\u200bd", instruction="hi")])


@pytest.mark.parametrize("task_id", ["add ", " add", "add\\t"])
def test_an_id_with_whitespace_at_an_end_is_refused(tmp_path: Path, task_id: str) -> None:
    # "add" and "add " were two tasks that `show --task` listed as "add , add".
    text = f'- {{id: add, instruction: hi}}\n- {{id: "{task_id}", instruction: hi}}\n'
    shown = repr(task_id.replace("\\t", "\t"))
    assert error_of(tmp_path, text) == (
        f"FILE:2: id: task {shown}: {shown} begins or ends with whitespace, which no table "
        "shows; write the id without it"
    )
    with pytest.raises(InputError, match="begins or ends with whitespace"):
        as_suite([{"id": "add ", "instruction": "hi"}])


def test_jsonl_and_directory_suites(tmp_path: Path) -> None:
    lines = [
        {"id": "j1", "instruction": "hi"},
        {"id": "j2", "instruction": "yo", "split": "heldout"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    suite = load_suite(path)
    assert [t.id for t in suite.tasks] == ["j1"] and suite.heldout_excluded == ["j2"]
    assert len(load_suite(path, include_heldout=True).tasks) == 2
    path.write_text(json.dumps({"id": "j1", "instruction": "hi"}) + "\n"
                    + json.dumps({"id": "j2", "instrution": "yo"}) + "\n")  # fmt: skip
    with pytest.raises(InputError, match=r"t.jsonl:2: instrution: unknown key"):
        load_suite(path)


def test_version_stable_and_sensitive(tmp_path: Path) -> None:
    v1 = load_suite(write(tmp_path, GOOD)).version
    assert load_suite(write(tmp_path, GOOD)).version == v1
    assert load_suite("builtin:retail").version == RETAIL.version
    # Formatting and task order do not change the content...
    a, b = GOOD.split("  - id: b")
    reordered = a.split("  - id: a")[0] + "  - id: b" + b + "  - id: a" + a.split("  - id: a")[1]
    assert load_suite(write(tmp_path, reordered)).version == v1
    assert load_suite(write(tmp_path, GOOD + "# a comment\n")).version == v1
    # ...one changed character does.
    assert load_suite(write(tmp_path, GOOD.replace("Hello", "Hellp"))).version != v1
    assert load_suite(write(tmp_path, GOOD.replace("W1001, reason: no longer needed",
                                                   "W1006, reason: no longer needed"))
                      ).version != v1  # fmt: skip


def test_examples_in_the_task_guide_load(tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "writing-tasks.md").read_text()
    blocks = [b.split("```", 1)[0] for b in guide.split("```yaml\n")[1:]]
    assert len(blocks) == 2
    full = load_suite(write(tmp_path, blocks[0], "full.yaml"))
    task = full.task("cancel_W1001")
    assert full.name == "my-shop-suite" and task.family == "cancellations"
    state = task.expectations.final_state
    assert state is not None and state["orders"]["W1001"]["status"] == "cancelled"
    assert state["payment_methods"]["card_4242"]["description"].endswith("(expires 2025)")
    fns = load_suite(write(tmp_path, blocks[1], "fns.yaml"))
    assert fns.tasks[0].expectations.call_category == "simple"


def test_yaml_error_in_a_block_value_names_the_key_line(tmp_path: Path) -> None:
    # One line lookup for suites and config files (agentgauge.yamlio.line_of): an
    # error in a nested block is reported where its key is written.
    bad = GOOD.replace(
        "    human_minutes: 3\n", "    human_minutes: 3\n    paraphrases:\n      a: 1\n"
    )
    assert error_of(tmp_path, bad).startswith("FILE:7: paraphrases: task 'a': ")


# --------------------------------------------------------------------------- as_suite
# Specs go to the suite loader; in-memory tasks get the loader's version hash.

PY_TASKS = [Task(id="b", instruction="two"), Task(id="a", instruction="one")]


def test_in_memory_tasks_are_versioned_like_a_loaded_suite(tmp_path: Path) -> None:
    suite = as_suite(PY_TASKS)
    assert (suite.name, [t.id for t in suite.tasks]) == ("python", ["b", "a"])
    assert suite.version == suite_version(PY_TASKS)
    path = tmp_path / "suite.yaml"
    path.write_text("tasks:\n  - {id: a, instruction: one}\n  - {id: b, instruction: two}\n")
    # Same tasks, other order, from a file: the same hash (tasks are sorted by id).
    assert load_suite(path).version == suite.version
    assert isinstance(as_suite(path), Suite) and as_suite(str(path)).version == suite.version


def test_dicts_are_validated_and_duplicates_rejected() -> None:
    assert [t.id for t in as_suite([{"id": "x", "instruction": "go"}]).tasks] == ["x"]
    with pytest.raises(InputError, match="duplicate task id 'a'"):
        as_suite([PY_TASKS[1], PY_TASKS[1]])


def test_missing_suite_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        as_suite(tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("empty-list.yaml", "name: mine\ntasks: []\n"),
        ("empty.yaml", ""),
        ("no-value.yaml", "name: mine\ntasks:\n"),
        ("empty.jsonl", ""),
    ],
)
def test_a_suite_without_tasks_is_refused(tmp_path: Path, name: str, text: str) -> None:
    # A run of it "succeeded": exit 0 and a run of 0 trials in the store.
    path = write(tmp_path, text, name)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert str(info.value) == f"{path}: holds no tasks: a suite needs at least one"


def test_a_suite_whose_tasks_are_all_held_out_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "- {id: a, instruction: hi, split: heldout}\n"
                           "- {id: b, instruction: yo, split: heldout}\n")  # fmt: skip
    with pytest.raises(InputError, match=r"all 2 of its tasks are held out") as info:
        load_suite(path)
    assert info.value.file == str(path)
    assert [t.id for t in load_suite(path, include_heldout=True).tasks] == ["a", "b"]


def test_an_empty_suite_writes_no_store(tmp_path: Path) -> None:
    path = write(tmp_path, "name: mine\ntasks: []\n")
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"agentgauge: error: {path}: holds no tasks: a suite needs at least one"
    )
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("defaults", "start"),
    [
        # Reported at the first task's line (4), as if the task had the typo.
        ("defaults: {environment: retail, famly: f}", "FILE:2: defaults.famly: unknown key"),
        (
            "defaults:\n  environment: retail\n  expectations:\n    anwser: {contains: [x]}",
            "FILE:5: defaults.expectations.anwser: unknown key",
        ),
        ("defaults: {human_minutes: -1}", "FILE:2: defaults.human_minutes: Input should be"),
    ],
)
def test_a_defaults_error_names_its_own_line(tmp_path: Path, defaults: str, start: str) -> None:
    text = GOOD.replace("defaults: {environment: retail, family: f}", defaults)
    assert error_of(tmp_path, text).startswith(start)


def test_a_task_error_from_a_default_names_the_default(tmp_path: Path) -> None:
    # A default that is valid alone, but not in the task's world: at the default's line.
    text = GOOD.replace(
        "defaults: {environment: retail, family: f}",
        "defaults: {family: f, user_scenario: {knwon: {}}}",
    ).replace('    instruction: "Cancel W1001"', "    environment: retail\n    instruction: x")
    assert error_of(tmp_path, text).startswith(
        "FILE:2: defaults.user_scenario.knwon: task 'a': unknown key in a retail user_scenario"
    )


@pytest.mark.parametrize(
    ("default", "start"),
    [
        ("environment: retial", "FILE:3: defaults.environment: unknown environment 'retial'"),
        (
            "user_scenario: {knwon: {}}",
            "FILE:3: defaults.user_scenario.knwon: unknown key in a retail user_scenario",
        ),
        ("initial_state: {ordrs: []}", "FILE:3: defaults.initial_state.ordrs: unknown table"),
        (
            "expectations: {minefields: [{tool: cancel_pendng_order}]}",
            "FILE:3: defaults.expectations.minefields.0.tool: unknown tool "
            "'cancel_pendng_order'; did you mean 'cancel_pending_order'?",
        ),
    ],
)
def test_a_world_error_in_defaults_is_reported_though_every_task_sets_its_own(
    tmp_path: Path, default: str, start: str
) -> None:
    # Each task set the key itself, so the default was never checked: exit 0.
    world = "family: f" if default.startswith("environment") else "environment: retail"
    text = f"""defaults:
  {world}
  {default}
tasks:
  - id: a
    environment: retail
    family: g
    user_scenario: {{known: {{}}}}
    initial_state: {{}}
    instruction: hi
    expectations: {{control: refuse}}
"""
    assert error_of(tmp_path, text).startswith(start)


def test_defaults_of_a_function_calling_world_may_name_the_tasks_functions(
    tmp_path: Path,
) -> None:
    # Its tools are each task's functions: a minefield in defaults is checked in the task.
    text = """defaults:
  environment: functions
  expectations: {minefields: [{tool: delete_all}]}
tasks:
  - id: a
    instruction: hi
    expectations:
      functions: [{name: delete_all}, {name: get}]
      answer_key: [{get: {}}]
"""
    assert [t.id for t in load_suite(write(tmp_path, text)).tasks] == ["a"]


def test_a_suite_is_named_by_its_declared_name_else_by_its_normalised_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    task = "tasks:\n  - {id: a, instruction: hi, expectations: {answer: {exact: ok}}}\n"
    Path("named.yaml").write_text("name: my-shop-suite\n" + task)
    Path("plain.yaml").write_text(task)
    # The name was ignored: the path as typed named the suite, two spellings two suites.
    for spec in ("named.yaml", "./named.yaml", str(tmp_path / "named.yaml")):
        assert load_suite(spec).name == "my-shop-suite"
        assert load_suite(spec).path == spec
    assert load_suite("./plain.yaml").name == load_suite("plain.yaml").name == "plain.yaml"
    assert load_suite("builtin:functions").name == "builtin:functions"
    # A directory: the one name its files declare; if they disagree, its path.
    Path("d").mkdir()
    Path("d/one.yaml").write_text("name: shop\n" + task)
    Path("d/two.yaml").write_text("name: shop\n" + task.replace("id: a", "id: b"))
    assert load_suite("d/").name == "shop"
    Path("d/two.yaml").write_text("name: other\n" + task.replace("id: a", "id: b"))
    assert load_suite("./d").name == "d"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("5", r"bad.yaml:1: name: expected the suite's name: one line of text"),
        ("'  '", r"bad.yaml:1: name: expected the suite's name"),
        ('"a\\nb"', r"bad.yaml:1: name: expected the suite's name"),
        # Without its line, the one refusal of a name that had none.
        ("builtin:retail", r"bad.yaml:1: name: 'builtin:retail' names a built-in suite"),
    ],
)
def test_a_name_that_cannot_name_a_suite_is_refused(
    tmp_path: Path, name: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: {name}\ntasks:\n  - {{id: a, instruction: hi}}\n")
    with pytest.raises(InputError, match=message):
        load_suite(path)


@pytest.mark.parametrize(
    ("text", "value"),
    [("5e-2", 0.05), ("1E3", 1000.0), ("-2.5e+3", -2500.0), (".5e1", 5.0), ("0.05", 0.05)],
)
def test_an_unquoted_exponent_is_a_number_as_in_yaml_1_2(
    tmp_path: Path, text: str, value: float
) -> None:
    # PyYAML reads YAML 1.1, where 5e-2 (no dot) is a string: a gate's `max: 5e-2` was
    # refused as "the string '5e-2' (write it unquoted)", though it was unquoted.
    from agentgauge.yamlio import load_yaml

    path = tmp_path / "g.yaml"
    path.write_text(f"max: {text}\nquoted: '{text}'\nword: e3\n")
    data, _ = load_yaml(path)
    assert data == {"max": value, "quoted": text, "word": "e3"}
    assert isinstance(data["max"], float)


@pytest.mark.parametrize(
    ("assertion", "error"),
    [
        # A path alone meant `equals: null`, and every trial with a value there failed
        # ("counter: expected None, got 3").
        (
            "      state_assertions:\n        - path: counter\n",
            "FILE:6: expectations.state_assertions.0: task 'a': the assertion on 'counter' "
            "says neither equals: (a value, or null) nor exists: true/false, so it asserts "
            "nothing",
        ),
        (
            "      state_assertions:\n        - {path: a, exists: true}\n"
            "        - {path: b, exists: null}\n",
            "FILE:7: expectations.state_assertions.1: task 'a': the assertion on 'b' says ",
        ),
        (
            "      checkpoints:\n        - state_assertions:\n            - {path: c}\n",
            "FILE:7: expectations.checkpoints.0.state_assertions.0: task 'a': the assertion "
            "on 'c' says ",
        ),
    ],
)
def test_a_state_assertion_must_say_what_it_asserts(
    tmp_path: Path, assertion: str, error: str
) -> None:
    head = "tasks:\n  - id: a\n    instruction: count\n    expectations:\n"
    assert error_of(tmp_path, head + assertion).startswith(error)
    # An explicit null is an assertion that the value is null.
    ok = head + "      state_assertions:\n        - {path: counter, equals: null}\n"
    task = load_suite(write(tmp_path, ok)).tasks[0]
    assert task.expectations.state_assertions[0].equals is None


@pytest.mark.parametrize("value", ["0", "false", '""', "[]"])
def test_defaults_or_tasks_of_the_wrong_type_are_refused_at_their_line(
    tmp_path: Path, value: str
) -> None:
    # `defaults: 0` was read as no defaults without a word, and `tasks: 0` said the
    # suite "holds no tasks", naming neither line nor field.
    task = "tasks:\n  - {id: a, instruction: hi}\n"
    assert error_of(tmp_path, f"name: s\ndefaults: {value}\n{task}") == (
        "FILE:2: defaults: expected a mapping"
    )
    if value != "[]":  # an empty list of tasks holds no tasks (above)
        assert error_of(tmp_path, f"name: s\ntasks: {value}\n") == (
            "FILE:2: tasks: expected a list of tasks"
        )
    # No value at all is none, as before.
    assert [t.id for t in load_suite(write(tmp_path, f"name: s\ndefaults:\n{task}")).tasks] == ["a"]


@pytest.mark.parametrize("key", ["family", "capability"])
@pytest.mark.parametrize("value", ['""', '"  "'])
def test_a_blank_grouping_label_is_refused_at_its_line(
    tmp_path: Path, key: str, value: str
) -> None:
    # Tasks with family "" formed one cluster named "" (in the clustered standard
    # errors and the bootstrap) while Suite.families left it out.
    text = f"""- {{id: a, environment: retail, instruction: hi, expectations: {{control: refuse}}}}
- id: b
  environment: retail
  {key}: {value}
  instruction: hi
  expectations: {{control: refuse}}
"""
    assert error_of(tmp_path, text) == (
        f"FILE:4: {key}: task 'b': blank ({value.strip(chr(34))!r}): name it, or leave the "
        f"key out (tasks with the same {key} are grouped in reports)"
    )
    from_defaults = f"defaults: {{{key}: {value}}}\ntasks:\n" + "\n".join(
        "  " + line for line in text.replace(f"  {key}: {value}\n", "").splitlines()
    )
    assert error_of(tmp_path, from_defaults).startswith(f"FILE:1: defaults.{key}: blank")
    with pytest.raises(InputError) as caught:
        as_suite([{"id": "a", "instruction": "hi", key: value.strip('"')}])
    assert caught.value.field == f"tasks[0].{key}"


@pytest.mark.parametrize("value", ['"  "', '"\\t"'])
def test_a_task_id_of_spaces_alone_is_refused_at_its_line(tmp_path: Path, value: str) -> None:
    # An empty id was refused, but one of spaces alone was taken: a task no report
    # could tell apart from another.
    text = f"- {{id: a, instruction: hi}}\n- id: {value}\n  instruction: hi\n"
    shown = repr(" " * 2 if value == '"  "' else "\t")
    assert error_of(tmp_path, text) == (
        f"FILE:2: id: task {shown}: blank ({shown}): give the task an id that is not only spaces"
    )
    with pytest.raises(InputError) as caught:
        as_suite([{"id": " ", "instruction": "hi"}])
    assert caught.value.field == "tasks[0].id"


@pytest.mark.parametrize("file", ["functions.yaml", "functions_executable.yaml"])
def test_a_copy_of_a_shipped_task_file_runs_as_it_is(tmp_path: Path, file: str) -> None:
    # The guide offers functions_executable.yaml as five complete tasks; a copy was
    # refused for naming the built-in suite (name: builtin:functions).
    shipped = Path(agentgauge.__file__).parent / "envs" / "functions" / "tasks" / file
    copy = tmp_path / file
    copy.write_text(shipped.read_text())
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(copy), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "success 100.0%" in out.stdout + out.stderr


def test_an_unquoted_date_is_named_a_date(tmp_path: Path) -> None:
    # "(got "2024-01-01")" read as if the id were the text the field wants.
    assert error_of(tmp_path, "tasks:\n  - id: 2024-01-01\n    instruction: hi\n") == (
        "FILE:2: id: task 0: Input should be a valid string (got a date, 2024-01-01; in "
        "YAML, quote it: '2024-01-01')"
    )


COUNTER_TASK = """\
name: t
tasks:
  - id: a
    environment: agentgauge.testing.worlds:make_counter_env
    instruction: Please add 3
    expectations:
      final_state: {counter: 3}
"""


@pytest.mark.parametrize(
    ("extra", "line", "field", "reason"),
    [
        ('    human_minutes: "5"\n', 6, "human_minutes", "string '5'"),
        ("    human_minutes: true\n", 6, "human_minutes", "boolean"),
        (
            '      rubric:\n        - {id: c, text: ok, weight: "2"}\n',
            9,
            "expectations.rubric.0.weight",
            "string '2'",
        ),
        (
            '      rubric:\n        - {id: c, text: ok, blocking: "yes"}\n',
            9,
            "expectations.rubric.0.blocking",
            "not a valid boolean",
        ),
        (
            "      minefields:\n        - {tool: reset, severity: true}\n",
            9,
            "expectations.minefields.0.severity",
            "boolean",
        ),
        (
            "      state_assertions:\n        - {path: counter, exists: 1}\n",
            9,
            "expectations.state_assertions.0.exists",
            "not a valid boolean",
        ),
        (
            '      trajectory: {mode: any_order, allow_empty: "no"}\n',
            8,
            "expectations.trajectory.allow_empty",
            "not a valid boolean",
        ),
        (
            "      response_match: {stem: 1}\n",
            8,
            "expectations.response_match.stem",
            "not a valid boolean",
        ),
    ],
)
def test_a_task_files_numbers_and_booleans_are_not_coerced(
    tmp_path: Path, extra: str, line: int, field: str, reason: str
) -> None:
    """`human_minutes: "5"` read as 5.0 and `blocking: "yes"` as true, where a trial
    file refuses both: a quoted number or a 1 for true is most often a mistake, and a
    value its author never wrote must not be graded with."""
    if extra.startswith("    human"):
        text = COUNTER_TASK.replace("    expectations:\n", extra + "    expectations:\n")
    else:
        text = COUNTER_TASK + extra
    message = error_of(tmp_path, text)
    assert message.startswith(f"FILE:{line}: {field}: task 'a': "), message
    assert reason in message, message


def test_an_unknown_top_level_key_that_is_a_number_is_named_not_a_crash(tmp_path: Path) -> None:
    """Keys of mixed types (a stray `1.5:` beside a misspelt `nme:`) could not be sorted
    to pick the one to name: a TypeError from inside the loader, not a line to fix."""
    text = "nme: t\n1.5: x\ntasks:\n  - {id: a, instruction: hi}\n"
    message = error_of(tmp_path, text)
    assert message.startswith("FILE:"), message
    assert "unknown key (a suite file has name, defaults and tasks)" in message
