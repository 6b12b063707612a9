"""The native interchange format: one trial record (`agentgauge.Trial`) per line."""

from __future__ import annotations

from pathlib import Path

from agentgauge.importers import ImportedRun, register
from agentgauge.sources import load_trials


@register("jsonl")
def read(path: Path) -> ImportedRun:
    return ImportedRun(trials=load_trials(path))
