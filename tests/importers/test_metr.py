from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.importers import import_file
from agentgauge.store import Store

GOOD: dict[str, Any] = {
    "run_id": "r1",
    "task_id": "fam/main",
    "task_family": "fam",
    "alias": "Agent X",
    "model": "x-1",
    "human_minutes": 12.5,
    "score_binarized": 1,
    "score": 0.9,
    "fatal_error_from": None,
    "invsqrt_task_weight": 0.5,
}


def write(tmp_path: Path, *records: dict[str, Any] | str) -> Path:
    path = tmp_path / "runs.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_metr_file_imports_with_its_mapping(shared_data: Path, tmp_path: Path) -> None:
    path = shared_data / "metr" / "all_runs.jsonl"
    with Store(tmp_path / "s.db") as db:
        run = import_file("metr", path, db, "metr")
        trials = db.trials("metr", events=False)
    assert run.n_trials == 7063
    assert len({t.agent for t in trials}) == 11
    assert len({t.task_id for t in trials}) == 83
    assert len({t.family for t in trials}) == 36
    assert sum(t.success for t in trials) == 2129  # score_binarized: 2129 ones, 4934 zeros
    humans = [t for t in trials if t.agent == "human"]
    assert len(humans) == 211 and all(t.metadata["human_baseline"] for t in humans)
    first = trials[0]
    assert first.task_id == "ai_rd_fix_embedding/main" and first.family == "ai_rd_fix_embedding"
    assert first.agent == "Claude 3 Opus" and first.model == "c3o"
    assert first.human_minutes == pytest.approx(556.6)
    assert first.score == pytest.approx(0.0000122771)
    assert first.metadata["run_id"] == "mp4-server_205615"
    assert first.metadata["invsqrt_task_weight"] == pytest.approx(0.0005578143)
    # 168 runs succeed by METR's threshold with a score below 1: both are kept as given.
    assert sum(1 for t in trials if t.success and t.score is not None and t.score < 1) == 168


def test_score_is_clipped_and_raw_value_kept(tmp_path: Path) -> None:
    path = write(tmp_path, {**GOOD, "score": 1.045}, {**GOOD, "run_id": "r2", "score": -0.2})
    with Store(tmp_path / "s.db") as db:
        import_file("metr", path, db, "m")
        a, b = db.trials("m", events=False)
    assert a.score == 1.0 and a.metadata["score_raw"] == 1.045
    assert b.score == 0.0 and b.metadata["score_raw"] == -0.2
    assert (a.trial, b.trial) == (0, 1)  # two runs of one task: trial indices by order


def test_missing_score_falls_back_to_success(tmp_path: Path) -> None:
    record = {k: v for k, v in GOOD.items() if k != "score"}
    path = write(tmp_path, record)
    with Store(tmp_path / "s.db") as db:
        import_file("metr", path, db, "m")
        (t,) = db.trials("m", events=False)
    assert t.success is True and t.score == 1.0


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"human_minutes": None}, "human_minutes", "required field is missing"),
        ({"human_minutes": 0}, "human_minutes", "positive number"),
        ({"human_minutes": "ten"}, "human_minutes", "positive number"),
        ({"score_binarized": 0.5}, "score_binarized", "must be 0, 1, true or false"),
        ({"score_binarized": None}, "score_binarized", "required field is missing"),
        ({"alias": None}, "alias", "required field is missing"),
        ({"task_family": ""}, "task_family", "must not be empty"),
        ({"task_id": ["x"]}, "task_id", "expected a string"),
        ({"score": "high"}, "score", "expected a number"),
    ],
)
def test_bad_field_names_file_line_and_field(
    tmp_path: Path, change: dict[str, Any], field: str, reason: str
) -> None:
    path = write(tmp_path, GOOD, {**GOOD, "run_id": "r2", **change})
    with Store(tmp_path / "s.db") as db:
        with pytest.raises(InputError) as err:
            import_file("metr", path, db, "m")
        assert db.list_runs() == []  # nothing written
    assert err.value.file == str(path) and err.value.line == 2 and err.value.field == field
    assert reason in str(err.value)
    assert str(err.value).startswith(f"{path}:2: {field}: ")


def test_bad_json_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD, "{not json")
    with Store(tmp_path / "s.db") as db, pytest.raises(InputError) as err:
        import_file("metr", path, db, "m")
    assert err.value.line == 2 and "invalid JSON" in str(err.value)
