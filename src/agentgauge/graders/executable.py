"""The executable grader: run the agent's calls and compare their results
(BFCL's executable categories, Patil et al.; docs/graders.md, "`executable`").

A task declares ``expectations.executable``: the callables that implement its
functions (``name: package.module:function``) and/or the environment tools
whose recorded results count, the expected result of each call, and how to
compare: ``exact``, ``structural`` or ``numeric`` within a relative tolerance
(BFCL's real-time check accepts 20%). Callables run in a worker process with a
deadline (`agentgauge.graders.exec_runner`); parallel calls are matched to the
expected results as a set, by maximum bipartite matching.

Statuses: ``passed``; ``exec:wrong_func_name`` (a call to a function with no
callable), ``exec:wrong_count``, ``exec:raised``, ``exec:timeout``,
``exec:crashed``, ``exec:unserialisable``, ``exec:output_too_large``,
``exec:no_result`` (an environment tool's call with no recorded result),
``exec:mismatch``; ``unknown:callable not found`` when the suite names a
callable that cannot be imported (the suite's defect, not the agent's).
"""

from __future__ import annotations

from typing import Any

from agentgauge.graders.ast import max_bipartite_matching
from agentgauge.graders.base import fail, pass_, register, unknown
from agentgauge.graders.exec_runner import ExecOutcome, run_callable
from agentgauge.schema import (
    ExecutableSpec,
    Grade,
    Task,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)

__all__ = ["ExecutableGrader", "result_difference"]

#: Characters of a result or argument kept in a grade's evidence.
_SHOWN = 300
#: Levels of nesting compared; deeper is a difference (a hostile result must not recurse
#: the grading into a RecursionError).
_MAX_DEPTH = 100

_STATUS = {
    "raised": "exec:raised",
    "timeout": "exec:timeout",
    "crashed": "exec:crashed",
    "unserialisable": "exec:unserialisable",
    "too_large": "exec:output_too_large",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def result_difference(
    result: Any,
    expected: Any,
    match: str = "structural",
    tolerance: float = 0.2,
    path: str = "$",
    depth: int = 0,
) -> str | None:
    """The first difference between a result and the expected one, or ``None``.

    ``exact``: the same JSON value with the same types (``1`` is not ``1.0``,
    ``true`` is not ``1``). ``structural``: numbers compare by value. ``numeric``:
    every number within ``tolerance`` of the expected, relatively:
    ``|result - expected| <= tolerance * |expected|`` (BFCL's real-time check,
    written for either sign). Mappings compare key by key, lists item by item in
    order (a tuple arrives as a list). Never raises: a value nested deeper than
    `_MAX_DEPTH` is a difference, not a `RecursionError`.
    """
    if depth > _MAX_DEPTH:
        return f"{path}: nested deeper than {_MAX_DEPTH} levels"
    if _is_number(expected) and _is_number(result):
        if match == "exact" and type(result) is not type(expected):
            return (
                f"{path}: expected {type(expected).__name__} {_show(expected)}, got {_show(result)}"
            )
        if match == "numeric":
            return _numeric_difference(result, expected, tolerance, path)
        if result == expected:
            return None
        return f"{path}: expected {_show(expected)}, got {_show(result)}"
    if isinstance(expected, dict) and isinstance(result, dict):
        missing = sorted(set(expected) - set(result), key=str)
        extra = sorted(set(result) - set(expected), key=str)
        if missing or extra:
            return f"{path}: keys differ (missing {missing[:5]}, unexpected {extra[:5]})"
        for key in sorted(expected, key=str):
            found = result_difference(
                result[key], expected[key], match, tolerance, f"{path}.{key}", depth + 1
            )
            if found is not None:
                return found
        return None
    if isinstance(expected, list | tuple) and isinstance(result, list | tuple):
        if len(expected) != len(result):
            return f"{path}: expected {len(expected)} items, got {len(result)}"
        for i, (r, e) in enumerate(zip(result, expected, strict=True)):
            found = result_difference(r, e, match, tolerance, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
        return None
    if type(result) is type(expected) and result == expected:
        return None
    return f"{path}: expected {_show(expected)}, got {_show(result)}"


def _numeric_difference(result: float, expected: float, tolerance: float, path: str) -> str | None:
    try:
        if abs(result - expected) <= tolerance * abs(expected):
            return None
        off = f" ({_off(abs(result - expected) / abs(expected))} off)" if expected else ""
    except OverflowError:  # integers beyond float range: only equality can be judged
        if result == expected:
            return None
        off = ""
    # The tolerance as the task wrote it: ".0%" showed 0.004 as "within 0%".
    within = f"{tolerance * 100:g}%"
    return f"{path}: expected {_show(expected)} within {within}, got {_show(result)}{off}"


def _off(fraction: float) -> str:
    """A relative difference as a percentage, one decimal, and never 0.0% when it is
    not 0 (two significant digits then: 0.04%)."""
    text = f"{fraction:.1%}"
    return f"{fraction * 100:.2g}%" if fraction and text == "0.0%" else text


def _show(value: Any) -> str:
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deep; an int too long to print
        return f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= _SHOWN else text[:_SHOWN] + f"... ({len(text)} characters)"


def _recorded_result(trial: Trial, index: int, call: ToolCallEvent) -> ToolResultEvent | None:
    """The result the environment recorded for the call at ``trial.events[index]``:
    the one with its ``call_id``, or, in a transcript without call ids, the first
    result after it."""
    later = trial.events[index + 1 :]
    results = [e for e in later if isinstance(e, ToolResultEvent)]
    if call.call_id is not None and any(r.call_id is not None for r in results):
        return next((r for r in results if r.call_id == call.call_id), None)
    return results[0] if results else None


def _run(spec: ExecutableSpec, trial: Trial, index: int, call: ToolCallEvent) -> ExecOutcome:
    ref = spec.functions.get(call.name)
    if ref is not None:
        return run_callable(ref, call.arguments, spec.timeout_s)
    recorded = _recorded_result(trial, index, call)
    if recorded is None:
        return ExecOutcome("unresolvable", error="no recorded result")
    if recorded.is_error:
        return ExecOutcome("raised", error=f"the tool reported an error: {_show(recorded.content)}")
    return ExecOutcome("returned", result=recorded.content)


@register("executable")
class ExecutableGrader:
    """The agent's calls, run, return the expected results (BFCL's executable categories)."""

    name = "executable"
    kind = "code"

    def enabled(self, task: Task) -> bool:
        return task.expectations.executable is not None

    def grade(self, task: Task, trial: Trial) -> Grade:
        spec = task.expectations.executable
        if spec is None:
            return pass_(self.name, evidence="no executable checks declared")
        checked = set(spec.functions) | set(spec.tools)
        calls = [
            (i, e)
            for i, e in enumerate(trial.events)
            if isinstance(e, ToolCallEvent) and (spec.functions or e.name in checked)
        ]
        names = [c.name for _, c in calls]
        wrong = [n for n in names if n not in checked]
        if wrong:
            known = sorted(checked)
            return fail(self.name, "exec:wrong_func_name", {"called": wrong[:10], "known": known})
        if len(calls) != len(spec.expected):
            names = names[:20]  # an agent that made 10,000 calls does not fill the store
            evidence = {"expected_calls": len(spec.expected), "calls": len(calls), "names": names}
            return fail(self.name, "exec:wrong_count", evidence)
        if not calls:
            return pass_(self.name, evidence="no call expected and none made")
        records: list[dict[str, Any]] = []
        results: list[Any] = []
        for i, call in calls:
            outcome = _run(spec, trial, i, call)
            record: dict[str, Any] = {"name": call.name, "arguments": _show(call.arguments)}
            if outcome.outcome == "unresolvable":
                if call.name in spec.functions:
                    why = f"callable not found: {spec.functions[call.name]} ({outcome.error})"
                    return unknown(self.name, "callable not found", why)
                record["error"] = f"{call.name} has no recorded result"
                return fail(self.name, "exec:no_result", {"calls": [*records, record]})
            if outcome.outcome != "returned":
                record["error"] = outcome.error
                return fail(self.name, _STATUS[outcome.outcome], {"calls": [*records, record]})
            record["result"] = _show(outcome.result)
            records.append(record)
            results.append(outcome.result)
        return self._match(spec, results, records)

    def _match(
        self, spec: ExecutableSpec, results: list[Any], records: list[dict[str, Any]]
    ) -> Grade:
        # Parallel calls may come in any order: each expected result pairs with a
        # distinct call's result (a maximum matching, as the AST grader pairs calls).
        ok = [
            [result_difference(r, e, spec.match, spec.tolerance) is None for r in results]
            for e in spec.expected
        ]
        pairing = max_bipartite_matching(ok)
        unmatched = [i for i, j in enumerate(pairing) if j < 0]
        if not unmatched:
            return pass_(self.name, evidence={"match": spec.match, "calls": records})
        taken = set(pairing)
        free = [j for j in range(len(results)) if j not in taken]
        differences = []
        for n, i in enumerate(unmatched):
            j = free[n] if n < len(free) else 0
            found = result_difference(results[j], spec.expected[i], spec.match, spec.tolerance)
            differences.append(found if len(results) == 1 else f"call {j}: {found}")
        evidence = {"match": spec.match, "calls": records, "differences": differences}
        return fail(self.name, "exec:mismatch", evidence)
