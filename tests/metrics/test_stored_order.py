"""The same trials stored in another order give the same ``metrics --json``, to the
last digit, from the store and from its Parquet export: a Ray run stores its trials
in the order they finish, so a local run and a Ray run of one suite, agent and seed
listed their groups in other orders and their latency means and tool-use rates
differed in the last digits. Groups come in label order (the base variant first),
flaky tasks by id, and every sum over trials is taken in one order."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Cli

import agentgauge
from agentgauge.schema import Trial
from agentgauge.store import Store

ORDERS: dict[str, Callable[[list[Trial]], list[Trial]]] = {
    "stored": list,
    # The perturbed variant's trials first, and each variant's backwards: the order of
    # first appearance is not the label order.
    "fault_first": lambda ts: sorted(reversed(ts), key=lambda t: t.variant == "base"),
    "shuffled": lambda ts: random.Random(7).sample(ts, len(ts)),
}


def test_the_same_trials_stored_in_any_order_give_the_same_metrics(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "s.db"
    variants = ["base", "fault:tool_error"]
    agentgauge.run("builtin:retail", "builtin:careful", trials=2, seed=11, store=db,
                   variants=variants, run_id="made", progress=False)  # fmt: skip
    with Store(db) as store:
        made = store.get_run("made")
        assert made is not None
        trials, tasks = store.trials("made"), store.get_tasks("made")
        # A second agent's trials, named so that label order and stored order differ.
        trials += [t.model_copy(update={"agent": "a-second"}) for t in trials[::3]]
        for name, order in ORDERS.items():
            store.create_run(made.model_copy(update={"run_id": name}))
            store.add_tasks(name, tasks)
            store.add_trials(name, order(trials))
    outputs = {}
    for name in ORDERS:
        code, out, err = cli("metrics", f"{db}:{name}", "--json")
        assert code == 0, err
        outputs[name] = out
        assert cli("export", f"{db}:{name}", "--parquet", str(tmp_path / name))[0] == 0
        code, out, err = cli("metrics", str(tmp_path / name), "--json")
        assert code == 0, err
        outputs[f"{name} (parquet)"] = out
    assert len(set(outputs.values())) == 1, [name for name in outputs]
    report = agentgauge.metrics(f"{db}:fault_first")
    assert [(g.labels["agent"], g.labels["variant"]) for g in report.groups] == [
        ("a-second", "base"),
        ("a-second", "fault:tool_error"),
        ("builtin:careful", "base"),
        ("builtin:careful", "fault:tool_error"),
    ]
    for group in report.groups:
        assert group.outcome.flaky_tasks == sorted(group.outcome.flaky_tasks)
