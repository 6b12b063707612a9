"""The trajectory grader: the trial's tool calls against a reference plan (docs/graders.md,
"`trajectory`").

Sequence modes (``TrajectorySpec.mode``), with R the reference calls and A the
actual ones:

- ``exact``: same length, the i-th actual call matches the i-th reference call;
- ``in_order``: R is a subsequence of A (extras allowed anywhere);
- ``any_order``: R is contained in A as a multiset (each reference call paired
  with its own actual call; extras allowed);
- ``superset``: every reference call is matched by some actual call (set
  containment, repeats in R may share one call);
- ``subset``: every actual call matches some reference call (the agent did
  nothing outside the plan; it may leave some of it undone).

Argument modes (``TrajectorySpec.arguments``): ``exact`` (canonical JSON
equality), ``ignore`` (names only), ``subset`` (every expected argument present
with an equal value, extras allowed), ``ast`` (expected arguments are lists of
acceptable values, matched with BFCL semantics against the task's function
docs when given).

Action precision = matched actual calls / |A| and recall = matched reference
calls / |R|, with the one-to-one pairing of largest size (maximum bipartite
matching). An empty reference in ``in_order``/``any_order``/``superset`` holds
for any trajectory, so it passes only when the task sets ``allow_empty``;
otherwise the grade is unknown (a task defect, not an agent failure).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgauge.graders.ast import check_call, literal_eq, max_bipartite_matching
from agentgauge.graders.base import fail, pass_, register, tool_calls_of, unknown
from agentgauge.graders.state import canonical_json
from agentgauge.schema import Grade, Task, ToolCallSpec, TrajectorySpec, Trial

__all__ = [
    "AS_WRITTEN",
    "TrajectoryGrader",
    "as_written",
    "call_matcher",
    "mark_as_written",
    "match_trajectory",
    "precision_recall",
    "unmatched_reference",
]

Call = tuple[str, Mapping[str, Any]]
Matcher = Callable[[Call, Call], bool]

#: The task metadata key saying that its reference and checkpoint calls are calls, run
#: as written by the task's world when the suite loads (the retail world computes the
#: expected state from them): one value per argument, so under ``ast`` a list-valued
#: argument is that one value, not a list of acceptable values.
AS_WRITTEN = "calls_as_written"


def as_written(task: Task) -> bool:
    """Whether ``task``'s reference and checkpoint calls are run as written
    (`AS_WRITTEN`)."""
    return task.metadata.get(AS_WRITTEN) is True


def mark_as_written(task: Task) -> Task:
    """``task`` marked (`AS_WRITTEN`) by a world that runs its reference and checkpoint
    calls as written, when one of them has a list-valued argument (the only case the
    mark changes); otherwise ``task`` itself."""
    exp = task.expectations
    calls = [*exp.reference_calls, *(c for cp in exp.checkpoints for c in cp.calls)]
    if as_written(task) or not any(
        isinstance(v, list) for c in calls for v in c.arguments.values()
    ):
        return task
    return task.model_copy(update={"metadata": {**task.metadata, AS_WRITTEN: True}})


def call_matcher(
    arguments: str, functions: Sequence[Mapping[str, Any]] = (), *, written: bool = False
) -> Matcher:
    """``match(actual, reference)`` for an argument mode. With ``written`` the reference
    calls are calls run as written (`AS_WRITTEN`): under ``ast`` each argument is its one
    acceptable value, a list included."""
    docs = {f.get("name"): f for f in functions}

    def exact(a: Call, r: Call) -> bool:
        return a[0] == r[0] and canonical_json(a[1]) == canonical_json(r[1])

    def ignore(a: Call, r: Call) -> bool:
        return a[0] == r[0]

    def subset(a: Call, r: Call) -> bool:
        return a[0] == r[0] and all(k in a[1] and literal_eq(a[1][k], v) for k, v in r[1].items())

    def ast(a: Call, r: Call) -> bool:
        if a[0] != r[0]:
            return False
        doc = docs.get(r[0]) or {
            "name": r[0],
            "parameters": {"properties": {k: {} for k in r[1]}, "required": []},
        }
        key = {k: v if isinstance(v, list) and not written else [v] for k, v in r[1].items()}
        return check_call(doc, {a[0]: dict(a[1])}, {r[0]: key})[0]

    modes: dict[str, Matcher] = {"exact": exact, "ignore": ignore, "subset": subset, "ast": ast}
    if arguments not in modes:
        raise ValueError(f"unknown argument mode {arguments!r}; expected one of {sorted(modes)}")
    return modes[arguments]


def _pair_matrix(actual: Sequence[Call], ref: Sequence[Call], match: Matcher) -> list[list[bool]]:
    return [[match(a, r) for a in actual] for r in ref]


def precision_recall(
    actual: Sequence[Call], ref: Sequence[Call], match: Matcher
) -> tuple[float | None, float | None, int]:
    """(precision, recall, matched pairs) under the largest one-to-one pairing;
    precision is ``None`` without actual calls, recall without reference calls."""
    if not actual or not ref:
        return (None if not actual else 0.0), (None if not ref else 0.0), 0
    pairs = sum(j >= 0 for j in max_bipartite_matching(_pair_matrix(actual, ref, match)))
    return pairs / len(actual), pairs / len(ref), pairs


def match_trajectory(
    actual: Sequence[Call], ref: Sequence[Call], mode: str, match: Matcher
) -> bool:
    """Whether the trajectory holds under ``mode`` (see module doc)."""
    if mode == "exact":
        return len(actual) == len(ref) and all(
            match(a, r) for a, r in zip(actual, ref, strict=True)
        )
    if mode in ("in_order", "any_order"):
        return not unmatched_reference(actual, ref, mode, match)
    if mode == "superset":
        return all(any(match(a, r) for a in actual) for r in ref)
    if mode == "subset":
        return all(any(match(a, r) for r in ref) for a in actual)
    raise ValueError(f"unknown trajectory mode {mode!r}")


def unmatched_reference(
    actual: Sequence[Call], ref: Sequence[Call], mode: str, match: Matcher
) -> list[int]:
    """Indices of the reference calls ``actual`` does not contain, in ``in_order``
    (subsequence) or ``any_order`` (multiset) mode: empty when the mode holds."""
    if mode == "in_order":
        # Earliest-match scanning is optimal for subsequence tests: taking the
        # first actual call that fits leaves the most room for the rest.
        i = 0
        for a in actual:
            if i < len(ref) and match(a, ref[i]):
                i += 1
        if i == len(ref):
            return []
        # It fails: the missing calls are those outside a longest common subsequence,
        # not every call after the first one the scan missed (skipping a lookup does
        # not make the cancellation after it missing).
        return _outside_common_subsequence(actual, ref, match)
    if mode == "any_order":
        if not ref:
            return []
        if not actual:
            return list(range(len(ref)))
        pairs = max_bipartite_matching(_pair_matrix(actual, ref, match))
        return [j for j, a in enumerate(pairs) if a < 0]
    raise ValueError(f"unmatched_reference needs mode in_order or any_order, not {mode!r}")


def _outside_common_subsequence(
    actual: Sequence[Call], ref: Sequence[Call], match: Matcher
) -> list[int]:
    """Indices of the reference calls left out of one longest common subsequence of
    ``ref`` and ``actual`` (a call pairs with a reference call when ``match`` says so):
    the textbook dynamic programme, |A|·|R| matches, run only on a failed trajectory."""
    n, m = len(actual), len(ref)
    # longest[i][j]: the longest common subsequence of actual[i:] and ref[j:].
    longest = [[0] * (m + 1) for _ in range(n + 1)]
    fits = [[match(actual[i], ref[j]) for j in range(m)] for i in range(n)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if fits[i][j]:
                longest[i][j] = longest[i + 1][j + 1] + 1
            else:
                longest[i][j] = max(longest[i + 1][j], longest[i][j + 1])
    kept: set[int] = set()
    i = j = 0
    while i < n and j < m:
        if fits[i][j] and longest[i][j] == longest[i + 1][j + 1] + 1:
            kept.add(j)
            i, j = i + 1, j + 1
        elif longest[i + 1][j] >= longest[i][j + 1]:
            i += 1
        else:
            j += 1
    return [j for j in range(m) if j not in kept]


def _calls(specs: Sequence[ToolCallSpec]) -> list[Call]:
    return [(s.name, s.arguments) for s in specs]


@register("trajectory")
class TrajectoryGrader:
    """Tool calls follow the reference plan in the task's mode."""

    name = "trajectory"
    kind = "code"

    def __init__(self, *, mode: str | None = None, arguments: str | None = None) -> None:
        self.mode = mode
        self.arguments = arguments

    def enabled(self, task: Task) -> bool:
        exp = task.expectations
        return exp.trajectory is not None or bool(exp.reference_calls)

    def grade(self, task: Task, trial: Trial) -> Grade:
        exp = task.expectations
        spec = exp.trajectory or TrajectorySpec()
        mode = self.mode or spec.mode
        arguments = self.arguments or spec.arguments
        match = call_matcher(arguments, exp.functions, written=as_written(task))
        ref = _calls(exp.reference_calls)
        actual: list[Call] = [(c.name, c.arguments) for c in tool_calls_of(trial)]
        precision, recall, pairs = precision_recall(actual, ref, match)
        evidence: dict[str, Any] = {
            "mode": mode,
            "arguments": arguments,
            "precision": precision,
            "recall": recall,
            "n_actual": len(actual),
            "n_reference": len(ref),
            "matched": pairs,
        }
        if not ref and mode in ("in_order", "any_order", "superset") and not spec.allow_empty:
            return unknown(self.name, "empty_reference", evidence)
        if match_trajectory(actual, ref, mode, match):
            return pass_(self.name, evidence=evidence)
        return fail(self.name, f"trajectory:{mode}", evidence)
