"""Held-out tasks run only when asked, and every such use is logged (SPEC 5.10)."""

from __future__ import annotations

from pathlib import Path

import agentgauge
from agentgauge.metrics.validity import HELDOUT_ACTION, heldout_usage
from agentgauge.store import Store
from agentgauge.suite import load_suite


def test_heldout_runs_are_audited(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    dev = load_suite("builtin:retail")
    full = load_suite("builtin:retail", include_heldout=True)
    assert dev.heldout_excluded and not any(t.split == "heldout" for t in dev.tasks)
    agentgauge.run(dev, "builtin:null", store=db, run_id="dev", progress=False)
    with Store(db) as store:
        assert store.audit_log(HELDOUT_ACTION) == []
    agentgauge.run(full, "builtin:null", store=db, run_id="all", progress=False)
    with Store(db) as store:
        log = store.audit_log(HELDOUT_ACTION)
        assert len(log) == 1 and log[0]["run_id"] == "all"
        assert sorted(log[0]["detail"]["tasks"]) == sorted(dev.heldout_excluded)
        assert heldout_usage(log).uses == 1
