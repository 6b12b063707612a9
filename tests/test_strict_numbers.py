"""The interchange format is strict JSON: a number written as a string, or a boolean
written as "yes" or 1, is one clear error naming file, line and field (exit 2),
never silently coerced. Before, pydantic's lax mode read "0.5" as 0.5."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.importers import import_file
from agentgauge.sources import load_trials
from agentgauge.store import Store

GOOD = '{"task_id": "t1", "success": true}'


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        ('{"task_id": "t1", "success": true, "cost_usd": "0.5"}', "cost_usd", "string '0.5'"),
        ('{"task_id": "t1", "success": "yes"}', "success", "not a valid boolean: got 'yes'"),
        ('{"task_id": "t1", "success": 1}', "success", "not a valid boolean: got 1"),
        ('{"task_id": "t1", "success": true, "human_minutes": "4"}', "human_minutes", "'4'"),
        ('{"task_id": "t1", "score": "1"}', "score", "not a valid number"),
        ('{"task_id": "t1", "success": true, "trial": "2"}', "trial", "not a valid number"),
        ('{"task_id": "t1", "success": true, "tool_calls": "3"}', "tool_calls", "valid number"),
        ('{"task_id": "t1", "success": true, "input_tokens": true}', "input_tokens", "boolean"),
        ('{"task_id": "t1", "success": true, "confidence": "0.9"}', "confidence", "number"),
        (
            '{"task_id": "t1", "success": true, "grades": [{"grader": "g", "passed": "no"}]}',
            "grades.0.passed",
            "not a valid boolean",
        ),
        (
            '{"task_id": "t1", "success": true, '
            '"events": [{"type": "model_call", "cost_usd": "0.01"}]}',
            "events.0.model_call.cost_usd",
            "not a valid number",
        ),
    ],
)
def test_strings_and_lax_booleans_are_rejected_with_their_place(
    tmp_path: Path, line: str, field: str, reason: str
) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_text(f"{GOOD}\n{GOOD.replace('t1', 't2')}\n{line}\n")
    with pytest.raises(InputError) as info:
        load_trials(path)
    err = info.value
    assert (err.file, err.line, err.field) == (str(path), 3, field)
    assert reason in err.reason


def test_cli_exits_2_with_file_line_field_and_writes_no_run(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_text(f'{GOOD}\n{{"task_id": "t2", "success": true, "cost_usd": "0.5"}}\n')
    store = tmp_path / "s.db"
    for args in (["metrics", str(path)], ["import", "jsonl", str(path), "--store", str(store)]):
        proc = subprocess.run(
            [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True
        )
        assert proc.returncode == 2
        assert f"{path}:2: cost_usd: not a valid number: got the string '0.5'" in proc.stderr
        assert "Traceback" not in proc.stderr
    if store.exists():
        with Store(store, readonly=True) as db:
            assert db.list_runs() == []


def test_numbers_stay_numbers(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_text('{"task_id": "t1", "success": true, "cost_usd": 1, "human_minutes": 4}\n')
    (t,) = load_trials(path)
    assert t.cost_usd == 1.0 and t.human_minutes == 4.0


def test_metr_human_minutes_as_a_string_is_rejected(tmp_path: Path) -> None:
    rec = {"task_id": "f/t", "task_family": "f", "alias": "A", "human_minutes": "4",
           "score_binarized": 1}  # fmt: skip
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    with Store(tmp_path / "s.db") as db, pytest.raises(InputError) as info:
        import_file("metr", path, db, "r")
    assert (info.value.line, info.value.field) == (1, "human_minutes")


def test_taubench_trial_as_a_string_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "tau.json"
    path.write_text(json.dumps([{"task_id": 1, "reward": 1.0, "trial": "3", "info": {}}]))
    with Store(tmp_path / "s.db") as db, pytest.raises(InputError) as info:
        import_file("taubench", path, db, "r")
    assert info.value.field == "[0].trial" and "not a valid number" in info.value.reason


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"task_id": "a", "success": true, "metadata": {"x": 1e999}}', "metadata.x"),
        ('{"task_id": "a", "success": true, "metadata": {"x": [0, -2.5E+400]}}', "metadata.x[1]"),
        (
            '{"task_id": "a", "success": true, "metadata": {"x": 1' + "0" * 320 + ".5}}",
            "metadata.x",
        ),
    ],
)
def test_a_number_past_a_doubles_range_is_refused_and_no_store_is_left(
    tmp_path: Path, line: str, field: str
) -> None:
    """``1e999`` reads as infinity; in free-form metadata it reached the store as
    ``Infinity``, which SQLite's JSON refused, and the user was told the store was
    damaged and to restore it from a copy, with a new store file left behind."""
    path = tmp_path / "j.jsonl"
    path.write_text(f"{GOOD}\n{line}\n")
    store = tmp_path / "s.db"
    for args in (["import", "jsonl", str(path), "--store", str(store)], ["metrics", str(path)]):
        proc = subprocess.run(
            [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"agentgauge: error: {path}:2: {field}: must be a finite")
        assert len(proc.stderr.strip().splitlines()) == 1
        assert not store.exists()


def test_big_exponents_that_stay_finite_are_read() -> None:
    from agentgauge.textio import loads_json

    text = '{"a": 1e300, "b": 1e-400, "c": "de123 e+999", "d": 1.5E+0300}'
    assert loads_json(text, file="f", line=1) == {
        "a": 1e300,
        "b": 0.0,
        "c": "de123 e+999",
        "d": 1.5e300,
    }


def test_an_inspect_metric_past_a_doubles_range_is_refused(tmp_path: Path) -> None:
    # The run's settings keep Inspect's results: stored as Infinity, silently.
    fixture = Path(__file__).parent / "fixtures" / "inspect" / "tiny.json"
    data = json.loads(fixture.read_text())
    scores = data["results"]["scores"]
    first = next(iter(scores[0]["metrics"].values()))
    first["value"] = "BIG"
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data).replace('"BIG"', "1e999"))
    with Store(tmp_path / "s.db") as db, pytest.raises(InputError, match="must be a finite") as e:
        import_file("inspect", path, db)
    assert e.value.field is not None and e.value.field.startswith("results.scores[0].metrics.")


def test_the_text_test_before_the_walk_finds_every_big_literal() -> None:
    from agentgauge.textio import may_overflow

    for text in ("1e400", "[1E+400]", '{"a": -1.5e400}', '{"a":[0,\n 2e0309]}', "1" * 309 + ".0"):
        assert may_overflow(text), text
    # Exponents inside strings (a hex digest) and small ones are not numbers past the range.
    for text in ('{"d": "9f2de1234ab"}', '{"a": 1e99, "b": 1e-400}', '"1e400"'):
        assert not may_overflow(text), text
