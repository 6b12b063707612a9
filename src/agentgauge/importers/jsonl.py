"""The native interchange format: one trial record (`agentgauge.Trial`) per line."""

from __future__ import annotations

from pathlib import Path

from agentgauge.importers import ImportedRun, register
from agentgauge.sources import read_trials_jsonl


@register("jsonl")
def read(path: Path) -> ImportedRun:
    return ImportedRun(trials=read_trials_jsonl(path))
