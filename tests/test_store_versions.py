"""Stores that survive upgrades: schema versions, the upgrade from schema 1, refusals.

``tests/data/store_v1.sql`` is a store written by the schema-1 code (commit
798d263, before the compact layout) by ``tests/data/make_store_v1.py``: three
retail tasks run by ``builtin:careful`` (base and a tool-fault variant, two
trials each, with events and grades) re-graded once, four function-calling tasks
run by ``builtin:hasty``, and an imported JSONL run (non-ASCII text, an infra
and an agent error, metadata, a final state). It is kept as the text dump
Python's ``sqlite3.Connection.iterdump()`` gave; ``store_v1_metrics.json``
holds what ``agentgauge metrics DB:RUN --json`` printed for each run, and
``store_v1_trials.json`` a SHA-256 of every trial the schema-1 code read back.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.schema import Run, Trial
from agentgauge.store import SCHEMA_VERSION, Store, utc_now
from agentgauge.store.migrate import ADDED_IN

DATA = Path(__file__).parent / "data"
METRICS = json.loads((DATA / "store_v1_metrics.json").read_text())
TRIAL_DIGESTS = json.loads((DATA / "store_v1_trials.json").read_text())


def v1_store(tmp_path: Path) -> Path:
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript((DATA / "store_v1.sql").read_text(encoding="utf-8"))
    conn.execute("PRAGMA journal_mode=WAL")  # as the schema-1 code left its stores
    conn.close()
    return path


def trial_digest(store: Store, run_id: str) -> str:
    # The same digest make_store_v1.py took with the schema-1 code, over the fields
    # that code had: a field added since (ADDED_IN) must read as missing.
    dumped = [t.model_dump(mode="json") for t in store.trials(run_id)]
    for d in dumped:
        for name in ADDED_IN:
            assert d.pop(name) is None, name
    text = json.dumps(dumped, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True
    )


def metrics_json(db: Path, run_id: str) -> object:
    """The run's ``metrics --json``, every float to 12 significant digits: a standard
    error's last bit depends on how numpy's sums are vectorised on the machine (an SE
    of 1/3 read 0.33333333333333337 where the fixture was made, 0.3333333333333333 on
    another), which says nothing about the upgrade."""
    proc = cli("metrics", f"{db}:{run_id}", "--json")
    assert proc.returncode == 0, proc.stderr
    return _rounded(json.loads(proc.stdout))


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def schema_dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def columns(path: Path, table: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


def test_a_schema_1_store_is_upgraded_and_reads_the_same(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    grades_before = (
        sqlite3.connect(path)
        .execute(
            "SELECT trial_pk, version, grader, score, passed, status, evidence FROM grades"
            " ORDER BY 1, 2, 3"
        )
        .fetchall()
    )
    with Store(path) as db:  # opened for writing: upgraded
        # through 2, then 3 (grade versions), 4 (turn records), 5 (trial records), 6 (trace index)
        assert db.schema_version == SCHEMA_VERSION == 6
        assert {r.run_id for r in db.list_runs()} == set(TRIAL_DIGESTS)
        for run_id, digest in TRIAL_DIGESTS.items():
            assert trial_digest(db, run_id) == digest, run_id
        assert db.integrity_check() == "ok"
        assert db.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # Every grade version is kept, not only the latest that trials() returns.
        grades_after = db.conn.execute(
            "SELECT trial_pk, version, grader, score, passed, status, evidence FROM grades"
            " ORDER BY 1, 2, 3"
        ).fetchall()
        assert grades_after == grades_before
        (version,) = db.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        assert version == str(SCHEMA_VERSION)
        n_documents = db.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        # A new trial that ends in a state the old ones left is not stored again.
        old = next(t for t in db.trials("imported") if t.final_state is not None)
        db.add_trial(
            "imported", Trial(task_id="new", trial=0, success=True, final_state=old.final_state)
        )
        assert db.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == n_documents
    assert "final_state" not in columns(path, "trials")
    assert "final_state_id" in columns(path, "trials")
    assert "spec" not in columns(path, "tasks")
    for run_id, expected in METRICS.items():
        if run_id != "imported":  # it has one trial more now
            assert metrics_json(path, run_id) == _rounded(expected), run_id


def test_the_upgraded_store_gives_the_same_metrics(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    Store(path).close()
    for run_id, expected in METRICS.items():
        assert metrics_json(path, run_id) == _rounded(expected), run_id


def test_a_read_only_open_reads_schema_1_as_it_is(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    before = path.read_bytes()
    with Store(path, readonly=True) as db:
        assert db.schema_version == 1
        for run_id, digest in TRIAL_DIGESTS.items():
            assert trial_digest(db, run_id) == digest, run_id
        assert db.get_tasks("retail-careful")
    for run_id, expected in METRICS.items():  # the CLI's readers open read-only
        assert metrics_json(path, run_id) == _rounded(expected), run_id
    assert path.read_bytes() == before
    assert "final_state" in columns(path, "trials")


def test_a_read_of_schema_1_names_the_refresh_that_upgrades_it(tmp_path: Path) -> None:
    # Schema 1 has no records: each read derives them. The read says so once, and
    # `runs --refresh` upgrades the store and stores them, with the same metrics.
    path = v1_store(tmp_path)
    n = sqlite3.connect(path).execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    proc = cli("metrics", f"{path}:retail-careful", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout), proc.stderr
    assert proc.stderr == (
        f"note: {path}: the records of its {n} trials were never stored (store schema 1 "
        f"has none; storing them upgrades it to schema {SCHEMA_VERSION}, which older "
        "agentgauge releases cannot open), so every read derives them from the trials "
        f"(slower); store them once with: agentgauge runs --refresh --store {path}\n"
    )
    proc = cli("runs", "--refresh", "--store", str(path))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(f"{path}: stored the records of {n} trials (never ")
    assert f"; store upgraded from schema 1 to {SCHEMA_VERSION}; " in proc.stdout
    for run_id, expected in METRICS.items():
        assert metrics_json(path, run_id) == _rounded(expected), run_id
    assert cli("metrics", f"{path}:retail-careful", "--json").stderr == ""


def test_a_failed_upgrade_leaves_the_old_store_intact(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    conn = sqlite3.connect(path)
    # The last step of the upgrade (recording the new version) fails, after the
    # documents, the new columns and the dropped ones: all of it must roll back.
    conn.execute(
        "CREATE TRIGGER keep_version BEFORE UPDATE ON meta"
        " BEGIN SELECT RAISE(ABORT, 'schema version is frozen'); END"
    )
    conn.commit()
    conn.close()
    before = schema_dump(path)
    with pytest.raises(InputError, match="cannot upgrade the store: schema version is frozen"):
        Store(path)
    assert schema_dump(path) == before
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER keep_version")
    conn.commit()
    conn.close()
    with Store(path) as db:  # and it can still be upgraded
        assert trial_digest(db, "retail-careful") == TRIAL_DIGESTS["retail-careful"]


def test_a_store_from_a_newer_agentgauge_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        db.add_trial("r", Trial(task_id="a", trial=0, success=True, final_state={"x": 1}))
        db.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    before = path.read_bytes()
    good = tmp_path / "good.jsonl"
    good.write_text('{"task_id": "b", "success": true}\n')
    for readonly in (False, True):
        with pytest.raises(
            InputError, match=r"store schema 99 is newer than this agentgauge's \(6\)"
        ):
            Store(path, readonly=readonly)
    for args in (
        ("runs", "--store", str(path)),
        ("import", "jsonl", str(good), "--store", str(path)),
    ):
        proc = cli(*args)
        assert proc.returncode == 2
        assert proc.stderr.strip().count("\n") == 0 and "newer" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before


def test_a_misaligned_trials_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE trials ADD COLUMN surprise TEXT")
    conn.commit()
    conn.close()
    for readonly in (False, True):
        with pytest.raises(InputError, match=r"unknown columns: \['surprise'\]"):
            Store(path, readonly=readonly)


def test_a_database_that_is_not_a_store_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(InputError, match="not an agentgauge store"):
        Store(path)
    assert path.read_bytes() == before
    (tmp_path / "text.db").write_text("hello")
    with pytest.raises(InputError, match="not an agentgauge store"):
        Store(tmp_path / "text.db")


def test_a_schema_3_store_is_read_as_it_is_and_upgraded_to_turn_records(
    tmp_path: Path,
) -> None:
    # A schema-3 store is a schema-5 one without the turns_id column (4) and the
    # trial records (5).
    path = v1_store(tmp_path)
    with Store(path) as db:
        before = {run_id: trial_digest(db, run_id) for run_id in TRIAL_DIGESTS}
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE trials DROP COLUMN turns_id")
    conn.execute("DROP TABLE trial_facts")
    conn.execute("DROP TABLE labels")
    conn.execute("DELETE FROM meta WHERE key LIKE 'facts_%'")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with Store(path, readonly=True) as db:  # read as it is: no column added
        assert db.schema_version == 3
        assert {run_id: trial_digest(db, run_id) for run_id in TRIAL_DIGESTS} == before
    assert "turns_id" not in columns(path, "trials")
    with Store(path) as db:  # opened for writing: upgraded (through 4, 5 and 6)
        assert db.schema_version == SCHEMA_VERSION
        assert {run_id: trial_digest(db, run_id) for run_id in TRIAL_DIGESTS} == before
        turns = [{"end": 0, "state": {"orders": []}}]
        db.add_trial("imported", Trial(task_id="multi", trial=0, success=True, turns=turns))
        (new,) = [t for t in db.trials("imported") if t.task_id == "multi"]
        assert new.turns == turns and db.integrity_check() == "ok"
    assert "turns_id" in columns(path, "trials")


def _trace_lookup_plan(db: Store) -> str:
    # The statement trials_by_trace runs, for two trace ids.
    rows = db.conn.execute(
        "EXPLAIN QUERY PLAN SELECT json_extract(metadata, '$.trace_id') AS trace, MIN(id),"
        " run_id FROM trials WHERE trace IN (?, ?) GROUP BY trace",
        ("a" * 32, "b" * 32),
    ).fetchall()
    return " ".join(str(r[-1]) for r in rows)


def test_a_schema_5_store_gains_the_trace_index_and_finds_the_same_trials(
    tmp_path: Path,
) -> None:
    # A schema-5 store is a schema-6 one without the index of trials by trace id, which
    # `collect` looks up for every request (it scanned every trial's metadata before).
    path = tmp_path / "s5.db"
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        db.add_trials(
            "r",
            [
                Trial(task_id=f"t{i}", trial=0, success=True, metadata={"trace_id": f"{i:032x}"})
                for i in range(50)
            ]
            + [Trial(task_id="plain", trial=0, success=False)],
        )
        assert "trials_trace" in _trace_lookup_plan(db)
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX trials_trace")
    conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    wanted = [f"{7:032x}", f"{49:032x}", "f" * 32]
    with Store(path, readonly=True) as old:  # read as it is: the lookup scans, same answer
        assert old.schema_version == 5
        assert "trials_trace" not in _trace_lookup_plan(old)
        found = old.trials_by_trace(wanted)
    assert sorted(found) == wanted[:2]
    assert {run for _pk, run in found.values()} == {"r"}
    with Store(path) as db:  # opened for writing: upgraded
        assert db.schema_version == SCHEMA_VERSION == 6
        assert "trials_trace" in _trace_lookup_plan(db)
        assert db.trials_by_trace(wanted) == found
        assert db.integrity_check() == "ok"
