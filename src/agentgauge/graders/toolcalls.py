"""The ``tool_calls`` grader: BFCL AST matching applied to a trial's tool calls.

The trial's ``tool_call`` events, in transcript order, become the model output
``[{name: arguments}]`` and are matched against ``Expectations.functions``,
``answer_key`` and ``call_category`` with `agentgauge.graders.ast.ast_match`.
When ``call_category`` is absent it is inferred from the key: no expected call
means ``irrelevance``; one call ``simple`` (``multiple`` when several functions
are offered); several ``parallel`` (``parallel_multiple`` with several
distinct names).
"""

from __future__ import annotations

from typing import Any

from agentgauge.graders.ast import CompiledKey, Language, compile_key
from agentgauge.graders.base import fail, pass_, register, tool_calls_of
from agentgauge.schema import Expectations, Grade, Task, Trial

__all__ = ["ToolCallsGrader", "infer_category"]


def infer_category(functions: list[dict[str, Any]], answer: list[dict[str, Any]]) -> str:
    """BFCL category implied by the key's shape (see module doc)."""
    if not answer:
        return "irrelevance"
    if len(answer) == 1:
        return "multiple" if len(functions) > 1 else "simple"
    names = {next(iter(a)) for a in answer}
    return "parallel_multiple" if len(names) > 1 else "parallel"


@register("tool_calls")
class ToolCallsGrader:
    """Tool calls match the BFCL answer key (AST match)."""

    name = "tool_calls"
    kind = "code"

    def __init__(self, *, name_equivalence: bool = False, language: Language | None = None):
        self.name_equivalence = name_equivalence
        self.language = language
        # One compiled key per task, reused across its trials (a re-grade sees the
        # same Task object for every trial of a task).
        self._keys: dict[str, tuple[Expectations, str, CompiledKey]] = {}

    def _key(self, task: Task, language: Language) -> CompiledKey:
        hit = self._keys.get(task.id)
        if hit is not None and hit[0] is task.expectations and hit[1] == language:
            return hit[2]
        exp = task.expectations
        key = compile_key(
            exp.functions,
            exp.answer_key or [],
            language=language,
            name_equivalence=self.name_equivalence,
        )
        self._keys[task.id] = (exp, language, key)
        return key

    def enabled(self, task: Task) -> bool:
        exp = task.expectations
        return exp.answer_key is not None or exp.call_category == "irrelevance"

    def grade(self, task: Task, trial: Trial) -> Grade:
        exp = task.expectations
        answer = exp.answer_key or []
        category = exp.call_category or infer_category(exp.functions, answer)
        language = self.language or task.metadata.get("language", "python")
        calls = [{c.name: c.arguments} for c in tool_calls_of(trial)]
        valid, error, detail = self._key(task, language).match(calls, category)
        evidence = {
            "category": category,
            "n_calls": len(calls),
            "n_expected": len(answer),
        }
        if valid:
            return pass_(self.name, evidence=evidence)
        assert error is not None
        return fail(self.name, error, {**evidence, "detail": detail})
