"""The run page's outcome table takes each system's base variant, as the report does:
a run holding one system with base trials and one run on paraphrases only once left
the second out of the table (the page pooled the run's trials before choosing)."""

from __future__ import annotations

from agentgauge.report.scope import BASE_VARIANT, SOME_BASE
from agentgauge.schema import Trial
from agentgauge.table import TrialTable
from agentgauge.viewer.summary import summarise


def _trials(spec: dict[str, tuple[str, ...]]) -> list[Trial]:
    return [
        Trial(task_id=f"t{i}", agent=agent, variant=variant, success=i % 2 == 0)
        for agent, variants in spec.items()
        for variant in variants
        for i in range(4)
    ]


def test_a_system_without_base_trials_keeps_its_row() -> None:
    table = TrialTable.from_trials(_trials({"a": ("base", "paraphrase:1"), "b": ("paraphrase:1",)}))
    summary = summarise(table)
    assert summary["scope"] == SOME_BASE
    rows = {g["agent"]: (g["n_trials"], g["variant"]) for g in summary["base"]["groups"]}
    assert rows == {"a": (4, "base"), "b": (4, "paraphrase:1")}


def test_every_system_with_base_trials_is_read_on_them() -> None:
    table = TrialTable.from_trials(_trials({"a": ("base", "paraphrase:1"), "b": ("base",)}))
    summary = summarise(table)
    assert summary["scope"] == BASE_VARIANT
    assert [g["n_trials"] for g in summary["base"]["groups"]] == [4, 4]
