"""A run as Parquet: the layout of an export directory (docs/parquet.md).

An export is a directory of three Parquet files and a header::

    trials.parquet      one row per trial: every scalar trial field
    events.parquet      one row per transcript event
    grades.parquet      one row per grade, of the grade version exported
    _agentgauge.json    the layout's name and version, the run header, its tasks
                        and the grade version exported

Events and grades join trials on ``(run_id, trial_key)``. The header is a file
of its own, not Parquet key-value metadata, so that it can be read without
pyarrow; its name starts with ``_`` so that the dataset readers of pyarrow,
DuckDB and Spark skip it when given the directory.

The columns of ``trials.parquet`` follow from `agentgauge.schema.TRIAL_FIELDS`
(the one list of a trial's fields), so a field added there is a column here:
text as a string (dictionary-encoded for labels), integers as int64, reals as
float64, booleans as bool, JSON values and documents as JSON text; documents
(the final state, the turn record) dictionary-encoded too, so that the trials
that leave the world in the same state share one copy of it, as in the store.
After them come the trial's facts (`agentgauge.facts`: its action sequence, tool
errors, the grade evidence the behaviour metrics read), so that every metric of
an export is computed from its columns, as on the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgauge.facts import FACTS, FactKind
from agentgauge.schema import TRIAL_FIELDS, TrialField

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "EVENTS_FILE",
    "GRADES_FILE",
    "HEADER_FILE",
    "LABELS",
    "LAYOUT",
    "TRIALS_FILE",
    "arrow_type",
    "events_schema",
    "fact_type",
    "grades_schema",
    "trials_schema",
]

LAYOUT = "agentgauge.parquet/1"
"""The name and version of the layout, in the header's ``schema``."""

TRIALS_FILE = "trials.parquet"
EVENTS_FILE = "events.parquet"
GRADES_FILE = "grades.parquet"
HEADER_FILE = "_agentgauge.json"

#: Text fields that take few distinct values (dictionary-encoded); the free text
#: (an error message, an answer) is a plain string.
LABELS = frozenset(
    f.name for f in TRIAL_FIELDS if f.type == "text" and f.name not in ("error", "answer")
)


def arrow_type(field: TrialField) -> pa.DataType:
    """The Arrow type of a trial field's column."""
    import pyarrow as pa

    if field.name in LABELS or field.type == "document":
        return pa.dictionary(pa.int32(), pa.string())
    return {
        "text": pa.string(),
        "int": pa.int64(),
        "real": pa.float64(),
        "bool": pa.bool_(),
        "json": pa.string(),
        "document": pa.string(),
    }[field.type]


def fact_type(kind: FactKind) -> pa.DataType:
    """The Arrow type of a fact's column (`agentgauge.facts`): a label (a JSON text of
    which few are distinct) dictionary-encoded, a verdict state an int8."""
    import pyarrow as pa

    return {
        "label": pa.dictionary(pa.int32(), pa.string()),
        "float": pa.float64(),
        "int": pa.int64(),
        "bool": pa.bool_(),
        "state": pa.int8(),
    }[kind]


def _label() -> pa.DataType:
    import pyarrow as pa

    return pa.dictionary(pa.int32(), pa.string())


def trials_schema() -> pa.Schema:
    """``trials.parquet``: the run id, the trial key, every trial field in order, then
    the trial's facts (what the behaviour metrics read, `agentgauge.facts.FACTS`)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("run_id", _label(), nullable=False),
            pa.field("trial_key", pa.int64(), nullable=False),
            *(pa.field(f.name, arrow_type(f), nullable=not f.required) for f in TRIAL_FIELDS),
            *(pa.field(name, fact_type(kind)) for name, kind in FACTS.items()),
        ]
    )


def events_schema() -> pa.Schema:
    """``events.parquet``: each event's trial, position, type, time and other fields."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("run_id", _label(), nullable=False),
            pa.field("trial_key", pa.int64(), nullable=False),
            pa.field("seq", pa.int64(), nullable=False),
            pa.field("type", _label(), nullable=False),
            pa.field("t", pa.float64()),
            pa.field("data", pa.string(), nullable=False),
        ]
    )


def grades_schema() -> pa.Schema:
    """``grades.parquet``: each grade of the version exported, by trial and grader."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("run_id", _label(), nullable=False),
            pa.field("trial_key", pa.int64(), nullable=False),
            pa.field("grader", _label(), nullable=False),
            pa.field("score", pa.float64()),
            pa.field("passed", pa.bool_()),
            pa.field("status", _label()),
            pa.field("evidence", pa.string()),
            pa.field("judge_model", _label()),
        ]
    )
