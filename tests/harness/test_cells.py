from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgauge.errors import InputError
from agentgauge.harness.cells import (
    DEFAULT_FAULT_KINDS,
    cell_seed,
    cells_of_run,
    check_variants,
    count_cells,
    expand_variants,
    fault_kinds,
)
from agentgauge.schema import Task

TWO = Task(id="a", instruction="x", paraphrases=["y", "z"])
NONE = Task(id="b", instruction="x")


def test_shorthands_expand_per_task() -> None:
    assert expand_variants(TWO, ["base", "paraphrase"]) == ["base", "paraphrase:1", "paraphrase:2"]
    assert expand_variants(NONE, ["base", "paraphrase"]) == ["base"]
    assert expand_variants(TWO, ["paraphrase"], max_paraphrases=1) == ["paraphrase:1"]
    assert expand_variants(TWO, ["paraphrase:2", "paraphrase:3"]) == ["paraphrase:2"]
    assert expand_variants(TWO, ["fault"]) == [f"fault:{k}" for k in fault_kinds()]
    assert expand_variants(TWO, ["base", "paraphrase:1", "paraphrase"]) == [
        "base",
        "paraphrase:1",
        "paraphrase:2",
    ]
    assert expand_variants(TWO, ["env:renamed_keys"]) == ["env:renamed_keys"]


def test_fault_kinds_default_covers_the_spec() -> None:
    # SPEC 6: tool errors, timeouts and rate limits.
    assert set(DEFAULT_FAULT_KINDS) == {"tool_error", "timeout", "rate_limit"}


@pytest.mark.parametrize(
    "bad", ["paraphrase:0", "paraphrase:x", "fault:meteor", "fault:timeout@2", "typo", ""]
)
def test_unknown_variants_are_rejected(bad: str) -> None:
    with pytest.raises(InputError, match=r"unknown variant|fault rate"):
        check_variants(["base", bad])


def test_known_variants_pass() -> None:
    ok = ["base", "paraphrase", "paraphrase:3", "fault", "fault:tool_error", "fault:timeout@0.5"]
    assert check_variants(ok) == ok


def test_grid_is_trial_major_and_complete() -> None:
    grid = list(cells_of_run([TWO, NONE], trials=2, variants=["base", "paraphrase"], seed=0))
    # (3 variants for a + 1 for b) x 2 trials = 8
    assert [c.key for c in grid] == [
        ("a", 0, "base"),
        ("a", 0, "paraphrase:1"),
        ("a", 0, "paraphrase:2"),
        ("b", 0, "base"),
        ("a", 1, "base"),
        ("a", 1, "paraphrase:1"),
        ("a", 1, "paraphrase:2"),
        ("b", 1, "base"),
    ]
    assert len({c.seed for c in grid}) == 8


@given(
    trials=st.integers(1, 4),
    cap=st.none() | st.integers(0, 3),
    stored=st.sets(st.tuples(st.sampled_from("abc"), st.integers(-1, 5), st.sampled_from(
        ["base", "paraphrase:1", "paraphrase:2", "paraphrase:3", "fault:timeout"]))),
)  # fmt: skip
def test_the_grid_is_counted_as_generated_without_listing_it(
    trials: int, cap: int | None, stored: set[tuple[str, int, str]]
) -> None:
    # A run counts its cells and generates them as they are launched: listing them at
    # once ran out of memory on a typo of --trials. The count must be what is generated,
    # stored cells outside the grid (a resume with fewer paraphrases) not subtracted.
    variants = ["base", "paraphrase"]
    per_trial, remaining = count_cells(
        [TWO, NONE], trials=trials, variants=variants, max_paraphrases=cap, skip=stored
    )
    grid = list(
        cells_of_run([TWO, NONE], trials=trials, variants=variants, seed=0, max_paraphrases=cap)
    )
    assert per_trial * trials == len(grid)
    assert remaining == sum(c.key not in stored for c in grid)


def test_seed_is_a_fixed_function_of_the_cell() -> None:
    # A pinned value: the seed must not change between releases (resumes and replays).
    assert cell_seed(0, "a", 0, "base") == cell_seed(0, "a", 0, "base")
    assert (
        cell_seed(0, "a", 0, "base")
        == int.from_bytes(__import__("hashlib").sha256(b"0\x1fa\x1f0\x1fbase").digest()[:8], "big")
        >> 1
    )


@given(st.integers(-(2**40), 2**40), st.text(min_size=1), st.integers(0, 1000), st.text())
def test_seed_fits_sqlite_and_differs_by_trial(s: int, task: str, trial: int, variant: str) -> None:
    a = cell_seed(s, task, trial, variant)
    assert 0 <= a < 2**63
    assert a != cell_seed(s, task, trial + 1, variant)
