"""METR runs: one JSON object per line, as in METR/eval-analysis-public's
``data/external/all_runs.jsonl`` (Kwa et al. 2025).

Field mapping (documented in docs/horizon.md):

============================  ===============================================
METR field                    agentgauge trial
============================  ===============================================
``task_id`` (required)        ``task_id``
``task_family`` (required)    ``family``
``alias`` (required)          ``agent`` (METR fits one horizon per alias)
``model``                     ``model``
``human_minutes`` (required)  ``human_minutes`` (must be > 0)
``score_binarized`` (req.)    ``success`` (0/1 or a boolean)
``score``                     ``score``, clipped to [0, 1]; the raw value is
                              kept as ``metadata.score_raw`` when it differs
everything else               ``metadata`` (``run_id``, ``human_source``,
                              ``fatal_error_from``, METR's own weights, ...)
============================  ===============================================

``score`` and ``score_binarized`` need not agree: METR binarises some tasks'
continuous scores at a task-specific threshold, so a run can succeed with a
score below 1. The horizon therefore fits such data on the binary outcome
(``outcome="auto"`` in `agentgauge.horizon`).

Human baseline runs (``alias == "human"``) are imported like any agent, under
agent and model ``human``, and marked ``metadata.human_baseline = true``: they
are the data, and an honest import drops nothing. Their "horizon" is not an
agent's: most ``human_minutes`` were measured from these same baselines, so
report them apart (docs/horizon.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError
from agentgauge.importers import ImportedRun, register
from agentgauge.schema import Trial
from agentgauge.sources import assign_trial_indices, parse_trial, read_jsonl

__all__ = ["HUMAN_ALIAS", "read"]

#: The alias METR gives to human baseline runs.
HUMAN_ALIAS = "human"

_MAPPED = ("task_id", "task_family", "alias", "model", "human_minutes", "score_binarized", "score")


def _number(value: Any) -> float | None:
    """A JSON number as a float (an int past a float's range is infinite), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # 10**400 parses as an int, and no float holds it
        return math.inf


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else "a huge integer"
    return text if len(text) <= 60 else text[:57] + "..."


def _text(rec: dict[str, Any], key: str, path: Path, line: int, *, required: bool) -> str | None:
    value = rec.get(key)
    if value is None:
        if required:
            raise InputError("required field is missing", file=path, line=line, field=key)
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(
            f"expected a string, got {type(value).__name__}", file=path, line=line, field=key
        )
    text = str(value)
    if required and not text:
        raise InputError("must not be empty", file=path, line=line, field=key)
    return text


def _record(rec: dict[str, Any], path: Path, line: int) -> Trial:
    task_id = _text(rec, "task_id", path, line, required=True)
    family = _text(rec, "task_family", path, line, required=True)
    agent = _text(rec, "alias", path, line, required=True)
    model = _text(rec, "model", path, line, required=False)

    if "human_minutes" not in rec or rec["human_minutes"] is None:
        raise InputError("required field is missing", file=path, line=line, field="human_minutes")
    minutes = _number(rec["human_minutes"])
    if minutes is None or not math.isfinite(minutes) or minutes <= 0:
        raise InputError(
            f"must be a positive number of minutes, got {_shown(rec['human_minutes'])}",
            file=path,
            line=line,
            field="human_minutes",
        )

    if "score_binarized" not in rec or rec["score_binarized"] is None:
        raise InputError("required field is missing", file=path, line=line, field="score_binarized")
    raw_success = rec["score_binarized"]
    if raw_success not in (0, 1):  # True/False compare equal to 1/0
        raise InputError(
            f"must be 0, 1, true or false, got {_shown(raw_success)}",
            file=path,
            line=line,
            field="score_binarized",
        )
    success = bool(raw_success)

    metadata: dict[str, Any] = {k: v for k, v in rec.items() if k not in _MAPPED}
    score: float | None = None
    if "score" in rec and rec["score"] is not None:
        raw = _number(rec["score"])
        if raw is None:
            raise InputError(
                f"expected a number, got {_shown(rec['score'])}",
                file=path,
                line=line,
                field="score",
            )
        if not math.isfinite(raw):
            raise InputError(
                f"must be a finite number, got {_shown(rec['score'])}",
                file=path,
                line=line,
                field="score",
            )
        score = min(max(raw, 0.0), 1.0)
        if score != raw:
            metadata["score_raw"] = raw
    if agent == HUMAN_ALIAS:
        metadata["human_baseline"] = True

    obj: dict[str, Any] = {
        "task_id": task_id,
        "family": family,
        "agent": agent,
        "model": model,
        "human_minutes": minutes,
        "success": success,
        "metadata": metadata,
    }
    if score is not None:
        obj["score"] = score
    return parse_trial(obj, file=path, line=line)


@register("metr")
def read(path: Path) -> ImportedRun:
    """Read a METR runs JSONL file; the first bad line fails with FILE:LINE: field: reason."""
    parsed = ((line, _record(rec, path, line)) for line, rec in read_jsonl(path))
    trials = assign_trial_indices(parsed, file=path)
    return ImportedRun(trials=trials, suite=f"metr:{path.stem}")
