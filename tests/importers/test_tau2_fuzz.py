"""Hostile tau2 results never end in a traceback: any value anywhere is either
imported or refused with an `InputError` (hypothesis-generated)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgauge.errors import InputError
from agentgauge.importers import read_import

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tau2"
MONOLITH = json.loads((FIXTURES / "monolith" / "results.json").read_text())
SIMULATION = json.loads((FIXTURES / "dir" / "simulations" / "sim-1-0.json").read_text())

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(
        ["", "tool", "assistant", "user", "infrastructure_error", "1", "user_stop", "2026-13-01"]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a JSON document."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += paths(value, (*prefix, i))
    return out


MONOLITH_PATHS = paths(MONOLITH)[1:]
SIMULATION_PATHS = paths(SIMULATION)[1:]
#: Every key name in the fixture: replacing all of a key's occurrences at once
#: (every message's ``timestamp``) reaches rules that one location rarely does.
KEYS = sorted({p[-1] for p in MONOLITH_PATHS if isinstance(p[-1], str)})


def replaced_everywhere(doc: Any, key: str, value: Any) -> Any:
    if isinstance(doc, dict):
        return {
            k: value if k == key else replaced_everywhere(v, key, value) for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [replaced_everywhere(v, key, value) for v in doc]
    return doc


def replaced(doc: Any, edits: list[tuple[tuple[Any, ...], Any]]) -> Any:
    """``doc`` with each ``(location, value)`` applied in turn (a location an
    earlier edit removed is skipped)."""
    copy = json.loads(json.dumps(doc))
    for where, value in edits:
        node = copy
        try:
            for part in where[:-1]:
                node = node[part]
            node[where[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    return copy


def edits(locations: list[tuple[Any, ...]]) -> st.SearchStrategy[list[tuple[tuple[Any, ...], Any]]]:
    return st.lists(st.tuples(st.sampled_from(locations), values), min_size=1, max_size=6)


def imports_or_refuses(path: Path) -> None:
    with contextlib.suppress(InputError):
        read_import("tau2", path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits(MONOLITH_PATHS))
def test_any_values_anywhere_in_a_monolith(changes: list[tuple[tuple[Any, ...], Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        path.write_text(json.dumps(replaced(MONOLITH, changes)))
        imports_or_refuses(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(KEYS), values), min_size=1, max_size=3))
def test_any_value_for_every_occurrence_of_a_key(changes: list[tuple[str, Any]]) -> None:
    doc = MONOLITH
    for key, value in changes:
        doc = replaced_everywhere(doc, key, value)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        path.write_text(json.dumps(doc))
        imports_or_refuses(path)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits(SIMULATION_PATHS))
def test_any_values_anywhere_in_a_simulation_file(
    changes: list[tuple[tuple[Any, ...], Any]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        shutil.copytree(FIXTURES / "dir", run)
        sim = run / "simulations" / "sim-1-0.json"
        sim.write_text(json.dumps(replaced(SIMULATION, changes)))
        imports_or_refuses(run)


@settings(max_examples=60, deadline=None)
@given(values)
def test_any_document(value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        path.write_text(json.dumps(value))
        imports_or_refuses(path)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        path.write_bytes(raw)
        imports_or_refuses(path)
