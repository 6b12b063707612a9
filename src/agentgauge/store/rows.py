"""A trial as the parameters of its SQL rows, and back (derived from `TRIAL_FIELDS`)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

import orjson
from pydantic_core import PydanticSerializationError

from agentgauge.canonical import canonical_json
from agentgauge.errors import InputError
from agentgauge.facts import FACTS, trial_facts
from agentgauge.schema import TRIAL_FIELDS, Event, Grade, Trial
from agentgauge.store.layout import TRIAL_COLUMNS
from agentgauge.store.packed import record_fields
from agentgauge.textio import has_long_integer

__all__ = [
    "DOCUMENT_POSITIONS",
    "INSERT_TRIAL",
    "INSERT_TRIAL_WITH_ID",
    "UNREADABLE",
    "DamagedValue",
    "TrialRows",
    "bad_flag",
    "describe_row",
    "dumps",
    "event_from",
    "event_of",
    "event_row",
    "grade_rows",
    "loads",
    "record_values",
    "replace_surrogates",
    "stored_flag",
    "trial_of",
    "trial_rows",
    "unreadable",
    "utc_now",
]

_LAST_NOW: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """The current UTC time, ISO-8601 with seconds."""
    global _LAST_NOW
    second = int(time.time())
    if _LAST_NOW[0] != second:  # formatted once per second: the harness asks per trial
        _LAST_NOW = (second, datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds"))
    return _LAST_NOW[1]


def dumps(value: Any) -> str:
    """JSON as the store keeps it: canonical, ASCII (`agentgauge.canonical`)."""
    return "{}" if type(value) is dict and not value else canonical_json(value, ascii=True)


INSERT_TRIAL = (
    f"INSERT INTO trials(run_id, {', '.join(TRIAL_COLUMNS)}, created_at)"
    f" VALUES (?, {', '.join('?' * len(TRIAL_COLUMNS))}, ?)"
)
#: The same with the primary key given (many trials in one statement: `Store.add_trials`).
INSERT_TRIAL_WITH_ID = (
    f"INSERT INTO trials(id, run_id, {', '.join(TRIAL_COLUMNS)}, created_at)"
    f" VALUES (?, ?, {', '.join('?' * len(TRIAL_COLUMNS))}, ?)"
)
#: Where a trial row holds a document's text, which the writer swaps for its id.
DOCUMENT_POSITIONS = tuple(1 + i for i, f in enumerate(TRIAL_FIELDS) if f.type == "document")
#: A field's position in a trial row (after the run id).
_POSITION = {f.name: 1 + i for i, f in enumerate(TRIAL_FIELDS)}
_VALUES = attrgetter(*(f.name for f in TRIAL_FIELDS))
#: Positions of the fields kept as JSON text (documents too, until the writer swaps them).
_JSON_POSITIONS = tuple(1 + i for i, f in enumerate(TRIAL_FIELDS) if f.type in ("json", "document"))

TrialRows = tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, Any]]
"""One trial as SQL parameters: its ``trials`` row (documents as text), its events
(without the trial's key), its grades (without key and version) and the values of
its record (`record_values`)."""

#: The trial fields a record holds beside the facts (`agentgauge.store.packed`).
_RECORD_FIELDS = tuple(name for name in record_fields() if name not in FACTS)
_RECORD_VALUES = attrgetter(*_RECORD_FIELDS)


def record_values(t: Trial) -> dict[str, Any]:
    """What a trial's record (`agentgauge.store.packed`) holds: its fields the metrics
    read, and its facts (`agentgauge.facts`)."""
    values = dict(zip(_RECORD_FIELDS, _RECORD_VALUES(t), strict=True))
    values.update(trial_facts(t))
    return values


#: A lone surrogate (U+D800..U+DFFF): Python strings and JSON allow one, UTF-8 has no form.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The same as `dumps` writes it (ASCII JSON escapes it as ``\udXXX``).
_ESCAPED_SURROGATE = re.compile(r"\\ud[89a-f][0-9a-f]{2}")
#: Positions of the text fields in a trial row (after the run id).
_TEXT_POSITIONS = tuple(1 + i for i, f in enumerate(TRIAL_FIELDS) if f.type == "text")
#: Positions of the flags in a trial row (after the run id).
_BOOL_POSITIONS = tuple(1 + i for i, f in enumerate(TRIAL_FIELDS) if f.type == "bool")


def replace_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (dict keys included) replaced
    by U+FFFD, and two surrogates that form a pair joined into the character they
    encode; anything else is returned as it is (the same object when nothing changed).

    Where the store meets agent text (`trial_rows`): an agent may say ``"\\ud800"``
    (JSON allows it, so do Python strings), which SQLite's UTF-8 text cannot hold and
    which once ended the whole run with a ``PydanticSerializationError``."""
    if isinstance(value, str):
        if value.isascii() or _SURROGATE.search(value) is None:
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(replace_surrogates(v) for v in value)
    return value


def _json_text(value: Any) -> str:
    """`dumps`, with lone surrogates replaced (`replace_surrogates`)."""
    text = dumps(value)
    if _ESCAPED_SURROGATE.search(text) is not None:  # rare: non-BMP text, or a lone one
        text = dumps(replace_surrogates(value))
    return text


def trial_rows(run_id: str, t: Trial) -> TrialRows:
    """``t`` as the parameters of its SQL rows (all the Python work of writing it).

    Lone surrogates in the trial's text (its transcript, answer, error, final state,
    metadata) are stored as U+FFFD (`replace_surrogates`): the trial is kept, and the
    run goes on, whatever an agent wrote."""
    if t.trial is None:
        # The store keeps each (task, variant, trial) once; without its index the row
        # would break that rule as a bare SQLite constraint error.
        raise InputError(
            f"task {t.task_id!r}: the trial has no index; give each trial of a task its "
            "own (trial=0, 1, ...), as a run numbers them",
            field="trial",
        )
    row: list[Any] = [run_id, *_VALUES(t), utc_now()]
    for i in _JSON_POSITIONS:
        if row[i] is not None:
            row[i] = _json_text(row[i])
    for i in _TEXT_POSITIONS:
        text = row[i]
        if type(text) is str and not text.isascii():
            row[i] = replace_surrogates(text)
    for i in _BOOL_POSITIONS:  # as 1 and 0, which sqlite3 binds without an adapter look-up
        if type(row[i]) is bool:
            row[i] = int(row[i])
    # A tuple: the garbage collector stops tracking tuples of plain values, and the
    # harness holds thousands of these in the writer's queue.
    # ``type`` and ``t`` have columns of their own; defaults are filled in again on reading.
    events: list[tuple[Any, ...]]
    try:  # `event_row`'s, inline: an import writes a dozen events per trial
        events = [
            (
                i,
                e.type,
                e.t,
                e.__pydantic_serializer__.to_json(
                    e, exclude_defaults=True, exclude=_EVENT_COLUMNS
                ).decode(),
            )
            for i, e in enumerate(t.events)
        ]
    except PydanticSerializationError:  # a lone surrogate: `event_row` says what to do
        events = [event_row(i, e) for i, e in enumerate(t.events)]
    return tuple(row), events, grade_rows(t.grades), record_values(t)


def event_row(seq: int, e: Event) -> tuple[int, str, float | None, str]:
    """An event's ``events`` row (without the trial's key): ``(seq, type, t, data)``;
    lone surrogates in its text are stored as U+FFFD (`replace_surrogates`)."""
    try:
        # `model_dump_json` without its wrapper's call (its defaults are the
        # serializer's), a fifth of the cost of an event's row.
        data = e.__pydantic_serializer__.to_json(
            e, exclude_defaults=True, exclude=_EVENT_COLUMNS
        ).decode()
    except PydanticSerializationError as exc:
        if "surrogates not allowed" not in str(exc):
            raise
        # A lone surrogate has no UTF-8 form: stored as U+FFFD.
        clean = type(e).model_validate(replace_surrogates(e.model_dump()))
        data = clean.model_dump_json(exclude_defaults=True, exclude=_EVENT_COLUMNS)
    return (seq, e.type, e.t, data)


_EVENT_COLUMNS = {"type", "t"}


def describe_row(row: Sequence[Any]) -> str:
    """A trial row's cell, for messages."""
    return (
        f"trial {row[_POSITION['trial']]} of task {row[_POSITION['task_id']]!r} "
        f"(variant {row[_POSITION['variant']]!r})"
    )


def grade_rows(grades: Sequence[Grade]) -> list[tuple[Any, ...]]:
    return [
        (
            g.grader,
            g.score,
            None if g.passed is None else int(g.passed),
            g.status,
            None if g.evidence is None else _json_text(g.evidence),
            g.judge_model,
        )
        for g in grades
    ]


def trial_of(row: Sequence[Any], document: Any) -> Trial:
    """A trial from its ``trials`` columns (`TRIAL_COLUMNS`, in order), without its
    events and grades. ``document(value)`` gives a document field's JSON text from
    what its column holds."""
    data: dict[str, Any] = {}
    for f, value in zip(TRIAL_FIELDS, row, strict=True):
        if value is None:
            continue
        if f.type == "bool":
            value = stored_flag(f.name, value)
        elif f.type == "json":
            value = loads(value)
        elif f.type == "document":
            value = loads(document(value))
        data[f.name] = value
    return Trial.model_validate(data)


class DamagedValue(ValueError):
    """A stored value that reads back as no value of its field (a hand edit), naming
    the field for the damaged-row error (`unreadable`)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


def stored_flag(name: str, value: Any) -> bool:
    """A stored boolean (a trial's ``success``), kept as 1 or 0. Anything else (a hand
    edit: ``UPDATE trials SET success = 7``) is a damaged row: read as a number it was
    true here and false where SQL counts ``success = 1`` (the viewer's lists)."""
    if value in (0, 1):
        return bool(value)
    raise DamagedValue(name, bad_flag(name, value))


def bad_flag(name: str, value: Any) -> str:
    """Why a stored boolean ``value`` of field ``name`` is damaged (`stored_flag`)."""
    meaning = " (passed, failed, not graded)" if name == "success" else ""
    return f"a {name} is 1, 0 or null{meaning}, got {value!r}"


def damaged_success(pk: int, value: Any) -> str:
    """How a run's list names its first trial (key ``pk``) whose stored success is
    neither 1, 0 nor null (`agentgauge runs`, as the viewer's list of runs)."""
    return f"success: trial {pk}: {bad_flag('success', value)}"


#: What reading a damaged row back raises: JSON that does not parse (`ValueError`),
#: a value the model refuses (pydantic's `ValidationError` is a `ValueError`), a shape
#: the reader cannot index (`TypeError`), JSON nested past Python's recursion limit.
UNREADABLE = (ValueError, TypeError, RecursionError)


def unreadable(exc: BaseException, field: str | None = None) -> tuple[str | None, str]:
    """Why a stored row could not be read back, as ``(field, reason)``: the field
    ``field`` or the one the model refused, and a few words a user can act on."""
    from pydantic import ValidationError

    from agentgauge.errors import first_error

    if isinstance(exc, DamagedValue):
        return ".".join(p for p in (field, exc.field) if p), str(exc)
    if isinstance(exc, ValidationError):
        where, why = first_error(exc, metadata_hint=False)
        return ".".join(p for p in (field, where) if p) or None, why
    if isinstance(exc, json.JSONDecodeError):
        return field, f"not valid JSON ({exc.msg} at character {exc.pos})"
    if isinstance(exc, RecursionError):
        return field, "nested too deeply to read"
    return field, str(exc) or type(exc).__name__


def loads(text: str) -> Any:
    """Stored JSON read back: orjson, several times faster on the final states and
    metadata a trial is read with; Python's reader, which reads `dumps`'s text back
    exactly, for what orjson refuses (``NaN``, a lone surrogate) or would not read
    exactly (an integer past 64 bits: `agentgauge.textio.has_long_integer`)."""
    if not has_long_integer(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def event_of(type_: str, t: float | None, data: str) -> Event:
    """An event from its row: ``data`` with the ``type`` and ``t`` columns laid over it
    (schema-1 stores repeat both in ``data``, which reads the same)."""
    return event_from(type_, t, loads(data))


def event_from(type_: str, t: float | None, fields: dict[str, Any]) -> Event:
    """`event_of` with ``data`` already read (a file's, by `agentgauge.textio.loads_json`,
    whose rules a stored text needs not pass). ``fields`` is changed in place."""
    fields["type"] = type_
    if t is not None:
        fields["t"] = t
    event: Event = _event_adapter().validate_python(fields)
    return event


_EVENT_ADAPTER: Any = None


def _event_adapter() -> Any:
    global _EVENT_ADAPTER
    if _EVENT_ADAPTER is None:
        from pydantic import TypeAdapter

        _EVENT_ADAPTER = TypeAdapter(Event)
    return _EVENT_ADAPTER
