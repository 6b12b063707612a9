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
`RECORD` is the layout; `LAYOUT` names it, with the version of the rules the facts
were derived by (`agentgauge.facts.RULES`), in the store's ``meta``, so a store written with another
layout or other rules is read the slow way rather than misread, and has its records
derived again on its first writable open.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.facts import FACTS, RULES
from agentgauge.table import COLUMNS, SOURCE_FIELDS

__all__ = ["LAYOUT", "RECORD", "pack", "record_fields", "unpack", "update"]

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
#: The record's layout, as the store's ``meta`` records it: the version of the rules its
#: facts were derived by (`agentgauge.facts.RULES`) and the record's shape. A store
#: whose records were derived by other rules gets them derived again, as one of another
#: shape does.
LAYOUT = f"{RULES}:" + hashlib.sha256(str(RECORD.descr).encode()).hexdigest()[:16]

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
    text or ``None``, numbers or ``None``); ``label_id`` gives a text's label id.

    The rule of `_stored`, a kind at a time over the fields' positions (one C call
    takes every value out; a value already of its stored type is left as it is): a
    bulk import packs a record per trial, and a call and a test per field was most
    of its cost."""
    out = list(_VALUES(values))
    for i in _LABEL_AT:
        value = out[i]
        out[i] = -1 if value is None else label_id(value if type(value) is str else str(value))
    for i in _FLOAT_AT:
        value = out[i]
        if type(value) is not float:
            out[i] = _NAN if value is None else float(value)
    for i in _INT_AT:  # ints, flags and states
        value = out[i]
        if type(value) is not int:
            out[i] = 0 if value is None else int(value)
    return _STRUCT.pack(*out)


_VALUES = itemgetter(*_KINDS)
_LABEL_AT = tuple(i for i, kind in enumerate(_KINDS.values()) if kind == "label")
_FLOAT_AT = tuple(i for i, kind in enumerate(_KINDS.values()) if kind == "float")
_INT_AT = tuple(i for i, kind in enumerate(_KINDS.values()) if kind not in ("label", "float"))


def _stored(kind: str, value: Any, label_id: Callable[[str], int]) -> Any:
    """A field's value as the record holds it: a label as its id (-1: none), a
    missing number as NaN, a flag or count as an integer."""
    if kind == "label":
        return -1 if value is None else label_id(str(value))
    if kind == "float":
        return _NAN if value is None else float(value)
    return 0 if value is None else int(value)


def update(record: Any, values: Mapping[str, Any], label_id: Callable[[str], int]) -> None:
    """Set some fields of a record (a numpy scalar of `RECORD`) the way `pack` sets them."""
    for name, value in values.items():
        record[name] = _stored(_KINDS[name], value, label_id)


def unpack(
    blobs: list[bytes],
) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, npt.NDArray[np.int32]]]:
    """The records of ``blobs`` as columns: numbers and flags as arrays of their kind,
    and each label column as its label ids (``-1`` for none), which the caller turns
    into texts where it needs them."""
    records = np.frombuffer(b"".join(blobs), dtype=RECORD)
    out: dict[str, np.ndarray[Any, Any]] = {}
    ids: dict[str, npt.NDArray[np.int32]] = {}
    for name, kind in _KINDS.items():
        column = records[name]
        if kind == "label":
            ids[name] = column
        elif (
            column.dtype == _ARRAY[kind] or column.dtype.itemsize == np.dtype(_ARRAY[kind]).itemsize
        ):
            # A view into the records, not a copy: most columns are read once or never.
            out[name] = column.view(_ARRAY[kind])
        else:
            out[name] = column.astype(_ARRAY[kind])
    return out, ids


#: The array each kind of field is read into (as `agentgauge.table` and `Facts` hold it).
_ARRAY = {"bool": np.bool_, "float": np.float64, "int": np.int64, "state": np.int8}
