"""A run as the JSONL interchange format: one trial record (`agentgauge.Trial`) per line.

What ``agentgauge import jsonl`` reads, so a run exported and imported again
gives the same metrics. Fields at their defaults and unknown values (``None``)
are left out; every line is a complete record.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentgauge.schema import Trial

__all__ = ["trials_jsonl"]


def trials_jsonl(trials: Iterable[Trial]) -> str:
    """The trials as JSONL text, one record per line."""
    return "".join(t.model_dump_json(exclude_none=True) + "\n" for t in trials)
