"""`task_success_counts`: the per-task (n_t, c_t) behind compare, plan, robustness, validity."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from agentgauge.metrics.compare import _per_task
from agentgauge.metrics.outcome import task_success_counts
from agentgauge.table import TrialTable


def test_counts_by_hand() -> None:
    ids = np.array(["b", "a", "b", "c", "a", "b"], dtype=object)
    ok = np.array([True, False, True, False, True, False])
    got_ids, n, c = task_success_counts(ids, ok)
    # sorted ids; a: rows 1, 4 -> n=2, c=1; b: rows 0, 2, 5 -> n=3, c=2; c: row 3 -> n=1, c=0
    assert got_ids == ["a", "b", "c"]
    assert n.tolist() == [2, 3, 1]
    assert c.tolist() == [1, 2, 0]


def test_infra_errors_are_the_callers_choice() -> None:
    # t1: success, success-flagged infra error; t2: failure. With the SPEC 5.1 column
    # (success & ~infra) t1 has 1 of 2; reading the flag as recorded, 2 of 2.
    table = TrialTable.from_columns(
        3,
        task_id=np.array(["t1", "t1", "t2"], dtype=object),
        success=np.array([True, True, False]),
        infra_error=np.array([False, True, False]),
    )
    assert _per_task(table) == {"t1": (2, 1), "t2": (1, 0)}
    _, _, c = task_success_counts(table.task_id, table.success)
    assert c.tolist() == [2, 0]


@given(st.lists(st.tuples(st.sampled_from("pqrs"), st.booleans()), max_size=40))
def test_counts_match_a_plain_loop(rows: list[tuple[str, bool]]) -> None:
    ids = np.array([r[0] for r in rows], dtype=object)
    ok = np.array([r[1] for r in rows], dtype=bool)
    got_ids, n, c = task_success_counts(ids, ok)
    expect = {
        t: (sum(1 for r in rows if r[0] == t), sum(r[1] for r in rows if r[0] == t)) for t in ids
    }
    assert got_ids == sorted(expect)
    assert [(int(a), int(b)) for a, b in zip(n, c, strict=True)] == [expect[t] for t in got_ids]
    assert int(n.sum()) == len(rows)
