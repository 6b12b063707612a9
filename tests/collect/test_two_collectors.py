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
    assert "stored 1 trials" in out_1 and "stored 2 trials" in out_2
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
