"""Fuzzing every input file format: arbitrary bytes and arbitrary JSON/YAML values
either load or fail with one `InputError` line, never with another exception.

The importers run all the way into a real SQLite store (the store is where an
integer past 2^63 used to blow up), suites and gates through their public
loaders. Example counts stay modest so the whole suite stays fast.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgauge.errors import InputError
from agentgauge.importers import import_file
from agentgauge.report.gates import load_gate_config
from agentgauge.schema import TRIAL_FIELDS
from agentgauge.suite import load_suite

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Structured documents mostly load, and a loaded import writes a store: fewer of them.
FUZZ_DOCS = settings(FUZZ, max_examples=100)
_counter = itertools.count()

# JSON values with the awkward corners in: huge and negative integers, floats
# past a float's range on the way in, deep-ish nesting, control characters.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**63, -(2**63) - 1, 10**400, 10**30, -1, 0, 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _record(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of ``keys`` (the format's own fields) holding any JSON value."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), json_values, max_size=8)


TRIAL_KEYS = [f.name for f in TRIAL_FIELDS] + ["events", "grades"]
TAU_KEYS = ["task_id", "reward", "trial", "info", "traj", "task", "actions", "kwargs", "role"]
METR_KEYS = ["task_id", "task_family", "alias", "model", "human_minutes", "score_binarized"]
METR_KEYS += ["score", "run_id"]


def _fresh(tmp_path: Path, name: str) -> Path:
    return tmp_path / f"{next(_counter)}-{name}"


def _loads_or_one_line(load: Any, path: Path) -> None:
    try:
        load(path)
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message and "\r" not in message, message
        assert message.startswith(str(path)), message


def _import(fmt: str, tmp_path: Path) -> Any:
    def load(path: Path) -> None:
        store = _fresh(tmp_path, "s.db")
        try:
            import_file(fmt, path, store)
        except InputError:
            assert not store.exists(), "a failed import left a store file"
            raise

    return load


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("jsonl", ".jsonl"), ("taubench", ".json"), ("metr", ".jsonl")]
)
@FUZZ
@given(data=st.binary(max_size=300))
def test_importers_take_arbitrary_bytes(tmp_path: Path, fmt: str, suffix: str, data: bytes) -> None:
    path = _fresh(tmp_path, "in" + suffix)
    path.write_bytes(data)
    _loads_or_one_line(_import(fmt, tmp_path), path)


@FUZZ_DOCS
@given(records=st.lists(_record(TRIAL_KEYS) | json_values, min_size=1, max_size=3))
def test_jsonl_import_takes_arbitrary_records(tmp_path: Path, records: list[Any]) -> None:
    path = _fresh(tmp_path, "in.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _loads_or_one_line(_import("jsonl", tmp_path), path)


_message = _record(["role", "content", "tool_calls", "tool_call_id", "name", "function"])
_tau_record = st.fixed_dictionaries(
    {"task_id": json_values, "reward": st.floats(0, 1) | json_values},
    optional={
        "trial": json_values,
        "info": json_values | _record(["task", "user_cost", "reward_info"]),
        "traj": st.lists(_message | json_values, max_size=3) | json_values,
    },
)


@FUZZ_DOCS
@given(document=st.lists(_tau_record | json_values, max_size=3) | json_values)
def test_taubench_import_takes_arbitrary_documents(tmp_path: Path, document: Any) -> None:
    path = _fresh(tmp_path, "in.json")
    path.write_text(json.dumps(document))
    _loads_or_one_line(_import("taubench", tmp_path), path)


_metr_record = st.fixed_dictionaries(
    {
        "task_id": st.text(min_size=1, max_size=5) | json_values,
        "task_family": st.just("f") | json_values,
        "alias": st.just("a") | json_values,
        "human_minutes": st.floats(0.1, 100) | json_values,
        "score_binarized": st.sampled_from([0, 1]) | json_values,
    },
    optional={"score": json_values, "model": json_values},
)


@FUZZ_DOCS
@given(records=st.lists(_metr_record | _record(METR_KEYS), min_size=1, max_size=3))
def test_metr_import_takes_arbitrary_records(tmp_path: Path, records: list[Any]) -> None:
    path = _fresh(tmp_path, "in.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _loads_or_one_line(_import("metr", tmp_path), path)


@pytest.mark.parametrize("load", [load_suite, load_gate_config], ids=["suite", "gates"])
@FUZZ
@given(data=st.binary(max_size=300))
def test_yaml_loaders_take_arbitrary_bytes(tmp_path: Path, load: Any, data: bytes) -> None:
    path = _fresh(tmp_path, "in.yaml")
    path.write_bytes(data)
    _loads_or_one_line(load, path)


_task = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=5) | json_values,
        "instruction": st.just("hi") | json_values,
    },
    optional={
        "expectations": _record(["final_state", "answer", "reference_calls", "rubric"]),
        "metadata": json_values,
        "environment": json_values,
        "human_minutes": json_values,
    },
)
_gate = _record(["metric", "min", "max", "type", "bound", "margin", "where", "name"])


def _yaml_text(value: Any) -> str:
    # YAML has no integers past a float as JSON does; dump the value as YAML would read it.
    return yaml.safe_dump(value, allow_unicode=True)


@FUZZ_DOCS
@given(
    document=st.lists(_task | json_values, max_size=3)
    | st.fixed_dictionaries({"tasks": st.lists(_task, max_size=2)})
    | json_values
)
def test_suites_take_arbitrary_documents(tmp_path: Path, document: Any) -> None:
    path = _fresh(tmp_path, "in.yaml")
    path.write_text(_yaml_text(document))
    _loads_or_one_line(load_suite, path)


@FUZZ_DOCS
@given(
    document=st.fixed_dictionaries(
        {"gates": st.lists(_gate, max_size=3)},
        optional={"deployment_k": json_values, "variants": json_values},
    )
    | json_values
)
def test_gates_take_arbitrary_documents(tmp_path: Path, document: Any) -> None:
    path = _fresh(tmp_path, "in.yaml")
    path.write_text(_yaml_text(document))
    _loads_or_one_line(load_gate_config, path)
