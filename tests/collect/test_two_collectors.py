"""Two ``agentgauge collect`` sessions writing into one run of one store.

Each receiver numbers the trials of traces that name no ``agentgauge.trial`` itself.
It read the run's trials once, when it started, so the second receiver gave its first
trace index 0, which the first had stored meanwhile: answered 200, then "not stored:
trial 0 of task 't' ... is already stored". The index a receiver chose is now taken
again, the next free one, when the store says another session took it. A trace that
names its own index and clashes is still its client's clash.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

from agentgauge.store import Store

ROOT = {"agentgauge.task.id": "t", "agentgauge.outcome.success": True}


def trace(n: int, **attrs: object) -> bytes:
    return json.dumps(
        request(span(f"{n:016x}", "invoke_agent", {**ROOT, **attrs}, trace=f"{n:032x}"))
    ).encode()


def stored_indices(db: Path) -> list[int | None]:
    with Store(db, readonly=True) as store:
        return sorted(t.trial for t in store.trials("live"))  # type: ignore[type-var]


def test_a_trial_numbered_by_the_receiver_takes_the_next_free_index(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first, second = Collector(db), Collector(db)
    try:
        for n, receiver in enumerate([first, second, second], start=1):
            status, body = receiver.post(trace(n), "application/json")
            assert (status, body) == (200, b"{}"), body
        code, out_1, err_1 = first.stop()
        assert code == 0 and err_1 == "", err_1
        code, out_2, err_2 = second.stop()
        assert code == 0 and err_2 == "", err_2
    finally:
        first.kill()
        second.kill()
    assert "stored 1 trial" in out_1 and "stored 2 trials" in out_2
    assert stored_indices(db) == [0, 1, 2]


def test_many_traces_sent_to_both_at_once_are_all_stored(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    receivers = [Collector(db), Collector(db)]
    try:
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(
                    lambda n: receivers[n % 2].post(trace(n), "application/json"), range(1, 41)
                )
            )
        assert all(answer == (200, b"{}") for answer in answers), answers
        for receiver in receivers:
            code, _out, err = receiver.stop()
            assert code == 0 and err == "", err
    finally:
        for receiver in receivers:
            receiver.kill()
    assert stored_indices(db) == list(range(40))


def test_a_trace_that_names_a_stored_index_is_still_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first, second = Collector(db), Collector(db)
    try:
        assert first.post(trace(1), "application/json") == (200, b"{}")  # numbered 0
        status, body = second.post(trace(2, **{"agentgauge.trial": 0}), "application/json")
        assert status == 200
        rejected = json.loads(body)["partialSuccess"]
        assert rejected["rejectedSpans"] == "1"
        assert "trial 0 of task 't' (variant 'base') is already stored" in rejected["errorMessage"]
        assert first.stop()[0] == 0 and second.stop()[0] == 0
    finally:
        first.kill()
        second.kill()
    assert stored_indices(db) == [0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_two_receivers_started_together_on_a_new_run_both_write_into_it(tmp_path: Path) -> None:
    """Both looked for run 'live', found none, and both created it: the second was
    refused (\"run 'live' already exists\") although two sessions may share a run. The
    store's write lock is held while they start, so that both have looked (and
    listen) before either can create the run."""
    db = tmp_path / "s.db"
    Store(db).close()
    lock = sqlite3.connect(db, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    ports = [free_port(), free_port()]
    receivers = [Collector(db, port=port, wait=False) for port in ports]
    try:
        deadline = time.monotonic() + 60
        while not all(accepts(port) for port in ports):
            assert time.monotonic() < deadline, "the receivers did not listen"
            assert all(r.proc.poll() is None for r in receivers)
            time.sleep(0.05)
        lock.execute("ROLLBACK")  # both have looked for the run: now both write it
        lock.close()
        for n, receiver in enumerate(receivers, start=1):
            receiver.listening()
            assert receiver.post(trace(n), "application/json") == (200, b"{}")
        for receiver in receivers:
            code, out, err = receiver.stop()
            assert code == 0 and err == "", err
            assert "stored 1 trial" in out
    finally:
        for receiver in receivers:
            receiver.kill()
    assert stored_indices(db) == [0, 1]
    with Store(db, readonly=True) as store:
        assert [run.run_id for run in store.list_runs()] == ["live"]
