"""The garbage collector's young threshold while a run's trials are in flight: raised
(each collection walked the trials in flight, a tenth of the harness's CPU per trial),
then set back as the process had it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgauge.agents.base import Session
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.store import Store
from agentgauge.testing.worlds import make_counter_env

TASKS = [
    Task(id=f"t{i}", instruction=f"add {i}", expectations={"final_state": {"counter": i}})
    for i in range(3)
]


@pytest.fixture
def threshold() -> Iterator[tuple[int, ...]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's default, whatever the test process set
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*saved)


def _seen_during_run(tmp_path: Path) -> list[tuple[int, ...]]:
    seen: list[tuple[int, ...]] = []

    async def agent(session: Session) -> None:
        seen.append(gc.get_threshold())
        session.answer("done")

    header = run(
        TASKS,
        agent,
        trials=2,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        concurrency=4,
        progress=False,
    )
    with Store(tmp_path / "s.db", readonly=True) as db:
        assert len(db.trials(header.run_id)) == 6
    return seen


def test_a_run_raises_the_young_threshold_and_sets_it_back(
    tmp_path: Path, threshold: tuple[int, ...]
) -> None:
    seen = _seen_during_run(tmp_path)
    assert len(seen) == 6
    assert all(s[0] >= 20 * threshold[0] and s[1:] == threshold[1:] for s in seen), seen
    assert gc.get_threshold() == threshold


def test_a_higher_threshold_of_the_process_is_kept(
    tmp_path: Path, threshold: tuple[int, ...]
) -> None:
    gc.set_threshold(1_000_000, 5, 5)
    assert set(_seen_during_run(tmp_path)) == {(1_000_000, 5, 5)}
    assert gc.get_threshold() == (1_000_000, 5, 5)


def test_a_collector_turned_off_stays_off(tmp_path: Path, threshold: tuple[int, ...]) -> None:
    gc.set_threshold(0, 10, 10)
    assert set(_seen_during_run(tmp_path)) == {(0, 10, 10)}
    assert gc.get_threshold() == (0, 10, 10)


def test_runs_that_overlap_set_it_back_when_the_last_ends(threshold: tuple[int, ...]) -> None:
    from agentgauge.harness.gc_threshold import YOUNG_THRESHOLD, fewer_young_collections

    first, second = fewer_young_collections(), fewer_young_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # not in the order they began (two threads' runs)
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == threshold
