"""A store whose trial records were derived by another agentgauge's rules (an older
release's `agentgauge.facts.RULES`): read-only commands say so once, on stderr, with
the command that stores them anew (``agentgauge runs --refresh``), which re-derives
them in one transaction and changes no trial, grade or metric."""

from __future__ import annotations

import json
import os
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli, dump_store

from agentgauge.facts import RULES
from agentgauge.harness.runner import run
from agentgauge.store import StaleRecordsWarning, Store
from agentgauge.store.packed import LAYOUT

#: The stamp an agentgauge whose rules were one version older wrote: its facts were
#: derived by other rules, the record's shape the same.
OLD_LAYOUT = f"{RULES - 1}:{LAYOUT.split(':', 1)[1]}"


@pytest.fixture(scope="module")
def current(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("current") / "s.db"
    run("builtin:retail", "builtin:hasty", trials=2, store=db, run_id="r", progress=False)
    return db


def _stale(current: Path, tmp_path: Path) -> Path:
    """A copy of ``current`` as the older release left it: its records stamped with
    the older rules (and so not to be trusted), its trials and grades the same."""
    db = tmp_path / "s.db"
    db.write_bytes(current.read_bytes())
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'facts_layout'", (OLD_LAYOUT,))
    conn.commit()
    conn.close()
    return db


def _layout(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'facts_layout'").fetchone()[0])
    finally:
        conn.close()


def _trials(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    finally:
        conn.close()


def _note(db: Path) -> str:
    n = _trials(db)
    return (
        f"note: {db}: the records of its {n} trials were derived by another agentgauge's "
        f"rules, so every read derives them from the trials (slower); store them once with: "
        f"agentgauge runs --refresh --store {db}\n"
    )


def test_a_read_of_a_stale_store_says_so_once_and_json_stays_clean(
    current: Path, tmp_path: Path, cli: Cli
) -> None:
    db = _stale(current, tmp_path)
    before = db.read_bytes()
    code, out, err = cli("metrics", f"{db}:r", "--json")
    assert code == 0, err
    assert err == _note(db)  # one line, however often the command opened the store
    assert json.loads(out)["groups"]
    # Two sides of one store, a report, a listing: the note once per command each.
    code, out, err = cli("compare", f"{db}:r", f"{db}:r", "--json")
    assert code == 0, err
    assert err.count("note:") == 1 and json.loads(out)
    # The same store spelt two ways is one store: one note (it gave one per spelling).
    code, out, err = cli("compare", f"{db}:r", f"{os.path.relpath(db)}:r", "--json")
    assert code == 0, err
    assert err.count("note:") == 1 and json.loads(out)
    code, _, err = cli("runs", "--store", str(db))
    assert (code, err) == (0, _note(db))
    assert db.read_bytes() == before  # reading wrote nothing
    assert _layout(db) == OLD_LAYOUT


def test_a_current_store_reads_without_a_note(current: Path, cli: Cli) -> None:
    code, _, err = cli("metrics", f"{current}:r", "--json")
    assert (code, err) == (0, "")


def test_refresh_stores_the_records_anew_and_changes_no_metric(
    current: Path, tmp_path: Path, cli: Cli
) -> None:
    db = _stale(current, tmp_path)
    n = _trials(db)
    reads = [("metrics", f"{db}:r", "--json"), ("show", f"{db}:r", "--json")]
    before = [cli(*args)[1] for args in reads]
    code, out, err = cli("runs", "--refresh", "--store", str(db))
    assert (code, err) == (0, ""), err
    assert out.startswith(f"{db}: stored the records of {n} trials (derived by another ")
    assert "agentgauge runs --refresh" not in out
    assert _layout(db) == LAYOUT
    after = [cli(*args) for args in reads]
    assert [e for _, _, e in after] == ["", ""]  # no note: the records are current
    assert [o for _, o, _ in after] == before  # byte for byte
    # The same numbers as a store whose records were never stale.
    assert json.loads(before[0]) == json.loads(cli("metrics", f"{current}:r", "--json")[1])
    code, out, err = cli("runs", "--refresh", "--store", str(db), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "schema": "agentgauge.runs.refresh/1",
        "store": str(db),
        "schema_version": {"before": 6, "after": 6},
        "trials": 0,
        "reason": None,
        "seconds": json.loads(out)["seconds"],
    }


def test_refresh_in_json_says_what_it_did(current: Path, tmp_path: Path, cli: Cli) -> None:
    db = _stale(current, tmp_path)
    code, out, err = cli("runs", "--refresh", "--store", str(db), "--json")
    assert (code, err) == (0, "")
    done = json.loads(out)
    assert done["trials"] == _trials(db)
    assert done["reason"] == "derived by another agentgauge's rules"
    assert isinstance(done["seconds"], float)


def test_a_failed_refresh_leaves_the_store_as_it_was_and_readable(
    current: Path, tmp_path: Path, cli: Cli
) -> None:
    db = _stale(current, tmp_path)
    expected = cli("metrics", f"{db}:r", "--json")[1]
    conn = sqlite3.connect(db)
    # The last step (stamping the new layout) fails, after the tables were made again
    # and every record derived: all of it must roll back.
    conn.execute(
        "CREATE TRIGGER keep_layout BEFORE INSERT ON meta WHEN NEW.key = 'facts_layout'"
        " BEGIN SELECT RAISE(ABORT, 'layout is frozen'); END"
    )
    conn.commit()
    conn.close()
    before = dump_store(db)
    code, out, err = cli("runs", "--refresh", "--store", str(db))
    assert code != 0 and out == ""
    assert "layout is frozen" in err and "Traceback" not in err
    assert dump_store(db) == before
    code, out, err = cli("metrics", f"{db}:r", "--json")
    assert (code, out, err) == (0, expected, _note(db))


def test_an_interrupted_refresh_leaves_the_store_as_it_was(
    current: Path, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentgauge.store.database as database

    db = _stale(current, tmp_path)
    expected = cli("metrics", f"{db}:r", "--json")[1]
    before = dump_store(db)
    calls = 0
    pack = database.pack

    def ctrl_c_half_way(*args: Any, **kwargs: Any) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt
        return pack(*args, **kwargs)

    monkeypatch.setattr(database, "pack", ctrl_c_half_way)
    code, out, err = cli("runs", "--refresh", "--store", str(db))
    assert (code, out) == (130, "")
    assert err == "interrupted: nothing stored (the store is as it was, and reads as before)\n"
    assert calls == 5
    monkeypatch.undo()
    assert dump_store(db) == before
    assert cli("metrics", f"{db}:r", "--json")[1] == expected


def test_a_writable_open_stores_them_anew_and_says_so(current: Path, tmp_path: Path) -> None:
    db = _stale(current, tmp_path)
    n = _trials(db)
    with pytest.warns(StaleRecordsWarning) as caught:
        Store(db).close()
    assert [str(w.message) for w in caught] == [
        f"{db}: storing the records of its {n} trials, derived by another agentgauge's rules (once)"
    ]
    assert _layout(db) == LAYOUT
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # current now: no warning at all
        Store(db, readonly=True).close()
        Store(db).close()


def test_a_command_that_writes_says_it_stores_them_and_its_json_stays_clean(
    current: Path, tmp_path: Path, cli: Cli
) -> None:
    db = _stale(current, tmp_path)
    code, out, err = cli("runs", "--mark", "r", "null", "--store", str(db), "--json")
    assert code == 0, err
    assert json.loads(out)["role"] == "null"
    assert err == (
        f"note: {db}: storing the records of its {_trials(db)} trials, derived by another "
        "agentgauge's rules (once)\n"
    )
    assert _layout(db) == LAYOUT


def test_from_python_a_stale_read_warns(current: Path, tmp_path: Path) -> None:
    from agentgauge import api

    db = _stale(current, tmp_path)
    with pytest.warns(StaleRecordsWarning, match="agentgauge runs --refresh --store"):
        api.metrics(f"{db}:r")
    with Store(db, readonly=True) as store:
        stale = store.stale_records()
    assert stale is not None and stale.trials == _trials(db)
    with Store(current, readonly=True) as store:
        assert store.stale_records() is None


def test_refresh_of_no_store_is_refused(tmp_path: Path, cli: Cli) -> None:
    code, out, err = cli("runs", "--refresh", "--store", str(tmp_path / "none.db"))
    assert (code, out) == (2, "")
    assert "no such store" in err
    assert not (tmp_path / "none.db").exists()


def test_refresh_with_mark_is_refused(current: Path, tmp_path: Path, cli: Cli) -> None:
    db = _stale(current, tmp_path)
    code, _, err = cli("runs", "--refresh", "--mark", "r", "null", "--store", str(db))
    assert code == 2 and "--refresh" in err
    assert _layout(db) == OLD_LAYOUT


def _storing(db: Path) -> str:
    return (
        f"note: {db}: storing the records of its {_trials(db)} trials, derived by another "
        "agentgauge's rules (once)\n"
    )


@pytest.mark.parametrize("run_id", ["r", "new"], ids=["resumed", "new-run"])
def test_a_run_into_a_stale_store_says_it_stores_them_once(
    current: Path, tmp_path: Path, cli: Cli, run_id: str
) -> None:
    # The run looks into the store before it writes: that look said the read's note
    # (pointing at `runs --refresh`, which the run itself then made needless) as well.
    db = _stale(current, tmp_path)
    expected = _storing(db)
    args = ("builtin:retail", "--agent", "builtin:hasty", "--store", str(db), "--run-id", run_id)
    code, _, err = cli("run", *args, "--trials", "3", "--no-progress")
    assert code == 0, err
    assert [line for line in err.splitlines(keepends=True) if line.startswith("note:")] == [
        expected
    ]
    assert _layout(db) == LAYOUT


@pytest.mark.parametrize("source", ["{db}:r", "{db}"], ids=["db-run", "db"])
def test_a_regrade_of_a_stale_store_says_it_stores_them_once(
    current: Path, tmp_path: Path, cli: Cli, source: str
) -> None:
    db = _stale(current, tmp_path)
    expected = _storing(db)
    code, out, err = cli("grade", source.format(db=db), "--json")
    assert code == 0, err
    assert err == expected and json.loads(out)["version"] == 2
    (tmp_path / "b").mkdir()
    db = _stale(current, tmp_path / "b")
    code, out, err = cli("grade", source.format(db=db), "--activate-version", "1", "--json")
    assert code == 0, err
    assert err == _storing(db) and json.loads(out)["versions"]


def test_a_python_run_into_a_stale_store_warns_once(current: Path, tmp_path: Path) -> None:
    db = _stale(current, tmp_path)
    expected = _storing(db)[len("note: ") : -1]
    with pytest.warns(StaleRecordsWarning) as caught:
        run("builtin:retail", "builtin:hasty", trials=3, store=db, run_id="r", progress=False)
    assert [str(w.message) for w in caught] == [expected]


def test_collect_into_a_stale_store_says_it_stores_them_once(current: Path, tmp_path: Path) -> None:
    from tests.collect.test_receiver import Collector

    db = _stale(current, tmp_path)
    expected = _storing(db)
    receiver = Collector(db)
    try:
        code, _, err = receiver.stop()
    finally:
        receiver.kill()
    assert code == 0, err
    assert err == expected
    assert _layout(db) == LAYOUT


@pytest.fixture(scope="module")
def with_heldout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentgauge.suite import load_suite

    db = tmp_path_factory.mktemp("heldout") / "s.db"
    full = load_suite("builtin:retail", include_heldout=True)
    for run_id, agent in (("a", "builtin:hasty"), ("b", "builtin:careful")):
        run(full, agent, trials=1, store=db, run_id=run_id, progress=False)
    return db


def test_a_compare_that_logs_a_heldout_use_says_it_stores_them_once(
    with_heldout: Path, tmp_path: Path, cli: Cli
) -> None:
    # It read the store (the read's note, twice: once more under its absolute path to
    # count the uses so far), then logged the use, storing the records anew (a third).
    db = _stale(with_heldout, tmp_path)
    code, out, err = cli("compare", f"{db}:a", f"{db}:b", "--include-heldout", "--json")
    assert code == 0, err
    assert err == _storing(db) and json.loads(out)["record"]
    assert _layout(db) == LAYOUT


def test_a_compare_that_reads_no_heldout_task_says_the_read_note_once(
    current: Path, tmp_path: Path, cli: Cli
) -> None:
    # `--include-heldout` over runs with no held-out task writes nothing: the read's note.
    db = _stale(current, tmp_path)
    code, out, err = cli("compare", f"{db}:r", f"{db}:r", "--include-heldout", "--json")
    assert code == 0, err
    assert err == _note(db) and json.loads(out)["record"]
    assert _layout(db) == OLD_LAYOUT


def test_the_python_compare_of_heldout_tasks_warns_once(with_heldout: Path, tmp_path: Path) -> None:
    import agentgauge

    db = _stale(with_heldout, tmp_path)
    with pytest.warns(StaleRecordsWarning) as caught:
        agentgauge.compare(f"{db}:a", f"{db}:b", include_heldout=True)
    assert [str(w.message) for w in caught] == [_storing(db)[len("note: ") : -1]]
