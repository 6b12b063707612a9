"""What a trial's SQL rows hold, pinned to the rules they are written by: a record
(`agentgauge.store.packed.pack`) is what setting each field by `update` makes, an
event's ``data`` is its model's JSON without defaults, ``type`` and ``t``, and the
facts' label texts are canonical JSON. The store writes these by faster routes
than the rules' own (an import writes thousands of trials at once); these tests
hold the routes to the rules, so the bytes a store keeps stay the same."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentgauge.canonical import canonical_json
from agentgauge.facts import event_facts
from agentgauge.schema import (
    ControlEvent,
    Event,
    Grade,
    MessageEvent,
    ModelCallEvent,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.store.packed import RECORD, pack, record_fields, update
from agentgauge.store.rows import event_row, record_values, trial_rows


class _Labels:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        assert type(text) is str
        return self.ids.setdefault(text, len(self.ids))


def _by_update(values: dict[str, Any], labels: _Labels) -> bytes:
    record = np.zeros(1, dtype=RECORD)[0]
    update(record, values, labels)
    return record.tobytes()


class _Text(str):
    pass


def _every_kind(fill: str) -> dict[str, Any]:
    """A value for each field of the record: none, or one of each type a field of
    its kind may be given (a plain one, a subclass, a bool, a numpy number)."""
    out: dict[str, Any] = {}
    for i, (name, kind) in enumerate(record_fields().items()):
        if fill == "none":
            out[name] = None
        elif kind == "label":
            out[name] = [f"text {i}", _Text(f"sub {i}"), "é\u2028"][i % 3]
        elif kind == "float":
            out[name] = [0.1 * i, i, True, np.float64(-2.5), math.inf, math.nan][i % 6]
        elif kind == "bool":
            out[name] = [True, False, 1, np.bool_(True)][i % 4]
        else:  # int, state
            out[name] = [i, False, np.int64(3), 2.0][i % 4]
    return out


@pytest.mark.parametrize("fill", ["none", "values"])
def test_pack_is_the_record_update_sets(fill: str) -> None:
    values = _every_kind(fill)
    by_pack, by_update = _Labels(), _Labels()
    assert pack(values, by_pack) == _by_update(values, by_update)
    assert by_pack.ids == by_update.ids


def test_pack_of_a_trial_is_the_record_update_sets() -> None:
    trial = Trial(
        task_id="t",
        trial=3,
        success=True,
        score=0.75,
        model="m",
        cost_usd=0.01,
        events=[
            ToolCallEvent(name="look", arguments={}, call_id="c"),
            ToolResultEvent(name="look", call_id="c", content="HTTP 503", is_error=True),
            ControlEvent(decision="recover"),
        ],
        grades=[Grade(grader="trajectory", passed=True, evidence={"mode": "exact"})],
    )
    values = record_values(trial)
    assert pack(values, _Labels()) == _by_update(values, _Labels())


_EVENTS: list[Event] = [
    MessageEvent(role="user", content="héllo \u2028 \x7f \x1b"),
    MessageEvent(t=1.5, role="assistant", content="ok"),
    ModelCallEvent(model="m", input_tokens=3, output_tokens=1, cost_usd=None),
    ModelCallEvent(
        t=0.25,
        model="m",
        input_tokens=3,
        output_tokens=1,
        cache_read_tokens=2,
        price_source="user prices p.yaml: m",
        latency_s=1e-7,
    ),
    ToolCallEvent(name="add", arguments={"b": 1e16, "a": [1, None]}, call_id="c1"),
    ToolResultEvent(name="add", call_id="c1", content={"sum": 2}, is_error=False),
    ControlEvent(decision="ask", reason="unsure"),
]


def test_an_events_data_is_its_json_without_defaults_type_and_t() -> None:
    for seq, e in enumerate(_EVENTS):
        expected = e.model_dump_json(exclude_defaults=True, exclude={"type", "t"})
        assert event_row(seq, e) == (seq, e.type, e.t, expected)


def test_a_trials_event_rows_are_its_events_in_order() -> None:
    trial = Trial(task_id="t", trial=0, success=False, events=_EVENTS)
    _, events, _, _ = trial_rows("r", trial)
    assert events == [event_row(i, e) for i, e in enumerate(_EVENTS)]


def test_label_facts_are_canonical_json() -> None:
    events: list[Event] = [
        ToolCallEvent(name="é\u2028\x1b", arguments={}, call_id="c"),
        ToolResultEvent(name="é\u2028\x1b", call_id="c", content="timed out", is_error=True),
        ToolResultEvent(name="x", content={"type": "Z"}, is_error=True),
        ControlEvent(decision="ask"),
    ]
    facts = event_facts(events)
    assert facts["actions"] == canonical_json(["é\u2028\x1b"])
    assert facts["error_types"] == canonical_json({"timeout": 1, "Z": 1})
    assert facts["control_decisions"] == canonical_json(["ask"])


def test_trial_rows_that_leave_other_columns_empty_are_stored_as_given(tmp_path: Path) -> None:
    """The store names only the columns a trial row has values for, a statement per
    run of rows that leave the same ones empty: the rows read back as every column
    given, nulls included, makes them, in their order and under their keys."""
    from agentgauge.schema import Run
    from agentgauge.store import Store
    from agentgauge.store.rows import INSERT_TRIAL_WITH_ID

    def trial(i: int) -> Trial:
        return Trial(
            task_id=f"t{i % 3}",
            trial=i,
            success=i % 2 == 0,
            score=None if i % 4 == 1 else 0.5,
            cost_usd=0.25 if i % 3 == 0 else None,
            answer=None if i % 5 else "yes",
            final_state={"n": i % 2} if i % 4 == 0 else None,
            metadata={"i": i},
        )

    trials = [trial(i) for i in range(12)]
    dumps = []
    for name, direct in (("grouped", False), ("direct", True)):
        with Store(tmp_path / f"{name}.db") as store:
            store.create_run(Run(run_id="r", created_at="2026-01-01T00:00:00+00:00"))
            if direct:
                with store.transaction():
                    for pk, t in enumerate(trials, 1):
                        row = trial_rows("r", t)[0]
                        store.conn.execute(INSERT_TRIAL_WITH_ID, (pk, *store._with_documents(row)))
            else:
                store.add_trials("r", trials)
            dumps.append(store.conn.execute("SELECT * FROM trials ORDER BY id").fetchall())
    assert len(dumps[0]) == len(trials)
    masked = [[row[:-1] for row in rows] for rows in dumps]  # created_at: the time written
    assert masked[0] == masked[1]
