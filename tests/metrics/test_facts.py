"""A stored run's metrics read from its records (agentgauge.store.packed) equal those
computed from its trials as models, to the last bit, under every way a run changes:
written by the harness, re-graded, a version activated, late spans appended, an old
store upgraded, a record layout this code does not know."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge import api
from agentgauge.facts import Facts, graded_judge_cost, trial_facts
from agentgauge.graders.regrade import regrade
from agentgauge.harness.runner import run
from agentgauge.metrics.reliability import (
    levenshtein,
    trajectory_consistency_dist,
    trajectory_consistency_seq,
)
from agentgauge.schema import Grade, ToolCallEvent, ToolResultEvent, Trial
from agentgauge.store import Store


def _json(report: Any) -> str:
    return json.dumps(report.to_dict(), sort_keys=True)


def _same(db: Path, run_id: str, **kw: Any) -> dict[str, Any]:
    """Assert that the run's metrics from its records equal those from its models."""
    grade = kw.pop("grade_version", None)
    spec = f"{db}:{run_id}" + (f"#grade={grade}" if grade is not None else "")
    fast = api.metrics(spec, **kw)
    with Store(db, readonly=True) as store:
        table, facts = store.columns(run_id, grade_version=grade)
        trials = store.trials(run_id, grade_version=grade)
    slow = api.metrics(trials, **kw)
    assert _json(fast) == _json(slow)
    # The records hold what the trials say, column by column.
    expected = Facts.from_trials(trials)
    for name, column in expected.columns.items():
        got = facts[name]
        if column.dtype == np.float64:
            assert np.array_equal(got, column, equal_nan=True), name
        else:
            assert got.tolist() == column.tolist(), name
    assert table.task_id.tolist() == [t.task_id for t in trials]
    assert table.success.tolist() == [t.success for t in trials]
    out: dict[str, Any] = fast.to_dict()
    return out


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("facts") / "s.db"
    for agent in ("hasty", "careful"):
        run(
            "builtin:retail",
            f"builtin:{agent}",
            trials=2,
            store=db,
            run_id=agent,
            progress=False,
            concurrency=4,
        )
    return db


def test_a_harness_run_reads_the_same_from_its_records(stored: Path) -> None:
    out = _same(stored, "hasty")
    group = out["groups"][0]
    # The sections the records feed are there, not missing.
    assert group["tool_use"] is not None and group["control"] is not None
    assert group["recovery"] is not None and group["turns"] is not None
    assert out["reliability"][0]["trajectory_consistency_seq"]["value"] is not None
    _same(stored, "careful", by=("agent",), exclude_infra_errors=True, k=(1, 2))


def test_re_grading_and_activating_keep_every_version_readable(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run("builtin:retail", "builtin:hasty", trials=1, store=db, run_id="r", progress=False)
    before = _same(db, "r")
    result = regrade(db, "r", ["control"], note="control only")
    assert result.version == 2
    assert _same(db, "r") == before  # not activated: the run reports what it did
    _same(db, "r", grade_version=2)
    api.activate_grade_version(f"{db}:r", 2)
    _same(db, "r")
    assert _same(db, "r", grade_version=1) == before


def test_late_spans_change_the_records_as_they_change_the_trial(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run("builtin:retail", "builtin:careful", trials=1, store=db, run_id="r", progress=False)
    with Store(db) as store:
        pk = store.trial_keys("r")[0]
        late = [
            ToolCallEvent(name="lookup", arguments={}, call_id="late1"),
            ToolResultEvent(name="lookup", call_id="late1", content="timed out", is_error=True),
        ]
        with store.transaction():
            store.append_events(pk, late, {"late": True})
    out = _same(db, "r")
    assert out["groups"][0]["recovery"]["error_types"]["timeout"]["in_successful"] >= 1


def test_a_store_of_an_unknown_record_layout_reads_the_same_and_is_rebuilt(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    run("builtin:retail", "builtin:hasty", trials=1, store=db, run_id="r", progress=False)
    before = _same(db, "r")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = 'other' WHERE key = 'facts_layout'")
    conn.execute("UPDATE trial_facts SET data = x'00'")  # unreadable as this layout
    conn.commit()
    conn.close()
    written = db.read_bytes()
    assert _same(db, "r") == before  # read-only: read as models, nothing written
    assert db.read_bytes() == written
    with Store(db) as store:  # opened for writing: the records are derived again
        assert store._layout() != "other"
    assert _same(db, "r") == before


def test_a_store_whose_records_hold_the_old_error_types_reads_the_new_ones(
    tmp_path: Path,
) -> None:
    """The error-type rules changed (a bare number is no HTTP status: "order 512 not
    found" was `transient`) while the record kept its shape: the rules' version in the
    layout stamp makes a store derived by the old rules read and keep the new types."""
    from agentgauge.schema import Run
    from agentgauge.store import utc_now
    from agentgauge.store.packed import update

    def failed(text: str) -> Trial:
        return Trial(
            task_id="t",
            trial=0,
            success=False,
            events=[
                ToolCallEvent(name="refund", arguments={}, call_id="c"),
                ToolResultEvent(name="refund", call_id="c", content=text, is_error=True),
            ],
        )

    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at=utc_now()))
        store.add_trials("r", [failed("Error: order 512 not found")])
        # As the agentgauge before the change left the store: the record holds what
        # the old rules made of the error, under the stamp it wrote.
        old_types = trial_facts(failed("Error: internal error"))["error_types"]
        (pk,) = store.trial_keys("r")
        with store.transaction():
            found = store._record_for(pk, 1)
            assert found is not None
            update(found[1], {"error_types": old_types}, store._label_id)
            store._put_record("r", pk, 1, found[1])
            store.conn.execute(
                "UPDATE meta SET value = '1:3ab2f8277620a450' WHERE key = 'facts_layout'"
            )

    def types(readonly: bool) -> object:
        with Store(db, readonly=readonly) as store:
            _, facts = store.columns("r")
        return facts["error_types"].tolist()

    new_types = trial_facts(failed("Error: order 512 not found"))["error_types"]
    assert json.loads(new_types) == {"not_found": 1}
    assert types(readonly=True) == [new_types]  # read-only: from the trial, not the record
    assert types(readonly=False) == [new_types]  # writable: the records derived again
    with Store(db, readonly=True) as store:
        assert store._layout() != "1:3ab2f8277620a450"
    assert types(readonly=True) == [new_types]  # and read from them since
    out = api.metrics(f"{db}:r").to_dict()
    assert set(out["groups"][0]["recovery"]["error_types"]) == {"not_found"}


def test_records_of_another_shape_are_made_again(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run("builtin:retail", "builtin:hasty", trials=1, store=db, run_id="r", progress=False)
    before = _same(db, "r")
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE trial_facts")
    conn.execute("CREATE TABLE trial_facts (trial_pk INTEGER, version INTEGER, data BLOB)")
    conn.execute("UPDATE meta SET value = 'older' WHERE key = 'facts_layout'")
    conn.commit()
    conn.close()
    assert _same(db, "r") == before
    with Store(db):  # opened for writing: the table is laid out again and filled
        pass
    assert _same(db, "r") == before
    columns = {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(trial_facts)")}
    assert "run_id" in columns


def test_a_deleted_run_takes_its_records_with_it(stored: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    db.write_bytes(stored.read_bytes())
    with Store(db) as store:
        store.delete_run("hasty")
        left = store.conn.execute("SELECT DISTINCT run_id FROM trial_facts").fetchall()
    assert left == [("careful",)]
    _same(db, "careful")


def test_trial_facts_of_a_trial_without_a_transcript_are_unknown() -> None:
    facts = trial_facts(Trial(task_id="t", success=True))
    assert facts["has_events"] is False and facts["actions"] is None
    assert facts["assistant_turns"] is None


# --------------------------------------------------------------------------- consistency


def _naive(ids: list[str], ok: list[bool], acts: list[tuple[str, ...]], sim: Any) -> float | None:
    """The definition: per task, the mean over pairs of successful runs; then the mean."""
    values = []
    for task in dict.fromkeys(ids):
        runs = [a for i, g, a in zip(ids, ok, acts, strict=True) if i == task and g]
        if len(runs) >= 2:
            values.append(np.mean([sim(x, y) for x, y in itertools.combinations(runs, 2)]))
    return float(np.mean(values)) if values else None


def _seq_sim(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    longest = max(len(x), len(y))
    return 1.0 if longest == 0 else 1.0 - levenshtein(x, y) / longest


def _dist_sim(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    names = sorted(set(x) | set(y))
    p = np.array([x.count(n) for n in names], dtype=float)
    q = np.array([y.count(n) for n in names], dtype=float)
    if p.sum() == 0 and q.sum() == 0:
        return 1.0
    if p.sum() == 0 or q.sum() == 0:
        return 0.0
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def h(v: np.ndarray[Any, Any]) -> float:
        v = v[v > 0]
        return float(-(v * np.log2(v)).sum())

    return 1.0 - (h(m) - (h(p) + h(q)) / 2)


runs_strategy = st.lists(
    st.tuples(
        st.sampled_from(["t1", "t2", "t3"]),
        st.booleans(),
        st.lists(st.sampled_from(["a", "b", "c"]), max_size=4).map(tuple),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(runs_strategy)
def test_consistency_counted_per_distinct_path_equals_the_mean_over_pairs(
    rows: list[tuple[str, bool, tuple[str, ...]]],
) -> None:
    ids = [r[0] for r in rows]
    ok = [r[1] for r in rows]
    acts = [r[2] for r in rows]
    for fn, sim in (
        (trajectory_consistency_seq, _seq_sim),
        (trajectory_consistency_dist, _dist_sim),
    ):
        got = fn(np.array(ids, dtype=object), np.array(ok, dtype=bool), list(acts)).value
        want = _naive(ids, ok, acts, sim)
        if want is None:
            assert got is None
        else:
            assert got == pytest.approx(want, abs=1e-12)


# --------------------------------------------------------------------------- control


def _decided(decision: str | None, events: list[str], expected: str) -> Trial:
    said = [{"type": "message", "role": "user", "content": "x"}]
    rec: dict[str, Any] = {
        "task_id": f"t-{decision}-{'-'.join(events)}-{expected}",
        "trial": 0,
        "success": True,
        "expected_control": expected,
        "events": said + [{"type": "control", "decision": d} for d in events],
    }
    if decision is not None:
        rec["control"] = decision
    return Trial.model_validate(rec)


def test_the_metrics_read_a_control_event_as_the_grader_does(tmp_path: Path) -> None:
    """graders.md: the decision is the trial's control field, else its first control
    event (recover only when the task expects it). Before, a trial without the field
    was unknown to the metrics (n 0, accuracy null) while its grade passed."""
    from agentgauge.graders.control import detect_control
    from agentgauge.metrics.behaviour import behaviour_by_group
    from agentgauge.schema import Run
    from agentgauge.store import utc_now

    trials = [
        _decided(None, ["refuse"], "refuse"),  # the event: refuse, right
        _decided("act", ["refuse"], "refuse"),  # the field wins: act, wrong
        _decided(None, ["recover", "confirm"], "confirm"),  # recover is incidental: confirm
        _decided(None, ["recover"], "recover"),  # expected: recover, right
        _decided(None, ["recover"], "act"),  # nothing but recover: not recorded, unknown
    ]
    control = behaviour_by_group(trials, ())[()]["control"]
    assert (control["n"], control["n_unknown"]) == (4, 1)
    # right: refuse/refuse, confirm/confirm, recover/recover → 3 of 4
    assert control["accuracy"] == pytest.approx(0.75)
    assert control["confusion"]["refuse"]["act"] == 1
    for t in trials[:4]:  # the grader's first rule reads the same decisions
        assert detect_control(t).source in ("field", "control_event")
    # The store's records hold the events' decisions: the same figures from them.
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at=utc_now()))
        store.add_trials("r", trials)
    assert _same(db, "r", by=())["groups"][0]["control"] == control


def test_judged_says_whether_a_model_judge_graded_the_trial() -> None:
    # The fact behind the judge's total (`cost_metrics`): a grade naming its judge model
    # (rubric, groundedness, semantic_match) marks the trial judged, whatever it cost.
    code = Grade(grader="state", passed=True)
    judge = Grade(grader="rubric", passed=None, status="unknown:undecided", judge_model="j")
    base = {"task_id": "t", "success": True}
    assert trial_facts(Trial(**base)).get("judged") is False
    assert trial_facts(Trial(**base, grades=[code]))["judged"] is False
    assert trial_facts(Trial(**base, grades=[code, judge]))["judged"] is True


def test_graded_judge_cost_sums_the_judges_spend_once_and_unknown_poisons_it() -> None:
    # What a re-graded trial's judge cost is read from (`Store.trials` under a version
    # after the first): the judged grades' `judge_cost_usd`, a rubric criterion's cost
    # not counted again beside its `rubric` grade.
    def judged(grader: str, cost: Any, model: str | None = "j") -> Grade:
        return Grade(
            grader=grader, passed=True, judge_model=model, evidence={"judge_cost_usd": cost}
        )

    rubric = judged("rubric", 3e-4)
    criterion = judged("rubric:polite", 1e-4)
    ground = judged("groundedness", 2e-4)
    code = Grade(grader="state", passed=True, evidence={"judge_cost_usd": 9.0})
    assert graded_judge_cost([code, rubric, criterion, ground]) == pytest.approx(5e-4)
    assert graded_judge_cost([criterion]) == pytest.approx(1e-4)
    assert graded_judge_cost([code]) is None  # no judge graded it
    # A rubric grade of a task without a rubric names no judge: not judged.
    assert graded_judge_cost([judged("rubric", 0.0, model=None)]) is None
    for unknown in (None, "0.1", -1.0, float("nan"), True):
        assert graded_judge_cost([rubric, judged("semantic_match", unknown)]) is None
    assert graded_judge_cost([judged("rubric", 1e308), judged("groundedness", 1e308)]) is None
