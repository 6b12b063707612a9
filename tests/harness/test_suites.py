"""`as_suite`: specs go to the suite loader; in-memory tasks get the loader's version hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.harness.suites import as_suite
from agentgauge.schema import Task
from agentgauge.suite import Suite, load_suite, suite_version

TASKS = [Task(id="b", instruction="two"), Task(id="a", instruction="one")]


def test_in_memory_tasks_are_versioned_like_a_loaded_suite(tmp_path: Path) -> None:
    suite = as_suite(TASKS)
    assert (suite.name, [t.id for t in suite.tasks]) == ("python", ["b", "a"])
    assert suite.version == suite_version(TASKS)
    path = tmp_path / "suite.yaml"
    path.write_text("tasks:\n  - {id: a, instruction: one}\n  - {id: b, instruction: two}\n")
    # Same tasks, other order, from a file: the same hash (tasks are sorted by id).
    assert load_suite(path).version == suite.version
    assert isinstance(as_suite(path), Suite) and as_suite(str(path)).version == suite.version


def test_dicts_are_validated_and_duplicates_rejected() -> None:
    assert [t.id for t in as_suite([{"id": "x", "instruction": "go"}]).tasks] == ["x"]
    with pytest.raises(InputError, match="duplicate task id 'a'"):
        as_suite([TASKS[1], TASKS[1]])


def test_missing_suite_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        as_suite(tmp_path / "absent.yaml")
