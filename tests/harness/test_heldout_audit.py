"""Held-out tasks run only when asked, and every such use is logged (SPEC 5.10)."""

from __future__ import annotations

from pathlib import Path

import agentgauge
from agentgauge.api import compare_sources
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


def test_compare_logs_a_use_only_when_heldout_trials_are_read(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    dev = load_suite("builtin:retail")
    full = load_suite("builtin:retail", include_heldout=True)
    for run_id, suite, agent in (
        ("dev-a", dev, "builtin:hasty"),
        ("dev-b", dev, "builtin:careful"),
    ):
        agentgauge.run(suite, agent, store=db, run_id=run_id, progress=False)
    # `--include-heldout` over runs with no held-out trial reads none: nothing to log.
    compare_sources(f"{db}:dev-a", f"{db}:dev-b", include_heldout=True)
    with Store(db) as store:
        assert store.audit_log(HELDOUT_ACTION) == []
    agentgauge.run(full, "builtin:hasty", store=db, run_id="all-a", progress=False)
    agentgauge.run(full, "builtin:careful", store=db, run_id="all-b", progress=False)
    with Store(db) as store:
        before = len(store.audit_log(HELDOUT_ACTION))  # the two runs' own uses
    compare_sources(f"{db}:all-a", f"{db}:all-b", include_heldout=True)
    with Store(db) as store:
        log = store.audit_log(HELDOUT_ACTION)
        assert len(log) == before + 1 and log[-1]["detail"]["command"] == "compare"


def test_the_compare_twin_logs_a_use_of_heldout_tasks_as_the_command_does(
    tmp_path: Path,
) -> None:
    """``agentgauge.compare(a, b, include_heldout=True)`` read the held-out tasks of two
    stored runs and logged nothing, where ``agentgauge compare --include-heldout`` (and
    ``compare_sources``) log the use; the held-out set's count of uses missed it."""
    db = tmp_path / "s.db"
    full = load_suite("builtin:retail", include_heldout=True)
    for run_id, agent in (("all-a", "builtin:hasty"), ("all-b", "builtin:careful")):
        agentgauge.run(full, agent, store=db, run_id=run_id, progress=False)
    with Store(db) as store:
        before = len(store.audit_log(HELDOUT_ACTION))  # the two runs' own uses
    a, b = f"{db}:all-a", f"{db}:all-b"
    agentgauge.compare(a, b)  # held-out tasks left out: nothing used
    with Store(db) as store:
        assert len(store.audit_log(HELDOUT_ACTION)) == before
    twin = agentgauge.compare(Path(a), b, include_heldout=True)
    with Store(db) as store:
        log = store.audit_log(HELDOUT_ACTION)
    assert len(log) == before + 1 and log[-1]["detail"] == {
        "command": "compare",
        "runs": ["all-a", "all-b"],
    }
    assert twin.verdict == compare_sources(a, b, include_heldout=True).comparison.verdict
    # Trials given as a list have no store to log in.
    trials = agentgauge.load_trials(a)
    agentgauge.compare(trials, agentgauge.load_trials(b), include_heldout=True)
    with Store(db) as store:
        assert len(store.audit_log(HELDOUT_ACTION)) == before + 2  # compare_sources's
