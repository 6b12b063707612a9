"""A `collect` that stored no trial leaves no empty run behind, as a `run` that saved
none does; a run it resumed (`--run-id` of a run already there) is kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import AGENT_ROOT, request

from agentgauge.schema import Run
from agentgauge.store import Store, utc_now


def test_a_collect_that_received_nothing_leaves_no_run_and_no_store(tmp_path: Path) -> None:
    # It left run 'live' in a store of its own making, holding nothing.
    c = Collector(tmp_path / "new.db")
    try:
        code, out, err = c.stop()
    finally:
        c.kill()
    assert code == 0, err
    assert "stored 0 trials from 0 spans in run live\n" in out
    assert "run live holds no trial: not kept" in out
    assert not (tmp_path / "new.db").exists()


def test_an_empty_collect_run_goes_and_the_stores_other_runs_stay(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="other", created_at=utc_now(), source="collect:otlp-http"))
    c = Collector(db)
    try:
        # A request that stores nothing (no spans) is not a trial either.
        status, _ = c.post(json.dumps({"resourceSpans": []}).encode(), "application/json")
        assert status == 200
        code, out, err = c.stop()
    finally:
        c.kill()
    assert code == 0 and "run live holds no trial: not kept" in out, err
    with Store(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["other"]


def test_a_run_that_stored_a_trial_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    c = Collector(db)
    try:
        doc = request(AGENT_ROOT)
        assert c.post(json.dumps(doc).encode(), "application/json")[0] == 200
        code, out, err = c.stop()
    finally:
        c.kill()
    assert code == 0 and "stored 1 trial" in out and "not kept" not in out, out + err
    with Store(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["live"]


def test_an_empty_run_collect_resumed_into_is_kept(tmp_path: Path) -> None:
    # `collect --run-id live` into a run already there (made empty by a collect that is
    # still running, or kept for a later session): not this session's to remove.
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="live", created_at=utc_now(), source="collect:otlp-http"))
    c = Collector(db)
    try:
        code, out, err = c.stop()
    finally:
        c.kill()
    assert code == 0 and "not kept" not in out, out + err
    with Store(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["live"]
