"""`agentgauge collect` keeps writing after one trace's trial could not be: each trace
is its own client's, and a bad one must not cost the others theirs (the store's writer
writes nothing more once it failed, so the receiver answered 500 to every later request
and lost the open traces at shutdown)."""

from __future__ import annotations

import gzip
import json
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

from agentgauge.schema import Run
from agentgauge.store import Store, utc_now


def _root(trace: str, task: str, **attrs: Any) -> dict[str, Any]:
    return span(
        "00000000000000a1",
        "invoke_agent bot",
        {
            "gen_ai.operation.name": "invoke_agent",
            "agentgauge.task.id": task,
            "agentgauge.outcome.success": True,
            **attrs,
        },
        trace=trace,
    )


def _open_child(trace: str, task: str) -> dict[str, Any]:
    """A span of a trace whose root never comes: stored as incomplete at shutdown."""
    return span(
        "00000000000000b1",
        "chat m",
        {"gen_ai.operation.name": "chat", "agentgauge.task.id": task},
        parent="00000000000000a1",
        trace=trace,
    )


def _post(collector: Collector, *spans: dict[str, Any]) -> dict[str, Any]:
    status, body = collector.post(json.dumps(request(*spans)).encode(), "application/json")
    assert status == 200, body
    answer: dict[str, Any] = json.loads(body).get("partialSuccess", {})
    return answer


def _stored(db: Path) -> list[tuple[str, int]]:
    with Store(db, readonly=True) as store:
        return sorted((t.task_id, t.trial or 0) for t in store.trials("live"))


def test_a_trial_index_past_the_largest_is_refused_and_later_traces_are_stored(
    collector: Collector,
) -> None:
    # The index after 2^63 - 1, which the next trace of the task took, overflowed SQLite.
    huge = _post(collector, _root("8" * 32, "t1", **{"agentgauge.trial": 2**63 - 1}))
    assert huge["rejectedSpans"] == "1"
    assert huge["errorMessage"].startswith(f"trace {'8' * 32}: request: ")
    assert "'agentgauge.trial': 9223372036854775807 is past the largest" in huge["errorMessage"]
    assert _post(collector, _root("9" * 32, "t1")) == {}
    assert _post(collector, _root("a" * 32, "other")) == {}
    assert _post(collector, _open_child("b" * 32, "t3")) == {}
    code, out, err = collector.stop()
    assert code == 0, err
    assert "Traceback" not in err
    assert "stored 3 trials" in out
    assert _stored(collector.db) == [("other", 0), ("t1", 0), ("t3", 0)]


def test_a_trial_the_store_refuses_costs_no_other_trace_its_trial(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    with Store(db) as made:  # the run, as a collect that stored a trial leaves it
        made.create_run(Run(run_id="live", created_at=utc_now(), source="collect:otlp-http"))
    # A store that refuses one trial (as a full disk or a damaged page would).
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER doomed BEFORE INSERT ON trials WHEN NEW.task_id = 'doomed' "
            "BEGIN SELECT RAISE(ABORT, 'the store refuses it'); END"
        )
    collector = Collector(db)
    try:
        refused = _post(collector, _root("1" * 32, "doomed"))
        assert refused["rejectedSpans"] == "1"
        assert f"trace {'1' * 32}: not stored: " in refused["errorMessage"]
        assert "the store refuses it" in refused["errorMessage"]
        assert "writing stopped" not in refused["errorMessage"]  # it did not
        assert _post(collector, _root("2" * 32, "fine")) == {}
        assert _post(collector, _open_child("3" * 32, "open")) == {}
        # An open trace the store refuses at shutdown does not stop the others there.
        assert _post(collector, _open_child("4" * 32, "doomed")) == {}
        assert _post(collector, _open_child("5" * 32, "open too")) == {}
        code, out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0, err
    assert "Traceback" not in err
    assert f"not stored at shutdown: trace {'4' * 32}: not stored: " in err
    assert "stored 3 trials" in out
    assert _stored(db) == [("fine", 0), ("open", 0), ("open too", 0)]


def _big_open_spans(trace: str, task: str, size: int) -> list[dict[str, Any]]:
    """Three spans of a trace whose root has not come, each with ``size`` bytes of text."""
    return [
        span(
            f"00000000000000b{i}",
            "chat m",
            {"gen_ai.operation.name": "chat", "agentgauge.task.id": task, "blob": "x" * size},
            parent="00000000000000a1",
            trace=trace,
        )
        for i in range(3)
    ]


def _send(collector: Collector, *spans: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """Status, body and Retry-After of a gzip JSON request, as an SDK exporter sends."""
    body = gzip.compress(json.dumps(request(*spans)).encode())
    req = urllib.request.Request(
        collector.url,
        data=body,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read()), resp.headers.get("Retry-After", "")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers.get("Retry-After", "")


def test_open_traces_are_held_within_a_byte_bound_past_which_requests_are_503(
    tmp_path: Path,
) -> None:
    # Memory was bounded by span counts only: spans of 8 MiB each of traces whose root
    # never comes grew the receiver by each request's size, compressed 100 times smaller.
    collector = Collector(tmp_path / "live.db", "--max-held-mib", "1")
    try:
        first = _big_open_spans("1" * 32, "a", 200_000)  # 600 KB held
        assert _send(collector, *first)[:2] == (200, {})
        second = _big_open_spans("2" * 32, "b", 200_000)  # 1.2 MB: over the bound
        status, answer, retry_after = _send(collector, *second)
        assert status == 503 and retry_after.isdigit()
        assert answer["code"] == 14  # UNAVAILABLE: the google.rpc code clients retry
        assert "3 spans of open traces not accepted now" in answer["message"]
        # A trace that ends frees what it held: the root comes, its trial is written.
        assert _send(collector, _root("1" * 32, "a"))[:2] == (200, {})
        # The exporter's retry, after the wait, is taken now.
        assert _send(collector, *second)[:2] == (200, {})
        # Log records of open traces count too.
        logs_url = collector.url.replace("/v1/traces", "/v1/logs")
        record = {
            "eventName": "gen_ai.client.inference.operation.details",
            "traceId": "3" * 32,
            "attributes": [{"key": "blob", "value": {"stringValue": "y" * 600_000}}],
        }
        logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
        req = urllib.request.Request(
            logs_url, data=json.dumps(logs).encode(), headers={"Content-Type": "application/json"}
        )
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("expected 503")
        except urllib.error.HTTPError as exc:
            assert exc.code == 503 and exc.headers.get("Retry-After")
        code, out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0, err
    assert err.count("refusing requests for now (503)") == 2  # once per spell
    assert "stored 2 trials" in out  # a, complete; b, open at shutdown: nothing lost
    assert _stored(tmp_path / "live.db") == [("a", 0), ("b", 0)]
