"""A task under two families is refused where trials come in, as every reader of files
and stored runs refuses it: the store's writes (one trial, many, the run's writer), a
Python list or table given to the API, and an import into a run. Nothing of the write
at fault is kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentgauge.api import compare, horizon, metrics
from agentgauge.errors import InputError
from agentgauge.schema import Run, Trial
from agentgauge.store import Store, TrialWriter, utc_now
from agentgauge.table import TrialTable


def _trial(task: str, i: int, family: str | None) -> Trial:
    return Trial(task_id=task, trial=i, success=i % 2 == 0, family=family, agent="a")


def _store(tmp_path: Path) -> Store:
    db = Store(tmp_path / "s.db")
    db.create_run(Run(run_id="r", created_at=utc_now()))
    return db


def _stored(db: Store) -> list[tuple[str, int | None, str | None]]:
    return [(t.task_id, t.trial, t.family) for t in db.trials("r")]


def test_add_trial_refuses_a_second_family_naming_both(tmp_path: Path) -> None:
    db = _store(tmp_path)
    db.add_trial("r", _trial("t", 0, "F1"))
    db.add_trial("r", _trial("t", 1, None))  # names none: says nothing of its task's
    with pytest.raises(InputError) as info:
        db.add_trial("r", _trial("t", 2, "F2"))
    err = info.value
    assert err.field == "family" and str(err.file) == str(tmp_path / "s.db")
    assert (
        "task 't' is in family 'F2' here (trial 2, agent 'a', model not recorded, variant "
        "'base') and in family 'F1' (stored: trial 0, agent 'a', model not recorded, variant "
        "'base'); a task belongs to one family" in err.reason
    )
    assert _stored(db) == [("t", 0, "F1"), ("t", 1, None)]  # nothing of trial 2
    db.add_trial("r", _trial("t", 3, "F1"))  # its own family is welcome
    db.close()


def test_add_trials_refuses_two_families_within_the_batch_and_writes_none(
    tmp_path: Path,
) -> None:
    db = _store(tmp_path)
    batch = [_trial("u", 0, None), _trial("t", 0, "F1"), _trial("t", 1, "F2")]
    with pytest.raises(InputError) as info:
        db.add_trials("r", batch)
    assert (
        "task 't' is in family 'F2' here (trial 1, agent 'a', model not recorded, variant "
        "'base') and in family 'F1' (trial 0, agent 'a', model not recorded, variant "
        "'base', in the same write)" in info.value.reason
    )
    assert _stored(db) == []
    db.close()


def test_the_run_writer_refuses_it_and_keeps_the_trials_before(tmp_path: Path) -> None:
    db = _store(tmp_path)
    db.add_trial("r", _trial("t", 0, "F1"))

    async def write() -> None:
        writer = TrialWriter(db, "r")
        await writer.submit(_trial("v", 0, "F3"))
        await writer.submit(_trial("t", 1, "F2"))
        await writer.close()

    with pytest.raises(InputError, match="task 't' is in family 'F2' here") as info:
        asyncio.run(write())
    assert info.value.field == "family"
    assert sorted(_stored(db)) == [("t", 0, "F1"), ("v", 0, "F3")]
    db.close()


def test_a_list_given_to_the_api_is_refused_naming_both_items() -> None:
    trials = [_trial("t", 0, "F1"), _trial("u", 0, None), _trial("t", 1, "F2")]
    for call in (
        lambda: metrics(trials),
        lambda: compare(trials, trials),
        lambda: horizon(trials),
    ):
        with pytest.raises(InputError) as info:
            call()
        assert (
            "task 't' is in family 'F2' here (item 2 of the list) and in family 'F1' "
            "(item 0 of the list); a task belongs to one family" in info.value.reason
        )


def test_a_table_given_to_the_api_is_refused_naming_both_rows() -> None:
    table = TrialTable.from_trials([_trial("t", 0, "F1"), _trial("t", 1, "F2")])
    with pytest.raises(InputError) as info:
        metrics(table)
    assert "task 't' is in family 'F2' here (row 1 of the table) and in family 'F1' (row 0" in (
        info.value.reason
    )


def test_a_list_whose_task_names_its_family_once_is_accepted() -> None:
    trials = [_trial("t", 0, "F1"), _trial("t", 1, None), _trial("u", 0, None)]
    report = metrics(trials)
    assert report.groups[0].outcome.n_tasks == 2
