"""A trial's columns and facts as one fixed-width record, so a run reads as arrays.

Reading a million trials' two dozen columns through ``sqlite3`` costs a Python
object per value (about 7 s, measured here); reading one ``BLOB`` per trial and
viewing the joined bytes as a numpy structured array costs one per trial (under
a second). So the store keeps, beside each trial's row, one record
(``trial_facts.data``) per grade version of everything the metrics read: the
`TrialTable` columns with the outcome under that version, the status and error
kind (the infra-error rule's inputs) and the facts (`agentgauge.facts`).

Text is kept as the id of a row of ``labels`` (each distinct text once, like a
task id or an action sequence), ``-1`` for none; numbers as float64 (NaN for
none); counts as int32; flags as uint8; verdict states as int8.
`RECORD` is the layout; `LAYOUT` names it in the store's ``meta``, so a store
written with another layout is read the slow way rather than misread.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.facts import FACTS
from agentgauge.table import COLUMNS, SOURCE_FIELDS

__all__ = ["LAYOUT", "RECORD", "pack", "record_fields", "unpack"]

#: The fields of the record: the table's inputs, then the facts.
_KINDS: dict[str, str] = {
    **{
        name: ("label" if name in ("status", "error_kind") else COLUMNS[name])
        for name in SOURCE_FIELDS
    },
    **FACTS,
}
_NUMPY = {"label": "<i4", "float": "<f8", "int": "<i8", "bool": "u1", "state": "i1"}
#: Counts of facts fit in int32; the trial index is a table ``int``.
_FACT_INT = "<i4"

RECORD = np.dtype(
    [
        (name, _FACT_INT if (kind == "int" and name in FACTS) else _NUMPY[kind])
        for name, kind in _KINDS.items()
    ]
)
#: The record's layout, as the store's ``meta`` records it.
LAYOUT = "1:" + hashlib.sha256(str(RECORD.descr).encode()).hexdigest()[:16]

#: The same layout for `struct` (numpy's structured dtypes are packed, no padding), which
#: packs one record about fifty times faster than filling a numpy scalar.
_STRUCT = struct.Struct(
    "<"
    + "".join(
        {"<i4": "i", "<f8": "d", "<i8": "q", "|u1": "B", "|i1": "b"}[RECORD[n].str] for n in _KINDS
    )
)
assert _STRUCT.size == RECORD.itemsize
_NAN = float("nan")


def record_fields() -> dict[str, str]:
    """Each field of the record and its kind (``label``, ``float``, ``int``, ``bool``,
    ``state``)."""
    return dict(_KINDS)


def pack(values: Mapping[str, Any], label_id: Callable[[str], int]) -> bytes:
    """One trial's record: ``values`` holds every field of `record_fields` (labels as
    text or ``None``, numbers or ``None``); ``label_id`` gives a text's label id."""
    out: list[Any] = []
    for name, kind in _KINDS.items():
        value = values[name]
        if kind == "label":
            out.append(-1 if value is None else label_id(str(value)))
        elif kind == "float":
            out.append(_NAN if value is None else float(value))
        else:
            out.append(0 if value is None else int(value))
    return _STRUCT.pack(*out)


def unpack(
    blobs: list[bytes], labels: npt.NDArray[np.object_]
) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, npt.NDArray[np.int32]]]:
    """The records of ``blobs`` as columns (labels as their texts, flags as bool), and
    each label column's ids (for coding without hashing). ``labels[i]`` is the text
    of label id ``i``; its last entry must be ``None`` (what id ``-1`` reads)."""
    records = np.frombuffer(b"".join(blobs), dtype=RECORD)
    out: dict[str, np.ndarray[Any, Any]] = {}
    ids: dict[str, npt.NDArray[np.int32]] = {}
    for name, kind in _KINDS.items():
        column = records[name]
        if kind == "label":
            ids[name] = column
            out[name] = labels[column]
        elif kind == "bool":
            out[name] = column.astype(bool)
        elif kind == "float":
            out[name] = column.astype(np.float64)
        elif kind == "int":
            out[name] = column.astype(np.int64)
        else:
            out[name] = column.astype(np.int8)
    return out, ids
