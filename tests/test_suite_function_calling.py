"""A function-calling task's ``functions`` and ``answer_key`` are checked for BFCL's form
when the suite loads (exit 2, at the line), and the reference agent reads a key as the
grader does.

On the main branch before this change each malformed suite below loaded and every
trial failed (exit 0): an answer key value ``"Paris"`` for ``["Paris"]`` made the
oracle call ``city="P"`` (its first character) while the grader accepted ``"Paris"``;
``{get_weather: "Paris"}`` and an entry naming two functions were agent errors
(``AttributeError``, ``ValueError: too many values to unpack``); ``parameters: "city:
string"`` and ``required: [cty]`` failed every trial as the grader read them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge import Store
from agentgauge.errors import InputError
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.suite import Suite, load_suite, suite_version

SUITE = """tasks:
  - id: w
    environment: functions
    instruction: "What's the weather and the time in Paris?"
    expectations:
      functions:
        - name: get_weather
          parameters:
            type: object
            properties: {city: {type: string}}
            required: [city]
        - name: get_time
          parameters: {type: object, properties: {city: {type: string}}}
      answer_key: [{get_weather: {city: [Paris]}}]
"""


def write(tmp_path: Path, old: str, new: str) -> Path:
    assert old in SUITE
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("schema", "line", "field", "reason"),
    [
        # Read as "any value": the grader passed a number for the city.
        (
            "{city: {type: strng}}",
            10,
            "expectations.functions.0.parameters.properties.city.type",
            "get_weather.city: unknown type 'strng'; did you mean 'string'? (JSON schema's: "
            "string, integer, number, boolean, array, object, null; BFCL's: dict, float, "
            'tuple, any and its Java and JavaScript names; "" for any value)',
        ),
        (
            "{city: {type: array, items: {type: strin}}}",
            10,
            "expectations.functions.0.parameters.properties.city.items.type",
            "get_weather.city[]: unknown type 'strin'; did you mean 'string'?",
        ),
        (
            "{city: {type: dict, properties: {zip: {type: [intger, 'null']}}}}",
            10,
            "expectations.functions.0.parameters.properties.city.properties.zip.type.0",
            "get_weather.city.zip: unknown type 'intger'; did you mean 'integer'?",
        ),
        (
            "{city: {type: 5}}",
            10,
            "expectations.functions.0.parameters.properties.city.type",
            "get_weather.city: expected a type name (string, integer, ...), got a number",
        ),
    ],
)
def test_an_unknown_type_name_is_refused_at_its_line(
    tmp_path: Path, schema: str, line: int, field: str, reason: str
) -> None:
    path = write(tmp_path, "properties: {city: {type: string}}", f"properties: {schema}")
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), line, field), str(err)
    assert err.reason.startswith(f"task 'w': {reason}"), err.reason


def test_bfcl_and_json_schema_type_names_load(tmp_path: Path) -> None:
    # Every name BFCL v4's data declares (Python, Java and JavaScript categories), JSON
    # schema's, a type list, and "" (no type: any value; one nested property of
    # simple_javascript declares it) load.
    names = ["string", "dict", "integer", "boolean", "float", "array", "any", "String",
             "tuple", "Array", "HashMap", "long", "ArrayList", "Boolean", "double", "char",
             "number", "object", "null", "", "Any", "byte", "short", "Bigint", "int",
             "list", "bool", "Queue", "Stack", "Set", "Hashtable"]  # fmt: skip
    props = ", ".join(f'p{i}: {{type: "{n}"}}' for i, n in enumerate(names))
    nested = '{type: dict, properties: {issuer: {type: ""}, n: {type: [integer, "null"]}}}'
    path = write(
        tmp_path,
        "properties: {city: {type: string}}",
        f"properties: {{city: {{type: string}}, {props}, o: {nested}}}",
    )
    assert len(load_suite(path).tasks) == 1


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "reason"),
    [
        (
            "{city: [Paris]}}]",
            "{city: Paris}}]",
            14,
            "expectations.answer_key.0.get_weather.city",
            'expected a list of acceptable values (["Paris"] for this one alone; "" in the '
            "list lets the parameter be left out), got text",
        ),
        (
            "{city: [Paris]}}]",
            "Paris}]",
            14,
            "expectations.answer_key.0.get_weather",
            "expected the call's parameters, {PARAMETER: [acceptable values]}, got text",
        ),
        (
            "{city: [Paris]}}]",
            "{city: [Paris]}, get_time: {city: [Paris]}}]",
            14,
            "expectations.answer_key.0",
            "expected one call, {FUNCTION: {PARAMETER: [acceptable values]}}, got 2 functions "
            "(get_weather, get_time); parallel calls are entries of their own",
        ),
        (
            "[{get_weather: {city: [Paris]}}]",
            "[{}]",
            14,
            "expectations.answer_key.0",
            "expected one call, {FUNCTION: {PARAMETER: [acceptable values]}}, got none",
        ),
        (
            "parameters: {type: object, properties: {city: {type: string}}}",
            'parameters: "city: string"',
            13,
            "expectations.functions.1.parameters",
            "get_time: expected a JSON schema object, {type: object, properties: "
            "{PARAMETER: {type: ...}}, required: [...]}, got text",
        ),
        (
            "parameters: {type: object, properties: {city: {type: string}}}",
            "parameters: {type: string}",
            13,
            "expectations.functions.1.parameters.type",
            "get_time: expected type: object (a function's parameters are an object schema), "
            "got 'string'",
        ),
        (
            "properties: {city: {type: string}}\n",
            "properties: {city: string}\n",
            10,
            "expectations.functions.0.parameters.properties.city",
            "get_weather: expected the parameter's JSON schema ({type: string}, say), got text",
        ),
        (
            "required: [city]",
            "required: [cty]",
            11,
            "expectations.functions.0.parameters.required.0",
            "get_weather requires 'cty', which is none of its properties; did you mean "
            "'city'? (its properties: city)",
        ),
        (
            "required: [city]",
            "required: city",
            11,
            "expectations.functions.0.parameters.required",
            "get_weather: expected a list of parameter names, got text",
        ),
        (
            "- name: get_time",
            "- nme: get_time",
            12,
            "expectations.functions.1.name",
            "expected the function's name (text)",
        ),
        # A category the key contradicts: simple checked the first of two calls alone
        # (Paris then Tokyo passed whatever the second call was) ...
        (
            "[{get_weather: {city: [Paris]}}]",
            "[{get_weather: {city: [Paris]}}, {get_weather: {city: [Tokyo]}}]\n"
            "      call_category: simple",
            15,
            "expectations.call_category",
            "simple expects one call, but answer_key has 2 entries (call_category: parallel "
            "or parallel_multiple fits it; or leave call_category out to have it read from "
            "the key)",
        ),
        # ... irrelevance beside a key passed the agent that called nothing ...
        (
            "[{get_weather: {city: [Paris]}}]",
            "[{get_weather: {city: [Paris]}}]\n      call_category: irrelevance",
            15,
            "expectations.call_category",
            "irrelevance expects no call, but answer_key has 1 entry (call_category: simple "
            "or multiple fits it; or leave call_category out to have it read from the key)",
        ),
        # ... and parallel wants two calls or more.
        (
            "[{get_weather: {city: [Paris]}}]",
            "[{get_weather: {city: [Paris]}}]\n      call_category: parallel",
            15,
            "expectations.call_category",
            "parallel expects two calls or more, but answer_key has 1 entry (call_category: "
            "simple or multiple fits it; or leave call_category out to have it read from "
            "the key)",
        ),
        (
            "[{get_weather: {city: [Paris]}}]",
            "[]\n      call_category: multiple",
            15,
            "expectations.call_category",
            "multiple expects one call (of one of several functions), but answer_key has 0 "
            "entries (call_category: irrelevance fits it; or leave call_category out to have "
            "it read from the key)",
        ),
    ],
)
def test_a_key_or_doc_not_in_bfcl_form_is_refused_at_its_line(
    tmp_path: Path, old: str, new: str, line: int, field: str, reason: str
) -> None:
    path = write(tmp_path, old, new)
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert err.reason == f"task 'w': {reason}"


def test_bfcl_forms_load_and_the_oracle_passes(tmp_path: Path) -> None:
    # BFCL's own spelling of an object schema ("dict"), a function without parameters,
    # and an optional parameter ("" among its values) all load as before.
    path = write(tmp_path, "type: object, properties: {city", "type: dict, properties: {city")
    text = path.read_text().replace(
        "        - name: get_time\n", "        - name: ping\n        - name: get_time\n"
    )
    path.write_text(text.replace("{city: [Paris]}}]", '{city: [Paris, ""]}}]'))
    suite = load_suite(path)
    header = run(suite, "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    assert trial.success, [(g.grader, g.status, g.evidence) for g in trial.grades]


def test_the_reference_agent_reads_a_key_as_the_grader_does(tmp_path: Path) -> None:
    # A task in a `Suite` built in Python is not checked by the loader; the grader reads
    # "Paris" as the one acceptable value, and the oracle called city="P" (its first
    # character). A list of tasks is checked as a file's are.
    task = Task.model_validate(
        {
            "id": "w",
            "environment": "functions",
            "instruction": "Weather in Paris?",
            "expectations": {
                "functions": [
                    {
                        "name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {}}},
                    }
                ],
                "answer_key": [{"get_weather": {"city": "Paris"}}],
            },
        }
    )
    with pytest.raises(InputError) as caught:
        run([task], "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    assert str(caught.value).startswith(
        "tasks[0].expectations.answer_key.0.get_weather.city: task 'w': expected a list of "
        "acceptable values"
    )
    assert not (tmp_path / "s.db").exists()
    suite = Suite(name="python", version=suite_version([task]), tasks=[task])
    header = run(suite, "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    calls = [e for e in trial.events if e.type == "tool_call"]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert trial.success, [(g.grader, g.status, g.evidence) for g in trial.grades]


def test_the_cli_prints_one_line_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, "{city: [Paris]}}]", "{city: Paris}}]")
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(path), "--agent", "builtin:oracle",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(
        f"agentgauge: error: {path}:14: expectations.answer_key.0.get_weather.city: task 'w': "
        "expected a list of acceptable values"
    )
    assert not (tmp_path / "s.db").exists()


EXECUTABLE = """tasks:
  - id: km
    environment: functions
    instruction: "How many miles is 5 kilometres?"
    expectations:
      functions:
        - name: convert_length
          parameters:
            type: object
            properties: {value: {type: number}, from_unit: {type: string}, to_unit: {type: string}}
            required: [value, from_unit, to_unit]
      answer_key: [{convert_length: {value: [5], from_unit: ["km"], to_unit: ["mi"]}}]
      call_category: simple
      executable:
        functions:
          {name}: agentgauge.envs.functions.callables:convert_length
          split_bill: agentgauge.envs.functions.callables:split_bill
        expected: [3.10686]
        match: numeric
      required: [executable]
"""


@pytest.mark.parametrize(
    ("name", "line", "field", "reason"),
    [
        # Every trial failed as the agent's (exec:wrong_func_name), the oracle's too.
        (
            "convert_lenght",
            16,
            "expectations.executable.functions.convert_lenght",
            "'convert_lenght' is none of the task's functions; did you mean 'convert_length'? "
            "(the task's functions: convert_length)",
        ),
        (
            "to_miles",
            15,
            "expectations.executable.functions",
            "no implementation of 'convert_length', which the answer key calls: the "
            "executable grader would fail that call as the agent's (exec:wrong_func_name); "
            "add convert_length: package.module:function",
        ),
    ],
)
def test_an_executable_function_the_task_does_not_offer_is_refused_at_its_line(
    tmp_path: Path, name: str, line: int, field: str, reason: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(EXECUTABLE.replace("{name}", name))
    with pytest.raises(InputError) as caught:
        load_suite(path)
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert err.reason == f"task 'km': {reason}"


def test_an_executable_mapping_may_implement_more_than_the_task_offers(tmp_path: Path) -> None:
    # One mapping shared by several tasks (as the built-in suite's anchor): split_bill
    # is not offered here, and is not a misspelling of what is.
    path = tmp_path / "s.yaml"
    path.write_text(EXECUTABLE.replace("{name}", "convert_length"))
    suite = load_suite(path)
    header = run(suite, "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    assert trial.success, [(g.grader, g.status, g.evidence) for g in trial.grades]
