"""The state grader: the final environment state against the expected one (docs/graders.md).

Whole-state comparison hashes canonical JSON (sorted keys, no whitespace,
UTF-8), as tau2-bench compares database hashes, so two states are equal
exactly when their canonical texts are. On a mismatch the evidence names what
differs: the top-level tables (keys) that differ and, inside them, up to
`MAX_DIFFS` dotted paths with the expected and actual values.

Alternatively a task lists ``state_assertions`` on dotted paths
(``orders.W100.status``); list elements are addressed by index
(``items.0.id``). Every assertion must hold. An assertion's ``equals`` compares as
JSON values, not texts: numbers by value (``3`` equals ``3.0``, which JSON does not
tell apart), booleans only with booleans (``true`` is not ``1``), text exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from agentgauge.canonical import canonical_json
from agentgauge.graders.base import fail, pass_, register, unknown
from agentgauge.schema import Grade, StateAssertion, Task, Trial
from agentgauge.textio import is_digits

__all__ = [
    "MAX_DIFFS",
    "StateGrader",
    "canonical_json",
    "diff_paths",
    "failed_assertions",
    "mismatch",
    "resolve_path",
    "same_value",
    "state_hash",
]

MAX_DIFFS = 20
_MISSING = object()


def state_hash(state: Any) -> str:
    """SHA-256 of the canonical JSON (tau2-bench compares DB hashes the same way)."""
    return hashlib.sha256(canonical_json(state).encode("utf-8")).hexdigest()


def diff_paths(expected: Any, actual: Any, prefix: str = "") -> list[str]:
    """Dotted paths where ``actual`` departs from ``expected``, depth first."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[str] = []
        for k in sorted(set(expected) | set(actual), key=str):
            path = f"{prefix}.{k}" if prefix else str(k)
            if k not in actual or k not in expected:
                out.append(path)
            else:
                out.extend(diff_paths(expected[k], actual[k], path))
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out.extend(diff_paths(e, a, f"{prefix}.{i}" if prefix else str(i)))
        return out
    return [] if canonical_json(expected) == canonical_json(actual) else [prefix or "<root>"]


def resolve_path(state: Any, path: str) -> Any:
    """The value at a dotted path, or a private sentinel when absent."""
    node = state
    for part in path.split(".") if path else []:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif (
            isinstance(node, list)
            and is_digits(part.lstrip("-"))
            and -len(node) <= int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _check(state: Any, assertion: StateAssertion) -> str | None:
    value = resolve_path(state, assertion.path)
    present = value is not _MISSING
    if assertion.exists is not None:
        if present != assertion.exists:
            return f"{assertion.path}: {'missing' if assertion.exists else 'present'}"
        if not present or "equals" not in assertion.model_fields_set:
            return None
    if not present:
        return f"{assertion.path}: missing"
    if not same_value(value, assertion.equals):
        return f"{assertion.path}: expected {assertion.equals!r}, got {value!r}"
    return None


def same_value(value: Any, expected: Any) -> bool:
    """Whether two JSON values are equal: numbers by value (``3`` and ``3.0``: a state
    written by SQLite or a world in Python may keep either, and YAML reads ``85`` as
    an integer), booleans only equal to booleans, lists item by item, mappings key by
    key, anything else by its canonical JSON text. Comparing the texts failed
    ``equals: 3.0`` on a counter of 3 ("expected 3.0, got 3")."""
    if isinstance(value, bool) or isinstance(expected, bool):
        return isinstance(value, bool) and isinstance(expected, bool) and value == expected
    if isinstance(value, int | float) and isinstance(expected, int | float):
        return value == expected or (value != value and expected != expected)  # NaN, NaN
    if isinstance(value, list) and isinstance(expected, list):
        return len(value) == len(expected) and all(
            same_value(v, e) for v, e in zip(value, expected, strict=True)
        )
    if isinstance(value, dict) and isinstance(expected, dict):
        # Keys as JSON writes them (YAML reads ``1:`` as an integer key, JSON has "1").
        have, want = _json_keys(value), _json_keys(expected)
        return have.keys() == want.keys() and all(same_value(have[k], want[k]) for k in have)
    return canonical_json(value) == canonical_json(expected)


def _json_keys(mapping: dict[Any, Any]) -> dict[str, Any]:
    return {k if isinstance(k, str) else canonical_json(k): v for k, v in mapping.items()}


def mismatch(expected: Any, actual: Any) -> dict[str, Any]:
    """What differs between two states: the top-level tables and up to `MAX_DIFFS`
    dotted paths (empty lists when they are equal)."""
    paths = diff_paths(expected, actual)
    return {
        "tables": sorted({p.split(".", 1)[0] for p in paths}),
        "paths": paths[:MAX_DIFFS],
        "n_differences": len(paths),
    }


def failed_assertions(state: Any, assertions: Sequence[StateAssertion]) -> list[str]:
    """The assertions that do not hold on ``state``, each as a sentence."""
    return [m for a in assertions if (m := _check(state, a))]


@register("state")
class StateGrader:
    """Final state equals the expected state (by hash), or the assertions hold."""

    name = "state"
    kind = "code"

    def __init__(self) -> None:
        # The expected state's hash per task, computed once (a task has many trials).
        self._expected: dict[int, tuple[dict[str, Any], str]] = {}

    def enabled(self, task: Task) -> bool:
        exp = task.expectations
        return exp.final_state is not None or bool(exp.state_assertions)

    def _want(self, expected: dict[str, Any]) -> str:
        hit = self._expected.get(id(expected))
        if hit is not None and hit[0] is expected:
            return hit[1]
        digest = state_hash(expected)
        self._expected[id(expected)] = (expected, digest)
        return digest

    def grade(self, task: Task, trial: Trial) -> Grade:
        exp = task.expectations
        if trial.final_state is None:
            return unknown(self.name, "no_final_state", "the trial recorded no final state")
        if exp.final_state is not None:
            want, got = self._want(exp.final_state), state_hash(trial.final_state)
            if want != got:
                evidence = mismatch(exp.final_state, trial.final_state)
                evidence.update(expected_hash=want, actual_hash=got)
                return fail(self.name, "state:mismatch", evidence)
        failures = failed_assertions(trial.final_state, exp.state_assertions)
        if failures:
            return fail(
                self.name,
                "state:assertion",
                {"failed": failures, "n_assertions": len(exp.state_assertions)},
            )
        digest = (
            self._want(exp.final_state)  # equal to the trial's, checked above
            if exp.final_state is not None
            else state_hash(trial.final_state)
        )
        return pass_(self.name, evidence={"hash": digest})
