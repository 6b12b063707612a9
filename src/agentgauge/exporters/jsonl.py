"""A run as the JSONL interchange format: one trial record (`agentgauge.Trial`) per line.

What ``agentgauge import jsonl`` reads, so a run exported and imported again
gives the same metrics. Fields at their defaults and unknown values (``None``)
are left out; every line is a complete record.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentgauge.errors import InputError
from agentgauge.schema import Trial
from agentgauge.textio import MAX_DEPTH, nests_deeper

__all__ = ["trials_jsonl"]


def trials_jsonl(trials: Iterable[Trial]) -> str:
    """The trials as JSONL text, one record per line. A record nested deeper than
    ``import jsonl`` reads (`agentgauge.textio.MAX_DEPTH` levels: the store keeps
    deeper values an agent returned) is `InputError`: written, it would be refused by
    every reader of the file."""
    lines = []
    for t in trials:
        line = t.model_dump_json(exclude_none=True)
        if line.count("[") + line.count("{") > MAX_DEPTH and nests_deeper(line, MAX_DEPTH):
            where = f"trial {t.trial} of task {t.task_id!r}" + (
                f" (variant {t.variant})" if t.variant != "base" else ""
            )
            raise InputError(
                f"{where} is nested too deeply to export: more than {MAX_DEPTH} levels of "
                "arrays and objects in its record, which `agentgauge import jsonl` does not "
                "take back",
                field="--jsonl",
            )
        lines.append(line + "\n")
    return "".join(lines)
