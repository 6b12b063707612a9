"""The Store methods that change a stored run (its config, its active grade version, the
run itself) refuse a run another live session is writing, as the commands do, in the
same words; the session holding the claim changes it as before."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import claim_from_elsewhere, dump_store

from agentgauge.harness.runner import run
from agentgauge.store import Store, claims
from agentgauge.store.claims import STALE_AFTER, RunClaimed
from agentgauge.testing.worlds import counting_agent

ROOT = Path(__file__).resolve().parents[1]
COUNTER = ROOT / "examples" / "counter-suite.yaml"

CHANGES: dict[str, Callable[[Store], Any]] = {
    "update_run_config": lambda db: db.update_run_config("r", {"trials": 9}),
    "activate_grade_version": lambda db: db.activate_grade_version("r", 2),
    "delete_run": lambda db: db.delete_run("r"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run ``r`` with an inactive grade version 2."""
    from agentgauge.api import regrade

    db = tmp_path_factory.mktemp("graded") / "s.db"
    run(str(COUNTER), counting_agent, store=db, run_id="r", progress=False)
    regrade(f"{db}:r")
    return db


def _copy(graded: Path, tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    db.write_bytes(graded.read_bytes())
    return db


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_run_a_live_session_writes_is_refused_in_the_commands_words(
    graded: Path, tmp_path: Path, change: str
) -> None:
    db = _copy(graded, tmp_path)
    claim_from_elsewhere(db, time.time() - 5)
    before = dump_store(db)
    with Store(db) as store, pytest.raises(RunClaimed) as refused:
        CHANGES[change](store)
    said = str(refused.value)
    assert said.startswith(
        "run 'r' is being written by another session (agentgauge run, pid 1 on host "
        "other-host, since 2026-01-02T03:04:05+00:00; last heartbeat "
    ), said
    assert said.endswith(
        "wait for it to end, or stop it (Ctrl-C in its terminal, or kill 1 on other-host), "
        "then run this command again"
    ), said
    assert dump_store(db) == before

    # Inside the caller's own transaction too: refused, and nothing of it lands.
    with Store(db) as store, pytest.raises(RunClaimed), store.transaction():
        CHANGES[change](store)
    assert dump_store(db) == before


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_stale_claim_stops_nobody(graded: Path, tmp_path: Path, change: str) -> None:
    db = _copy(graded, tmp_path)
    claim_from_elsewhere(db, time.time() - STALE_AFTER - 1)
    with Store(db) as store:
        CHANGES[change](store)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_session_holding_the_claim_changes_the_run(
    graded: Path, tmp_path: Path, change: str
) -> None:
    db = _copy(graded, tmp_path)
    with Store(db) as store:
        with store.transaction():
            token, _ = claims.claim(store.conn, "r")
        try:
            CHANGES[change](store)
        finally:
            claims.release(store.conn, "r", token)


def test_another_connection_of_the_claiming_process_is_refused(
    graded: Path, tmp_path: Path
) -> None:
    # A claim is its session's: the same process writing through another connection
    # (another thread's Store) is another writer.
    db = _copy(graded, tmp_path)
    with Store(db) as holder, Store(db) as other:
        with holder.transaction():
            token, _ = claims.claim(holder.conn, "r")
        try:
            with pytest.raises(RunClaimed, match=f"pid .* on host {socket.gethostname()}"):
                other.update_run_config("r", {"trials": 9})
        finally:
            claims.release(holder.conn, "r", token)
        other.update_run_config("r", {"trials": 9})  # given up: anyone may
