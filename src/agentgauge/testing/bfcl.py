"""Reading BFCL's single-turn data and checking its answer keys.

BFCL (Berkeley Function-Calling Leaderboard, v4) ships one JSON object per line:
questions ``BFCL_v4_<category>.json`` with their ``function`` docs, answer keys
in ``possible_answer/`` and irrelevance/relevance sets (no key) in
``relevance/``. `load_category` joins them by id; `reference_calls` builds the
output a perfect model would give (the first acceptable value other than
``""`` of every argument, leaving out those that accept only omission); `key_defects` says
why an answer key cannot be satisfied by any output at all. The tests and
`benchmarks/bench_graders.py` read BFCL's data through it; no grader does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError

__all__ = [
    "SINGLE_TURN",
    "BfclEntry",
    "key_defects",
    "load_category",
    "reference_calls",
]

SINGLE_TURN: tuple[str, ...] = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
    "live_relevance",
)


@dataclass(frozen=True)
class BfclEntry:
    """One BFCL test: its id, category, function docs and answer key."""

    id: str
    category: str
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]]
    """The key; empty for irrelevance and relevance entries."""


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except ValueError as exc:
                raise InputError(f"not JSON: {exc}", file=path, line=n) from None


def load_category(root: str | Path, category: str) -> list[BfclEntry]:
    """The entries of one BFCL category under ``root`` (the folder of the files)."""
    root = Path(root)
    name = f"BFCL_v4_{category}.json"
    keyless = "irrelevance" in category or category.endswith("relevance")
    questions = root / "relevance" / name if keyless else root / name
    if not questions.is_file():
        raise InputError("no such BFCL file", file=questions)
    keys: dict[str, list[dict[str, Any]]] = {}
    if not keyless:
        key_path = root / "possible_answer" / name
        for n, row in _lines(key_path):
            if "id" not in row or "ground_truth" not in row:
                raise InputError("needs 'id' and 'ground_truth'", file=key_path, line=n)
            keys[row["id"]] = row["ground_truth"]
    out: list[BfclEntry] = []
    for n, row in _lines(questions):
        if not keyless and row.get("id") not in keys:
            raise InputError(f"no answer key for {row.get('id')!r}", file=questions, line=n)
        out.append(
            BfclEntry(
                id=row["id"],
                category=category,
                functions=row["function"],
                answer=[] if keyless else keys[row["id"]],
            )
        )
    return out


def _first(options: Any) -> tuple[bool, Any]:
    """(present, value): the first acceptable value other than ``""``; absent when
    the key accepts nothing but omission."""
    opts = options if isinstance(options, list) else [options]
    for o in opts:
        if o != "":
            return True, _concrete(o)
    return False, None


def _concrete(value: Any) -> Any:
    # Acceptable dicts hold lists of acceptable values per key; pick recursively.
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, opts in value.items():
            present, v = _first(opts)
            if present:
                out[k] = v
        return out
    if isinstance(value, list):
        return [_concrete(v) if isinstance(v, dict) else v for v in value]
    return value


def reference_calls(answer: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The calls a perfect model makes: first acceptable value per argument."""
    calls: list[dict[str, Any]] = []
    for entry in answer:
        ((name, args),) = entry.items()
        chosen: dict[str, Any] = {}
        for param, options in args.items():
            present, value = _first(options)
            if present:
                chosen[param] = value
        calls.append({name: chosen})
    return calls


def key_defects(
    functions: Sequence[Mapping[str, Any]], answer: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Why this answer key is defective (empty when it is sound): no output can
    satisfy it, or values it lists can never be accepted.

    Found by reading the key against the schema: a required parameter whose
    acceptable list is empty or holds only ``""`` (it must be given, yet no
    value is accepted); values accepted for a parameter absent from the schema
    (the grader rejects any parameter outside the schema, so only omission
    could pass); a required parameter missing from the key (it must be given,
    yet any value is unexpected); a function the docs do not describe. The
    output `reference_calls` builds fails on exactly these keys.
    """
    docs = {f.get("name"): f for f in functions}
    reasons: list[str] = []
    for entry in answer:
        ((name, args),) = entry.items()
        doc = docs.get(name)
        if doc is None:
            reasons.append(f"{name}: function not in the docs")
            continue
        params = doc.get("parameters") or {}
        props = params.get("properties") or {}
        required = params.get("required") or []
        for param, options in args.items():
            opts = options if isinstance(options, list) else [options]
            if param not in props and [o for o in opts if o != ""]:
                tail = "only omission passes" if "" in opts else "no output passes"
                reasons.append(
                    f"{name}.{param}: the key lists values for a parameter the schema "
                    f"lacks, which the grader always rejects ({tail})"
                )
            elif param in required and not [o for o in opts if o != ""]:
                reasons.append(f"{name}.{param}: required, but the key accepts no value")
        for param in required:
            if param not in args:
                reasons.append(f"{name}.{param}: required, but absent from the key")
    return reasons
