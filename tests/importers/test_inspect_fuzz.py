"""Hostile Inspect logs never end in a traceback: whatever the bytes, the import
either reads them or fails with one `InputError`."""

from __future__ import annotations

import copy
import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgauge.errors import InputError
from agentgauge.importers import import_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspect"
_LOG: dict[str, Any] = json.loads((FIXTURES / "tiny.json").read_text())
HEADER = {k: v for k, v in _LOG.items() if k != "samples"}
SAMPLE: dict[str, Any] = _LOG["samples"][4]  # divide, epoch 2: a tool call with an error

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _import(name: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        try:
            # Through the store too: what reads must also write.
            import_file("inspect", path, Path(tmp) / "s.db")
        except InputError as exc:
            assert len(str(exc).splitlines()) == 1, str(exc)  # one line for the user


def _zip(members: dict[str, Any]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.eval"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, value in members.items():
                archive.writestr(name, json.dumps(value))
        return path.read_bytes()


@FUZZ
@given(st.binary(max_size=400), st.sampled_from([b"", b"PK\x03\x04", b"{", b"["]))
def test_arbitrary_bytes(raw: bytes, prefix: bytes) -> None:
    _import("log.eval", prefix + raw)
    _import("log.json", prefix + raw)


@FUZZ
@given(json_values)
def test_arbitrary_json_as_the_json_log(value: Any) -> None:
    _import("log.json", json.dumps(value).encode())


@FUZZ
@given(json_values, st.sampled_from(["header.json", "samples/add_epoch_1.json"]))
def test_arbitrary_json_as_a_member(value: Any, member: str) -> None:
    members: dict[str, Any] = {"header.json": HEADER, "samples/add_epoch_1.json": SAMPLE}
    members[member] = value
    _import("log.eval", _zip(members))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON value (for replacing one element of a real sample)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


SAMPLE_PATHS = _paths({k: v for k, v in SAMPLE.items() if k != "events"}) + [
    ("events", i, key) for i, e in enumerate(SAMPLE["events"]) for key in e if e["event"] == "model"
]


@FUZZ
@given(st.sampled_from(SAMPLE_PATHS), json_values, st.booleans())
def test_one_element_of_a_real_sample_replaced(
    path: tuple[Any, ...], value: Any, chunked: bool
) -> None:
    sample = copy.deepcopy(SAMPLE)
    target: Any = sample
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    if not chunked:
        _import("log.eval", _zip({"header.json": HEADER, "samples/divide_epoch_2.json": sample}))
        return
    shell = {k: v for k, v in sample.items() if k not in ("messages", "events", "attachments")}
    messages = sample.get("messages")
    shell["message_refs"] = [[0, len(messages)]] if isinstance(messages, list) else messages
    members = {
        "header.json": HEADER,
        "samples/divide_epoch_2/sample.json": shell,
        "samples/divide_epoch_2/messages/0.json": messages,
        "samples/divide_epoch_2/events/0.json": sample.get("events"),
    }
    _import("log.eval", _zip(members))


REAL_EVAL = (FIXTURES / "tiny.eval").read_bytes()


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(REAL_EVAL) - 1), st.integers(0, 255)), max_size=8))
def test_bytes_of_a_real_zstd_log_changed(changes: list[tuple[int, int]]) -> None:
    raw = bytearray(REAL_EVAL)
    for at, byte in changes:
        raw[at] = byte
    _import("log.eval", bytes(raw))
