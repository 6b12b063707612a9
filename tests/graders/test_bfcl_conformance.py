"""BFCL v4 conformance: every reference answer, given as a model output, passes.

For each single-turn entry in ../shared/data/bfcl the output a perfect model
would give is built from the key (first acceptable value other than "" per
argument) and must pass `ast_match` — except the entries whose key is itself
defective, which `key_defects` finds by reading the key against the schema.
That list is pinned in tests/graders/data/bfcl_defective_keys.json (and in
docs/graders.md) so a change in either the data or the finder shows up here.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from agentgauge.graders import ast_match
from agentgauge.testing.bfcl import (
    SINGLE_TURN,
    BfclEntry,
    key_defects,
    load_category,
    reference_calls,
)

DATA = Path(__file__).parent / "data" / "bfcl_defective_keys.json"
KEYED = [c for c in SINGLE_TURN if "relevance" not in c]


def _entries(shared_data: Path, category: str) -> list[BfclEntry]:
    return load_category(shared_data / "bfcl", category)


def test_defect_list_matches_the_data(shared_data: Path) -> None:
    pinned = {d["id"]: d["reasons"] for d in json.loads(DATA.read_text())["defective"]}
    found = {
        e.id: key_defects(e.functions, e.answer)
        for c in KEYED
        for e in _entries(shared_data, c)
        if key_defects(e.functions, e.answer)
    }
    assert found == pinned
    # The list is short: a finder that flags everything would make the test vacuous.
    assert 0 < len(found) < 20


@pytest.mark.parametrize("category", KEYED)
def test_reference_answers_pass(shared_data: Path, category: str) -> None:
    entries = _entries(shared_data, category)
    assert entries, f"no entries in {category}"
    failures = []
    for e in entries:
        defective = bool(key_defects(e.functions, e.answer))
        valid, error, detail = ast_match(e.functions, reference_calls(e.answer), e.answer, category)
        if valid == defective:
            failures.append((e.id, defective, error, detail))
    assert failures == []


@pytest.mark.parametrize("category", ["parallel", "parallel_multiple", "live_parallel"])
def test_reversed_parallel_reference_answers_pass(shared_data: Path, category: str) -> None:
    rng = random.Random(7)
    for e in _entries(shared_data, category):
        if key_defects(e.functions, e.answer):
            continue
        calls = reference_calls(e.answer)
        rng.shuffle(calls)
        assert ast_match(e.functions, calls, e.answer, category)[0], e.id


def test_irrelevance_passes_only_without_calls(shared_data: Path) -> None:
    for category in ("irrelevance", "live_irrelevance"):
        for e in _entries(shared_data, category):
            assert ast_match(e.functions, [], [], category) == (True, None, "")
            one = [{(e.functions[0]["name"] if e.functions else "anything"): {}}]
            assert ast_match(e.functions, one, [], category)[1] == "irrelevance:called"
    for e in _entries(shared_data, "live_relevance"):
        assert ast_match(e.functions, [{e.functions[0]["name"]: {}}], [], "live_relevance")[0]
        assert not ast_match(e.functions, [], [], "live_relevance")[0]


# ---------------------------------------------------------------- Java / JavaScript literals


def _java(value: Any, schema: dict[str, Any]) -> Any:
    """The Java source literal a model would write for ``value`` (test helper)."""
    t = schema.get("type")
    if isinstance(value, str) or t in ("any", "String", "char"):
        return value  # identifiers, constants, and strings are passed as text
    return _java_lit(value, t, (schema.get("items") or {}).get("type"))


def _java_lit(value: Any, t: str | None, items: str | None = None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return {"long": f"{value}L", "float": f"{value}f", "double": f"{value}.0"}.get(
            t or "", str(value)
        )
    if isinstance(value, float):
        return f"{value}f" if t == "float" else repr(value)
    if isinstance(value, list):
        inner = ", ".join(_java_lit(v, items) for v in value)
        if t == "ArrayList":
            return f"new ArrayList<>(Arrays.asList({inner}))"
        return f"new Object[]{{{inner}}}"
    if isinstance(value, dict):
        puts = " ".join(f"put({json.dumps(k)}, {_java_lit(v, None)});" for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return str(value)


def _js(value: Any, schema: dict[str, Any]) -> Any:
    t = schema.get("type")
    if isinstance(value, str) or t in ("any", "String"):
        return value
    return _js_lit(value, t)


def _js_lit(value: Any, t: str | None = None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, int):
        return f"{value}n" if t == "Bigint" else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_js_lit(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_lit(v)}" for k, v in value.items()) + "}"
    return "null"


@pytest.mark.parametrize(
    ("category", "render"), [("simple_java", _java), ("simple_javascript", _js)]
)
def test_java_js_literal_outputs_pass(shared_data: Path, category: str, render: Any) -> None:
    """The same reference answers written as source literals (``5L``, ``new
    ArrayList<>(Arrays.asList(...))``, ``{a: [1]}``) pass too."""
    rendered_some = 0
    for e in _entries(shared_data, category):
        props = e.functions[0]["parameters"]["properties"]
        calls = []
        for call in reference_calls(e.answer):
            ((name, args),) = call.items()
            lit = {k: render(v, props.get(k, {})) for k, v in args.items()}
            rendered_some += sum(1 for k in lit if lit[k] is not args[k])
            calls.append({name: lit})
        valid, error, detail = ast_match(e.functions, calls, e.answer, category)
        assert valid, (e.id, error, detail, calls)
    assert rendered_some > 30  # the literals were really exercised
