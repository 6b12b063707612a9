"""Validity checks (SPEC 5.10) on small hand-built runs and a real store's audit log."""

from __future__ import annotations

from pathlib import Path

from agentgauge.metrics.validity import (
    HELDOUT_ACTION,
    heldout_usage,
    never_passed_tasks,
    null_agent_check,
    saturated_tasks,
)
from agentgauge.schema import Run
from agentgauge.store import Store
from agentgauge.table import TrialTable


def _t(per_task: dict[str, list[int]]) -> TrialTable:
    ids = [t for t, o in per_task.items() for _ in o]
    return TrialTable.from_columns(
        len(ids), task_id=ids, success=[bool(x) for o in per_task.values() for x in o]
    )


def test_null_agent_score_and_defects() -> None:
    # a: 0/2, b: 1/2 (a defect), c: 1/1 (a defect) → score = (0 + 0.5 + 1)/3 = 0.5
    chk = null_agent_check(_t({"a": [0, 0], "b": [0, 1], "c": [1]}))
    assert chk.score == 0.5 and chk.tasks_passed == ["b", "c"] and chk.n_tasks == 3
    assert null_agent_check(_t({})).score is None


def test_never_passed_across_agents() -> None:
    x = _t({"a": [0, 0], "b": [1], "c": [0]})
    y = _t({"a": [0], "c": [1], "d": [0]})
    assert never_passed_tasks([x, y]) == ["a", "d"]


def test_saturated_in_last_runs() -> None:
    old = _t({"a": [0], "b": [1], "c": [1]})
    r1 = _t({"a": [1, 1], "b": [1, 1], "c": [1, 0]})
    r2 = _t({"a": [1], "b": [1], "d": [1]})
    # last 2 runs: a and b perfect in both; c failed once; d absent from r1
    assert saturated_tasks([old, r1, r2], last_n=2) == ["a", "b"]
    # last 3 include old, where a failed
    assert saturated_tasks([old, r1, r2], last_n=3) == ["b"]
    assert saturated_tasks([r2], last_n=3) == []


def test_heldout_usage_from_store_audit(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        db.create_run(Run(run_id="r1", created_at="2026-01-01T00:00:00Z"))
        db.audit(HELDOUT_ACTION, run_id="r1", detail={"command": "compare"})
        db.audit("something_else", run_id="r1")
        db.audit(HELDOUT_ACTION, run_id="r1", detail={"command": "compare", "runs": ["r0", "r1"]})
        log = db.audit_log()
    use = heldout_usage(log)
    assert use.uses == 2 and use.runs == ["r1", "r0"]
    assert use.sentence().startswith("held-out tasks used 2 times")
    assert heldout_usage([]).sentence() == "held-out tasks never used"


def test_a_task_id_ending_in_nul_is_its_own_task() -> None:
    # numpy's fixed-width text drops trailing NULs: "a\x00" (never passed) was merged
    # into "a" (passed), and "never passed by any agent" said none.
    table = TrialTable.from_columns(2, task_id=["a", "a\x00"], success=[True, False])
    assert never_passed_tasks([table]) == ["a\x00"]
