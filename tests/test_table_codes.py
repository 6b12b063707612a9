from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentgauge import TrialTable
from agentgauge.table import compact, factorize, group_codes, subset_codes, trial_order


def obj(values: list[object]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def test_first_appearance_order_and_none() -> None:
    uniques, codes = factorize(obj(["b", "a", "b", None, "c", None]))
    assert uniques.tolist() == ["b", "a", None, "c"]
    assert codes.tolist() == [0, 1, 0, 2, 3, 2]


@given(st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=400))
@example(["\x00", "\x00"])  # numpy strings drop trailing NULs: both must keep one code
@example(["\x00", ""])  # ... and "\x00" must not equal ""
def test_round_trip_both_paths(values: list[str | None]) -> None:
    arr = obj(values)
    uniques, codes = factorize(arr)
    assert len(set(uniques.tolist())) == len(uniques)
    assert [uniques[c] for c in codes] == values
    # first appearance: code i appears before code i + 1
    firsts = [values.index(u) for u in uniques.tolist()]
    assert firsts == sorted(firsts)


def test_many_labels_after_few_in_the_sample() -> None:
    # The first 256 rows show one label; the rest hold hundreds: both paths meet.
    values = ["x"] * 300 + [f"t{i}" for i in range(500)] + ["x"]
    uniques, codes = factorize(obj(values))
    assert uniques[0] == "x" and len(uniques) == 501
    assert [uniques[c] for c in codes] == values


def test_table_codes_cached_and_seeded() -> None:
    table = TrialTable.from_columns(
        4, task_id=obj(["a", "b", "a", "c"]), success=np.array([1, 0, 1, 1], dtype=bool)
    )
    first = table.codes("task_id")
    assert table.codes("task_id") is first
    t2 = TrialTable.from_columns(4, task_id=table.task_id, success=table.success)
    t2.seed_codes("task_id", obj(["c", "a", "b"]), np.array([1, 2, 1, 0]))
    assert t2.codes("task_id")[0].tolist() == ["c", "a", "b"]
    with pytest.raises(ValueError):
        t2.seed_codes("task_id", obj(["a", "b", "c"]), np.array([0, 0, 0, 2]))
    with pytest.raises(ValueError):
        table.codes("success")


labels = st.lists(
    st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "\x00", ""])), max_size=60
)


@given(labels, st.data())
def test_codes_of_taken_rows_are_those_of_factorizing_them(
    values: list[str | None], data: st.DataObject
) -> None:
    """A selection's codes, derived from the whole column's, equal coding it afresh:
    by index array (any order, repeats) and by boolean mask."""
    arr = obj(values)
    coded = factorize(arr)
    n = len(values)
    rows = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=40)) if n else [])
    rows = rows.astype(np.intp)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    for pick in (rows, mask):
        uniques, codes = subset_codes(coded, pick)
        want_uniques, want_codes = factorize(arr[pick])
        assert uniques.tolist() == want_uniques.tolist()
        assert codes.tolist() == want_codes.tolist()


def test_a_taken_table_derives_its_codes_from_the_table_it_came_from() -> None:
    table = TrialTable.from_columns(
        5, task_id=obj(["t1", "t2", "t1", "t3", "t2"]), success=np.ones(5, bool)
    )
    table.codes("task_id")
    sub = table.take(np.array([3, 1, 4], dtype=np.intp))
    assert sub.cached_codes("task_id") is not None  # derived, without factorizing
    uniques, codes = sub.codes("task_id")
    assert uniques.tolist() == ["t3", "t2"] and codes.tolist() == [0, 1, 1]
    # a column the parent never coded is coded on the selection itself
    assert sub.cached_codes("agent") is None
    assert sub.codes("agent")[1].tolist() == [0, 0, 0]


@given(st.lists(st.integers(0, 9), max_size=80))
def test_compact_is_unique_with_inverse(codes: list[int]) -> None:
    arr = np.array(codes, dtype=np.intp)
    held, inverse = compact(arr, 10)
    want, want_inverse = np.unique(arr, return_inverse=True)
    assert held.tolist() == want.tolist()
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()


@given(
    st.lists(st.tuples(st.sampled_from(["x", "y", None]), st.sampled_from(["m", "n"])), max_size=60)
)
def test_group_codes_number_groups_in_label_order(pairs: list[tuple[str | None, str]]) -> None:
    # By the labels alone, not by which trial was stored first: a Ray run stores its
    # trials as they finish, and its groups came out in another order than a local run's.
    n = len(pairs)
    table = TrialTable.from_columns(
        n,
        task_id=obj([f"t{i}" for i in range(n)]),
        success=np.ones(n, bool),
        agent=obj([a for a, _ in pairs]),
        model=obj([m for _, m in pairs]),
    )
    group, first = group_codes(table, ("agent", "model"))
    ordered = sorted(set(pairs), key=lambda p: (p[0] is None, p[0] or "", p[1]))
    assert group.tolist() == [ordered.index(p) for p in pairs]
    assert first.tolist() == [pairs.index(p) for p in ordered]
    assert [labels for labels, _ in table.groups(["agent", "model"])] == [
        {"agent": a, "model": m} for a, m in ordered
    ]


@given(st.permutations(["base", "fault:timeout", "paraphrase:1", "base", "fault:timeout"]))
def test_the_base_variant_is_the_first_group(variants: list[str]) -> None:
    n = len(variants)
    table = TrialTable.from_columns(
        n, task_id=obj(["t"] * n), success=np.ones(n, bool), variant=obj(variants)
    )
    _, first = group_codes(table, ("variant",))
    assert [variants[i] for i in first.tolist()] == ["base", "fault:timeout", "paraphrase:1"]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["t1", "t10", "t2"]),
            st.integers(0, 3),
            st.sampled_from(["base", "fault:x", "a"]),
            st.sampled_from(["x", "y", None]),
        ),
        max_size=40,
        unique=True,
    ),
    st.randoms(use_true_random=False),
)
def test_trial_order_is_the_same_for_trials_in_any_order(
    trials: list[tuple[str, int, str, str | None]], rnd: random.Random
) -> None:
    shuffled = list(trials)
    rnd.shuffle(shuffled)

    def ordered(rows: list[tuple[str, int, str, str | None]]) -> list[Any]:
        n = len(rows)
        table = TrialTable.from_columns(
            n,
            task_id=obj([t for t, _, _, _ in rows]),
            trial=np.array([i for _, i, _, _ in rows], dtype=np.int64),
            variant=obj([v for _, _, v, _ in rows]),
            agent=obj([a for _, _, _, a in rows]),
            success=np.ones(n, bool),
        )
        return [rows[i] for i in trial_order(table, np.arange(n, dtype=np.intp)).tolist()]

    want = sorted(
        trials, key=lambda r: (r[0], r[1], r[2] != "base", r[2], r[3] is None, r[3] or "")
    )
    assert ordered(trials) == ordered(shuffled) == want


@given(
    st.lists(st.sampled_from(["a", "b", "c", "\x00", "", None, "d"]), min_size=1, max_size=60),
    st.data(),
)
def test_take_carries_codes_as_factorize_gives_them(
    values: list[str | None], data: st.DataObject
) -> None:
    n = len(values)
    table = TrialTable.from_columns(n, task_id=obj(values), success=np.zeros(n, dtype=bool))
    table.codes("task_id")
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    index = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n)), dtype=np.intp)
    for rows in (mask, index):
        carried = table.take(rows).codes("task_id")
        uniques, codes = factorize(table.task_id[rows])
        assert carried[0].tolist() == uniques.tolist()
        assert carried[1].tolist() == codes.tolist()
    # A column not coded yet is left to be coded on use.
    assert table.take(mask).cached_codes("family") is None


def test_text_equals_is_astype_str_equality() -> None:
    labels = ["base", "paraphrase", None, "base", "fault:x", "None"]
    table = TrialTable.from_columns(
        6, task_id=obj(list("abcdef")), variant=obj(labels), success=np.zeros(6, dtype=bool)
    )
    for text in ("base", "None", "fault:x", "nothing"):
        assert (
            table.text_equals("variant", text).tolist()
            == (table.variant.astype(str) == text).tolist()
        )
    empty = table.take(np.zeros(6, dtype=bool))
    assert empty.text_equals("variant", "base").tolist() == []


def test_codes_of_a_numpy_string_column() -> None:
    # from_columns keeps a numpy string array as it is given; it is still a label column.
    table = TrialTable.from_columns(3, task_id=np.array(["b", "a", "b"]), success=[1, 0, 1])
    uniques, codes = table.codes("task_id")
    assert uniques.tolist() == ["b", "a"] and codes.tolist() == [0, 1, 0]
    assert table.text_equals("task_id", "b").tolist() == [True, False, True]


def test_memo_is_kept_while_its_basis_is_the_same_objects() -> None:
    table = TrialTable.from_columns(3, task_id=obj(["a", "b", "a"]), success=np.ones(3, bool))
    calls: list[int] = []

    def make() -> np.ndarray:
        calls.append(1)
        return np.arange(3)

    coding = table.codes("task_id")
    first = table.memo("x", (coding,), make)
    assert table.memo("x", (coding,), make) is first and len(calls) == 1
    # The column coded anew (a store seeding its own keys): derived again.
    table.seed_codes("task_id", obj(["b", "a"]), np.array([1, 0, 1]))
    assert table.memo("x", (table.codes("task_id"),), make) is not first and len(calls) == 2
