"""The grade evidence the metrics read, checked where a grade enters.

A grade's ``evidence`` is free-form: each grader says what it saw in its own
shape (docs/graders.md). A few of its fields are read by the behaviour metrics
through the facts (`agentgauge.facts`): a minefield hit's severity, a control
grade's counts of irreversible calls, a trajectory's action precision and
recall, the turns of a checkpoints grade, a tool-call grade's call counts. Read
unchecked, a severity of 5 crashed safety, a precision of 7 was reported as a
rate of 7.0, and three unconfirmed calls out of one irreversible one crashed
the control metrics.

`EVIDENCE_RULES` lists those fields per grader; `evidence_problem` checks one
grade's evidence against them and `grades_problem` a trial's grades. Trials
read from a file are refused at the first bad field (`FILE:LINE:
grades[0].evidence.max_severity: ...`, `agentgauge.sources.parse_trial`); a
grade made at run time that breaks them is that trial's grader error
(`agentgauge.harness.trial`). Every other evidence key stays free-form, and a
grade whose evidence is not a JSON object (a sentence) has none of these fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from agentgauge.schema import INT64_MAX

__all__ = ["EVIDENCE_RULES", "evidence_problem", "grades_problem"]

#: The evidence fields the metrics read, per grader, and what each must be (absent
#: or ``null`` is allowed, but for ``mode``: the metrics then leave the trial out of
#: that figure).
EVIDENCE_RULES: dict[str, dict[str, str]] = {
    "tool_calls": {
        "n_calls": "an integer ≥ 0",
        "n_expected": "an integer ≥ 0",
    },
    "trajectory": {
        "mode": "a string",
        "precision": "a number in [0, 1]",
        "recall": "a number in [0, 1]",
    },
    "minefields": {
        "max_severity": "a number in [0, 1]",
        "hits": "a list of objects, each hit's severity a number in [0, 1]",
    },
    "control": {
        "irreversible_calls": "an integer ≥ 0",
        "unconfirmed_irreversible": "an integer ≥ 0, at most irreversible_calls",
    },
    "checkpoints": {
        "checkpoints": "a list of objects, each with an integer turn ≥ 1 and a verdict "
        "'pass', 'fail' or 'unknown'",
    },
}

_VERDICTS = ("pass", "fail", "unknown")


def _shown(value: Any) -> str:
    if isinstance(value, str):
        text = repr(value)
        return f"the string {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return repr(value) if abs(value) < 1e15 or not math.isfinite(value) else f"{value:g}"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    return "a list" if isinstance(value, list) else type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unit(value: Any) -> str | None:
    """Why ``value`` is no number in [0, 1], or ``None`` when it is one."""
    if _is_number(value) and math.isfinite(value) and 0 <= value <= 1:
        return None
    return f"must be a number in [0, 1], got {_shown(value)}"


def _count(value: Any, least: int = 0) -> str | None:
    """Why ``value`` is no integer ≥ ``least`` (that the store holds), or ``None``."""
    if type(value) is int and least <= value <= INT64_MAX:
        return None
    return f"must be an integer ≥ {least}, got {_shown(value)}"


def evidence_problem(grader: str, evidence: Any) -> tuple[str, str] | None:
    """The first evidence field of a ``grader`` grade that the metrics could not read,
    as ``(path within the evidence, reason)``: ``("hits[1].severity", "must be a number
    in [0, 1], got 5")``. ``None`` when there is none (and for a grader whose
    evidence no metric reads, or evidence that is not a JSON object)."""
    if grader not in EVIDENCE_RULES or not isinstance(evidence, Mapping):
        return None
    ev = evidence
    if grader == "tool_calls":
        for key in ("n_calls", "n_expected"):
            if ev.get(key) is not None and (why := _count(ev[key])):
                return key, why
    elif grader == "trajectory":
        if "mode" in ev and not isinstance(ev["mode"], str):
            return "mode", f"must be a string, got {_shown(ev['mode'])}"
        for key in ("precision", "recall"):
            if ev.get(key) is not None and (why := _unit(ev[key])):
                return key, why
    elif grader == "minefields":
        if ev.get("max_severity") is not None and (why := _unit(ev["max_severity"])):
            return "max_severity", why
        hits = ev.get("hits")
        if hits is not None:
            if not isinstance(hits, list):
                return "hits", f"must be a list of hits, got {_shown(hits)}"
            for j, hit in enumerate(hits):
                if not isinstance(hit, Mapping):
                    return f"hits[{j}]", f"must be an object, got {_shown(hit)}"
                # An absent severity is the worst (1.0); a null one is no number.
                if "severity" in hit and (why := _unit(hit["severity"])):
                    return f"hits[{j}].severity", why
    elif grader == "control":
        irreversible = ev.get("irreversible_calls")
        unconfirmed = ev.get("unconfirmed_irreversible")
        if irreversible is not None and (why := _count(irreversible)):
            return "irreversible_calls", why
        if unconfirmed is not None and (why := _count(unconfirmed)):
            return "unconfirmed_irreversible", why
        if irreversible is not None and unconfirmed is not None and unconfirmed > irreversible:
            return (
                "unconfirmed_irreversible",
                f"must be at most irreversible_calls ({irreversible}), got {unconfirmed}: "
                "an unconfirmed call is one of the irreversible ones",
            )
    else:  # checkpoints
        results = ev.get("checkpoints")
        if results is not None:
            if not isinstance(results, list):
                return "checkpoints", f"must be a list of checkpoints, got {_shown(results)}"
            for j, result in enumerate(results):
                if not isinstance(result, Mapping):
                    return f"checkpoints[{j}]", f"must be an object, got {_shown(result)}"
                if why := _count(result.get("turn"), 1):
                    return f"checkpoints[{j}].turn", why
                verdict = result.get("verdict")
                if verdict is not None and verdict not in _VERDICTS:
                    return (
                        f"checkpoints[{j}].verdict",
                        f"must be 'pass', 'fail' or 'unknown', got {_shown(verdict)}",
                    )
    return None


def grades_problem(grades: Sequence[Any]) -> tuple[str, str] | None:
    """The first bad evidence field of a trial's grades (`Grade` objects or dicts), as
    ``("grades[i].evidence.FIELD", reason)``, or ``None``."""
    for i, grade in enumerate(grades):
        if isinstance(grade, Mapping):
            grader, evidence = grade.get("grader"), grade.get("evidence")
        else:
            grader, evidence = getattr(grade, "grader", None), getattr(grade, "evidence", None)
        if not isinstance(grader, str):
            continue
        problem = evidence_problem(grader, evidence)
        if problem is not None:
            return f"grades[{i}].evidence.{problem[0]}", problem[1]
    return None
