"""What a re-grade leaves alone reads, under the new version, as it read before: a
trial that ended in an error or a timeout is not graded (the run grades none, but on
the checkpoints of the turns it completed), and
a trial no named grader applies to keeps the outcome, grades and facts of the
version whose outcome it keeps. Real runs of the built-in retail suite, real SQLite
stores, the real CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentgauge.graders.regrade import regrade
from agentgauge.harness.runner import run
from agentgauge.store import Store

Cli = Callable[..., tuple[int, str, str]]  # the `cli` fixture (tests/conftest.py)


async def _cancels_then_fails_once(session: Any) -> None:
    """Acts, then raises on trial 0: an error after a change to the world."""
    await session.call_tool("find_customer_by_email", {"email": "ana.silva@example.com"})
    await session.call_tool(
        "cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"}
    )
    if session.trial == 0:
        raise RuntimeError("boom after cancel")
    session.answer("Order W1001 is cancelled.")
    session.record_cost(0.0)


def _metrics(cli: Cli, source: str, *args: str) -> dict[str, Any]:
    code, out, err = cli("metrics", source, "--json", *args)
    assert code == 0, err
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def test_regrading_with_the_run_s_graders_leaves_errored_trials_ungraded(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "e.db"
    run("builtin:retail", _cancels_then_fails_once, trials=2, store=db, run_id="e",
        progress=False)  # fmt: skip
    with Store(db, readonly=True) as store:
        trials = store.trials("e")
    unfinished = sum(t.status != "completed" for t in trials)
    assert 0 < unfinished < len(trials)

    code, out, err = cli("grade", f"{db}:e")
    assert code == 0, err
    # Before, the errored trials were graded too ("re-graded 118 trials"), which put
    # grades on them the run never gave and changed the metrics.
    assert f"re-graded {len(trials) - unfinished} trials" in out
    assert (
        f"left ungraded, as the run left them: {unfinished} trials that ended in an "
        "error or a timeout" in out
    )
    with Store(db, readonly=True) as store:
        keys = store.trial_keys("e")
        regraded = store.trials("e", grade_version=2)
        assert any(t.status != "completed" and t.turns is not None for t in trials)
        for pk, trial, again in zip(keys, trials, regraded, strict=True):
            if trial.status != "completed":
                # None but the checkpoints of the turns a multi-turn one completed, as
                # the run gave them.
                names = {"checkpoints"} if trial.turns is not None else set()
                assert store.grader_names(pk, version=2) == names, trial.task_id
                assert again.grades == trial.grades, trial.task_id
    # Unchanged graders: the same metrics as the run gave (safety counted 24 trials
    # under the run and 48 under the re-grade; turns lost its ungraded trials).
    assert _metrics(cli, f"{db}:e") == _metrics(cli, f"{db}:e", "--grade-version", "2")
    code, out, err = cli("grade", f"{db}:e", "--json")
    assert code == 0, err
    assert json.loads(out)["n_unfinished"] == unfinished


def test_a_trial_left_alone_reads_as_the_version_whose_outcome_it_keeps(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "r.db"
    run("builtin:retail", "builtin:hasty", trials=1, store=db, run_id="h", progress=False)
    regrade(db, "h", ["state", "answer"])  # version 2, never activated
    third = regrade(db, "h", ["minefields"])  # version 3: most trials left alone
    assert third.n_not_applicable > 0
    with Store(db, readonly=True) as store:
        keys = store.trial_keys("h")
        as_recorded = store.trials("h", grade_version=1)
        regraded = store.trials("h", grade_version=3)
        left = [
            i for i, pk in enumerate(keys) if "minefields" not in store.grader_names(pk, version=3)
        ]
        assert len(left) == third.n_not_applicable
        _, facts_1 = store.columns("h", grade_version=1)
        _, facts_3 = store.columns("h", grade_version=3)
    for i in left:
        before, after = as_recorded[i], regraded[i]
        # Its outcome is version 1's (the active one); so are its grades now (they were
        # version 2's, which the run never reported: a failed trial with one PASS grade).
        assert after.success == before.success, before.task_id
        assert [g.model_dump() for g in after.grades] == [g.model_dump() for g in before.grades]
    for name, column in facts_1.columns.items():
        # (compared as text: a fact nobody measured is NaN, which equals nothing)
        assert [repr(column[i]) for i in left] == [repr(facts_3[name][i]) for i in left], name

    trial = as_recorded[left[0]]
    code, out, err = cli("show", f"{db}:h", "--task", trial.task_id, "--trial",
                         str(trial.trial), "--grade-version", "3")  # fmt: skip
    assert code == 0, err
    code, recorded, err = cli("show", f"{db}:h", "--task", trial.task_id, "--trial",
                              str(trial.trial), "--grade-version", "1")  # fmt: skip
    assert code == 0, err
    assert out == recorded
