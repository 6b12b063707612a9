"""Read Parquet exports (`agentgauge.parquet`) as a SOURCE.

`read_table` reads the columns of ``trials.parquet`` straight into a
`TrialTable` with pyarrow: a label column is dictionary-encoded by Arrow and
becomes an object array of its distinct values indexed by the codes, whose
coding the table keeps (`TrialTable.seed_codes`), so no Python object is built
per trial. `read_trials` builds `Trial` models from the three files, for what a
person reads (``show``, reports); it is called only on demand, and `pick_trials`
builds those of a few rows alone, reading the row groups that hold them.

Every file is checked before its values are used: a file that is not Parquet,
a missing required column, a column of the wrong type, a null where a value is
required, a value the trial record forbids (a score above 1, a negative cost,
an unknown status) or a duplicate trial is one `InputError` naming the file,
the column and the row.
"""

from __future__ import annotations

import glob
import json
import math
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

import annotated_types
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import TypeAdapter, ValidationError

from agentgauge.errors import InputError, first_error
from agentgauge.evidence import evidence_problem
from agentgauge.facts import ABSENT, FACTS, RULES, UNKNOWN, Facts
from agentgauge.parquet import EVENTS_FILE, GRADES_FILE, HEADER_FILE, LAYOUT, TRIALS_FILE
from agentgauge.schema import (
    CONTROL_DECISIONS,
    INT64_MAX,
    MAX_TRIAL_INDEX,
    TRIAL_FIELDS,
    Grade,
    Run,
    Task,
    Trial,
    TrialField,
    infra_error,
)
from agentgauge.sources import (
    SPELLED_ONCE,
    Spellings,
    family_reason,
    spellings_reason,
    too_large_trial,
    trial_cell_words,
    two_families,
)
from agentgauge.store.database import GradeVersion
from agentgauge.store.rows import event_from
from agentgauge.table import COLUMNS, TrialTable, by_first_appearance
from agentgauge.textio import loads_json, read_text

__all__ = [
    "ParquetHeader",
    "parquet_parts",
    "pick_trials",
    "read_facts",
    "read_header",
    "read_table",
    "read_trials",
    "to_array",
]

#: Columns a trials file must have; the others default as in the trial record.
REQUIRED = ("task_id", "trial", "success")
_FIELDS = {f.name: f for f in TRIAL_FIELDS}
_GLOB = frozenset("*?[")
#: Fields read only to decide which trials ended in an infrastructure error.
_INFRA_INPUTS = ("status", "error_kind")


def parquet_parts(spec: str) -> list[Path] | None:
    """The trials files a SOURCE names: a directory holding ``trials.parquet``, a
    ``.parquet`` file, or a glob of either; ``None`` when it names no Parquet."""
    path = Path(spec)
    if path.is_dir():
        return [_trials_file(path)]
    if path.is_file():
        return [path] if path.suffix == ".parquet" else None
    if path.exists() or not _GLOB & set(spec):
        return None
    if any(ch == ":" and i > 0 and Path(spec[:i]).is_file() for i, ch in enumerate(spec)):
        return None  # DB:RUN of a store whose path holds "[" or "*": no pattern
    matches = sorted(glob.glob(spec))
    if not matches:
        raise InputError("the pattern matches no file or directory", file=spec, field="SOURCE")
    parts = []
    for match in map(Path, matches):
        if not match.is_dir() and match.suffix != ".parquet":
            raise InputError(
                "a glob SOURCE must match Parquet export directories or .parquet files only",
                file=match,
                field="SOURCE",
            )
        parts.append(_trials_file(match) if match.is_dir() else match)
    return parts


def _trials_file(folder: Path) -> Path:
    found = folder / TRIALS_FILE
    if not found.is_file():
        raise InputError(
            f"a directory SOURCE is a Parquet export and holds {TRIALS_FILE} "
            "(agentgauge export DB:RUN --parquet DIR writes one)",
            file=folder,
            field="SOURCE",
        )
    _refuse_foreign_parquet(folder, found)
    return found


def _refuse_foreign_parquet(folder: Path, found: Path) -> None:
    """Refuse an export directory holding a ``.parquet`` file of its own beyond the three
    an export writes: agentgauge reads only those, so trials put there to be read along
    (another part of the run, a file another tool wrote) would be left out without a
    word. Other files (notes, ``.DS_Store``) are nothing a reader could take for data."""
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError:
        return  # reading the export's own files says why
    ours = (TRIALS_FILE, EVENTS_FILE, GRADES_FILE)
    foreign = [n for n in names if n.lower().endswith(".parquet") and n not in ours]
    if foreign:
        others = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise InputError(
            f"a .parquet file in the export {folder} that agentgauge export did not "
            f"write{others}: a directory SOURCE is read as its {TRIALS_FILE}, "
            f"{EVENTS_FILE} and {GRADES_FILE} alone, so its rows would be left out "
            f"without a word; move it out of the folder, or name {found} to read the "
            "export without it",
            file=folder / foreign[0],
            field="SOURCE",
        )


# --------------------------------------------------------------------------- header


@dataclass(frozen=True)
class ParquetHeader:
    """What ``_agentgauge.json`` beside a trials file records."""

    run: Run | None = None
    tasks: list[Task] = field(default_factory=list)
    grading: GradeVersion | None = None


def read_header(trials_file: Path) -> ParquetHeader:
    """The header beside ``trials_file``; empty when there is none (a file written by
    another tool)."""
    path = trials_file.parent / HEADER_FILE
    if not path.is_file():
        return ParquetHeader()
    # The JSONL reader's rules: strict UTF-8 and JSON, at most `MAX_DEPTH` levels deep.
    data = loads_json(read_text(path), file=path, line=None)
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON object naming schema {LAYOUT!r}, got {json.dumps(data):.40}",
            file=path,
            field="schema",
        )
    if data.get("schema") != LAYOUT:
        found = data.get("schema")
        raise InputError(
            f"expected schema {LAYOUT!r}, found {found!r} (written by another agentgauge?)",
            file=path,
            field="schema",
        )
    # Each error named by its place in the header (run.suite, tasks[3].id), not by the
    # field alone: "id" could be any task's.
    found_tasks = data.get("tasks") or []
    if not isinstance(found_tasks, list):
        raise InputError(
            f"expected a list of tasks, got {json.dumps(found_tasks):.40}", file=path, field="tasks"
        )
    place = "run"
    try:
        run = Run.model_validate(data.get("run")) if data.get("run") is not None else None
        tasks = []
        for i, task in enumerate(found_tasks):
            place = f"tasks[{i}]"
            tasks.append(Task.model_validate(task))
    except ValidationError as exc:
        name, reason = first_error(exc)
        raise InputError(
            reason, file=path, field=place + ("" if name is None else f".{name}")
        ) from None
    _check_count(trials_file, _counts_of(data).get("trials"), "trials")
    found = data.get("grade_version")
    if found is not None and (why := _grade_version_problem(found)) is not None:
        raise InputError(why, file=path, field="grade_version")
    grading = None if found is None else GradeVersion(**found)
    return ParquetHeader(run=run, tasks=tasks, grading=grading)


def _counts_of(header: dict[str, Any]) -> dict[str, int]:
    """The rows the header counts in each file (``trials``, ``events``, ``grades``)."""
    counts = header.get("counts")
    if not isinstance(counts, dict):
        return {}
    return {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}


def _header_counts(trials_file: Path) -> dict[str, int]:
    path = trials_file.parent / HEADER_FILE
    if not path.is_file():
        return {}
    data = loads_json(read_text(path), file=path, line=None)
    return _counts_of(data) if isinstance(data, dict) else {}


def _check_count(path: Path, expected: int | None, noun: str) -> None:
    """An export's file holds the rows its header counts: one missing, cut short or
    swapped for another run's was read as it came (a missing events.parquet as trials
    without transcripts, "no trial has a transcript")."""
    if expected is None:
        return
    if not path.is_file():
        if expected == 0:
            return
        raise InputError(
            f"missing, where {HEADER_FILE} counts {expected} {noun} in this export; "
            "copy the whole export, or export the run again",
            file=path,
        )
    rows = _open(path).metadata.num_rows
    if rows != expected:
        raise InputError(
            f"holds {rows} rows where {HEADER_FILE} counts {expected} {noun}: not the file "
            "exported with it (cut short, or replaced); export the run again",
            file=path,
        )


#: The fields of a grade version record (`GradeVersion`) and the JSON types each takes.
_GRADE_VERSION: dict[str, tuple[type, ...]] = {
    "version": (int,),
    "created_at": (str,),
    "graders": (list,),
    "note": (str, type(None)),
    "active": (bool,),
    "outcomes_kept": (bool,),
}


def _grade_version_problem(found: Any) -> str | None:
    """Why the header's ``grade_version`` is no grade version record (`GradeVersion`),
    or ``None``: it names the version a ``#grade=N`` is checked against."""
    if not isinstance(found, dict) or set(found) != set(_GRADE_VERSION):
        return f"not a grade version record (an object with {', '.join(_GRADE_VERSION)})"
    for key, types in _GRADE_VERSION.items():
        value = found[key]
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            return f"{key}: expected {' or '.join(t.__name__ for t in types)}, got {value!r:.40}"
    if found["version"] < 1:
        return f"version: must be at least 1, got {found['version']}"
    if not all(isinstance(g, str) for g in found["graders"]):
        return "graders: expected a list of grader names"
    return None


# --------------------------------------------------------------------------- columns


def _open(path: Path, labels: Sequence[str] = ()) -> pq.ParquetFile:
    """The file, its columns ``labels`` to be read dictionary-encoded (as integers into
    their distinct values: no string per row is built)."""
    try:
        return pq.ParquetFile(path, read_dictionary=list(labels) or None)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file ({exc})", file=path) from None


def _read(path: Path, columns: Sequence[str], labels: Sequence[str] = ()) -> pa.Table:
    try:
        table = _open(path, [c for c in labels if c in columns]).read(columns=list(columns))
        # A damaged page can decode into values that point nowhere (a dictionary index
        # out of range, bytes that are not UTF-8): found here, not in a later kernel.
        table.validate(full=True)
        return table
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file ({exc})", file=path) from None


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t))


#: What each kind of trial field accepts, and the type it is read as.
_ACCEPTS: dict[str, tuple[str, Callable[[pa.DataType], bool], pa.DataType]] = {
    "text": ("a string", _is_text, pa.string()),
    "json": ("JSON text (a string)", _is_text, pa.string()),
    "document": ("JSON text (a string)", _is_text, pa.string()),
    "int": ("an integer", lambda t: pa.types.is_integer(t) or pa.types.is_null(t), pa.int64()),
    "real": (
        "a number",
        lambda t: pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t),
        pa.float64(),
    ),
    "bool": ("a boolean", lambda t: pa.types.is_boolean(t) or pa.types.is_null(t), pa.bool_()),
}


def _schema_of(path: Path) -> pa.Schema:
    schema = _open(path).schema_arrow
    _refuse_repeated_names(path, schema)
    for name in REQUIRED:
        if name not in schema.names:
            raise InputError(
                f"missing required column (a trials file has {', '.join(REQUIRED)})",
                file=path,
                field=name,
            )
    for name in schema.names:
        f = _FIELDS.get(name)
        kind = "int" if name == "trial_key" else None if f is None else f.type
        if kind is None:
            continue
        what, accepts, _ = _ACCEPTS[kind]
        if not accepts(schema.field(name).type):
            raise InputError(
                f"expected {what}, found Arrow type {schema.field(name).type}",
                file=path,
                field=name,
            )
    return schema


def _refuse_repeated_names(path: Path, schema: pa.Schema) -> None:
    seen: set[str] = set()
    for name in schema.names:
        if name in seen:
            raise InputError("a column of this name appears twice", file=path, field=name)
        seen.add(name)


def _first(mask: pa.ChunkedArray | pa.Array) -> int:
    """The position of the first true value of a boolean array (nulls are false)."""
    return int(pc.index(pc.fill_null(mask, False), True).as_py())


def _row_number(row: int, at: npt.NDArray[np.intp] | None) -> int:
    """The 1-based row in its file of ``row`` of a column read: ``at`` holds the file's
    rows of the rows read (`_read_rows`), ``None`` when every row was."""
    return (row if at is None else int(at[row])) + 1


def _normal(
    path: Path, name: str, column: pa.ChunkedArray, at: npt.NDArray[np.intp] | None = None
) -> pa.ChunkedArray:
    """``column`` as its field's canonical type, with its values checked (``at``: the
    file's rows of its rows, which errors name, when not every row was read)."""
    f = _FIELDS[name]
    target = _ACCEPTS[f.type][2]
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    try:
        column = column.cast(target)
    except pa.ArrowInvalid as exc:
        raise _uncastable(path, name, column, target, exc, at) from None
    if (f.required or name in REQUIRED) and column.null_count:
        row = _row_number(_first(pc.is_null(column)), at)
        raise InputError(f"row {row}: a value is required, found null", file=path, field=name)
    _check_values(path, f, column, at)
    return column


def _uncastable(
    path: Path,
    name: str,
    column: pa.ChunkedArray,
    target: pa.DataType,
    exc: Exception,
    at: npt.NDArray[np.intp] | None = None,
) -> InputError:
    """The error for a column with a value ``target`` cannot hold (a uint64 past int64's
    range, an integer no float64 holds exactly), naming the first such row: found by
    halving, so an error costs a few casts, not one per row."""
    lo, hi = 0, len(column)  # the first such row is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            column.slice(lo, mid - lo).cast(target)
            lo = mid
        except pa.ArrowInvalid:
            hi = mid
    row = _row_number(lo, at)
    return InputError(f"row {row}: cannot be read as {target} ({exc})", file=path, field=name)


def _check_values(
    path: Path, f: TrialField, column: pa.ChunkedArray, at: npt.NDArray[np.intp] | None = None
) -> None:
    """The trial record's rules on a column: bounds of numbers, no NaN or infinity,
    labels among their allowed values."""
    if f.type in ("int", "real"):
        bad, reason = None, ""
        if f.type == "real":
            bad = pc.invert(pc.is_finite(column))
            reason = "NaN or infinity is not a number the trial record accepts"
        if bad is None or not pc.any(pc.fill_null(bad, False)).as_py():
            bad, reason = _out_of_bounds(f.name, column)
        if f.name == "trial" and not pc.any(pc.fill_null(bad, False)).as_py():
            # As a JSONL file's (`assign_trial_indices`): the next index must fit too.
            bad = pc.greater(column, MAX_TRIAL_INDEX)
            if pc.any(pc.fill_null(bad, False)).as_py():
                row = _first(bad)
                raise InputError(
                    f"row {_row_number(row, at)}: {too_large_trial(column[row].as_py())}",
                    file=path,
                    field=f.name,
                )
        if bad is not None and pc.any(pc.fill_null(bad, False)).as_py():
            row = _first(bad)
            raise InputError(
                f"row {_row_number(row, at)}: {column[row].as_py()!r}: {reason}",
                file=path,
                field=f.name,
            )
    elif f.type == "text" and _is_choice(f.name):
        adapter = _adapter(f.name)
        for value in pc.unique(column).to_pylist():
            if value is None and not f.required:
                continue
            try:
                adapter.validate_python(value)
            except ValidationError as exc:
                row = _row_number(_first(pc.equal(column, pa.scalar(value, pa.string()))), at)
                raise InputError(
                    f"row {row}: {first_error(exc)[1]}", file=path, field=f.name
                ) from None
    elif f.type == "text":
        for rule in Trial.model_fields[f.name].metadata:
            if isinstance(rule, annotated_types.MinLen):
                short = pc.less(pc.utf8_length(column), rule.min_length)
                if pc.any(pc.fill_null(short, False)).as_py():
                    row = _first(short)
                    raise InputError(
                        f"row {_row_number(row, at)}: {column[row].as_py()!r}: must have at least "
                        f"{rule.min_length} character",
                        file=path,
                        field=f.name,
                    )


def _is_choice(name: str) -> bool:
    """Whether a text field takes one of a fixed set of values (a ``Literal``): those
    are checked value by value; free labels (task ids, agents) only for their length."""
    return "Literal" in str(Trial.model_fields[name].annotation)


def _out_of_bounds(name: str, column: pa.ChunkedArray) -> tuple[Any, str]:
    bad: Any = None
    words = []
    for rule in Trial.model_fields[name].metadata:
        for attr, test, word in (
            ("ge", pc.less, "at least"),
            ("gt", pc.less_equal, "greater than"),
            ("le", pc.greater, "at most"),
            ("lt", pc.greater_equal, "less than"),
        ):
            if isinstance(rule, getattr(annotated_types, attr.capitalize())):
                limit = getattr(rule, attr)
                hit = test(column, limit)
                bad = hit if bad is None else pc.or_(bad, hit)
                words.append(f"{word} {limit}")
    return bad, f"must be {' and '.join(words)}"


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    info = Trial.model_fields[name]
    annotation: Any = info.annotation
    if info.metadata:
        from typing import Annotated

        annotation = Annotated[(annotation, *info.metadata)]
    return TypeAdapter(annotation)


# --------------------------------------------------------------------------- table


def read_table(parts: Sequence[Path]) -> TrialTable:
    """The trials of ``parts`` (trials files, read in order) as one `TrialTable`."""
    wanted = [name for name in COLUMNS if name != "infra_error"] + ["status", "error_kind"]
    found: dict[str, list[pa.ChunkedArray]] = {name: [] for name in wanted}
    labels: dict[str, _Labels] = {}
    spellings: dict[str, Spellings[tuple[Path, npt.NDArray[np.intp], int]]] = {
        name: Spellings() for name in SPELLED_ONCE
    }
    sizes = []
    for path in parts:
        present = set(_schema_of(path).names)
        names = [n for n in wanted if n in present]
        table = _read(path, names, [n for n in names if _FIELDS[n].type == "text"])
        sizes.append(table.num_rows)
        for name in wanted:
            if _FIELDS[name].type == "text":  # a label: encoded, checked per distinct value
                column = table.column(name) if name in names else _default(name, table.num_rows)
                met, coded = labels.setdefault(name, _Labels()).add(path, _FIELDS[name], column)
                if name in spellings:
                    _check_spellings(spellings[name], name, path, met, coded)
            elif name in names:
                found[name].append(_normal(path, name, table.column(name)))
            elif name == "score":  # as the trial record: 1.0 or 0.0 from success
                found[name].append(found["success"][-1].cast(pa.float64()))
            else:
                found[name].append(_default(name, table.num_rows))
    n = sum(sizes)
    columns: dict[str, Any] = {}
    codes: dict[str, tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]]] = {}
    for name in wanted:
        if name in labels:
            uniques, index = codes[name] = labels[name].codes()
            if name not in _INFRA_INPUTS:  # those two are read through their codes only
                columns[name] = uniques[index]
            continue
        arrays = pa.chunked_array([c for part in found[name] for c in part.chunks], _target(name))
        columns[name] = to_array(arrays, COLUMNS[name])[0]
    # The infra-error rule once per distinct (status, error kind) pair, not per trial.
    (status, status_codes), (blame, blame_codes) = codes.pop("status"), codes.pop("error_kind")
    pair = status_codes * len(blame) + blame_codes
    rule = np.array(
        [
            infra_error(status[p // len(blame)], blame[p % len(blame)])
            for p in range(len(status) * len(blame))
        ],
        dtype=bool,
    )
    table = TrialTable.from_columns(n, infra_error=rule[pair] if n else rule[:0], **columns)
    for name, (uniques, index) in codes.items():
        table.seed_codes(name, uniques, index, check=False)  # the columns were built from them
    _refuse_duplicates(parts, sizes, table)
    _refuse_two_families(parts, sizes, table)
    return table


def _row_of(parts: Sequence[Path], sizes: Sequence[int], row: int) -> tuple[Path, int]:
    """The file and the 1-based row in it of ``row`` of the files read one after another."""
    ends = np.cumsum(sizes)
    p = int(np.searchsorted(ends, row, "right"))
    return parts[p], row - int(ends[p] - sizes[p]) + 1


def _refuse_two_families(parts: Sequence[Path], sizes: Sequence[int], table: TrialTable) -> None:
    """A task whose rows name two families (or a family and none), refused as a JSONL
    file's line is (`agentgauge.sources.two_families`): every interval resamples a task
    within its one family."""
    clash = two_families(table)
    if clash is None:
        return
    (first_path, first_row), (path, row) = (_row_of(parts, sizes, r) for r in clash)
    first_at = f"row {first_row}" + ("" if first_path == path else f" of {first_path}")
    a, b = clash
    raise InputError(
        f"row {row}: "
        + family_reason(str(table.task_id[a]), table.family[a], first_at, table.family[b]),
        file=path,
        field="family",
    )


def _check_spellings(
    spellings: Spellings[tuple[Path, npt.NDArray[np.intp], int]],
    name: str,
    path: Path,
    met: list[tuple[Any, int]],
    codes: npt.NDArray[np.intp],
) -> None:
    """One spelling per task id (agent, model, variant) across the files read
    (`Spellings`, as a JSONL file's are checked): each distinct value once, a row looked
    up only for the error."""
    for value, code in met:
        if value is None:
            continue
        other = spellings.other_spelling(value, (path, codes, code))
        if other is None:
            continue
        first, (first_path, first_codes, first_code) = other
        first_row = int(np.flatnonzero(first_codes == first_code)[0]) + 1
        row = int(np.flatnonzero(codes == code)[0]) + 1
        raise InputError(
            f"row {row}: "
            + spellings_reason(first, f" (row {first_row} of {first_path})", value, name),
            file=path,
            field=name,
        )


class _Labels:
    """A label column read file by file: each file's values encoded as integers by
    Arrow's hash (or as the file stores them) straight into one numbering of the whole
    column, each file's distinct values checked once."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.parts: list[npt.NDArray[np.intp]] = []

    def add(
        self, path: Path, f: TrialField | None, column: pa.ChunkedArray
    ) -> tuple[list[tuple[Any, int]], npt.NDArray[np.intp]]:
        """A file's part of the column, checked against the rules of ``f`` if given; its
        distinct values with their codes, in order of first appearance, and its codes."""
        met, codes = _encode_into(column, self.index)
        if f is not None:
            _check_labels(path, f, met, codes)
        self.parts.append(codes)
        return met, codes

    def codes(self) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]]:
        """Distinct values in order of first appearance, and each row's index into them.
        Each file's values are numbered as first met in it, and the files are read in
        order, so the numbering is by first appearance in the whole column."""
        values = np.empty(len(self.index), dtype=object)
        values[:] = list(self.index)
        return values, np.concatenate([np.empty(0, dtype=np.intp), *self.parts])


def _check_labels(
    path: Path, f: TrialField, met: list[tuple[Any, int]], codes: npt.NDArray[np.intp]
) -> None:
    """The trial record's rules on a label column, checked on each distinct value (with
    its code) in order of first appearance; an error names the first row holding it."""

    def row_of(i: int) -> int:
        return int(np.flatnonzero(codes == met[i][1])[0]) + 1

    required = f.required or f.name in REQUIRED
    choice = _is_choice(f.name)
    min_length = next(
        (
            rule.min_length
            for rule in Trial.model_fields[f.name].metadata
            if isinstance(rule, annotated_types.MinLen)
        ),
        None,
    )
    texts = [value for value, _ in met]
    if required and None in texts:
        i = texts.index(None)
        raise InputError(
            f"row {row_of(i)}: a value is required, found null", file=path, field=f.name
        )
    for i, value in enumerate(texts):
        if value is None:
            continue
        if choice:
            try:
                _adapter(f.name).validate_python(value)
            except ValidationError as exc:
                raise InputError(
                    f"row {row_of(i)}: {first_error(exc)[1]}", file=path, field=f.name
                ) from None
        elif min_length is not None and len(value) < min_length:
            raise InputError(
                f"row {row_of(i)}: {value!r}: must have at least {min_length} character",
                file=path,
                field=f.name,
            )


ArrayKind = Literal["label", "float", "int", "bool", "state"]

#: What a fact's column accepts and is read as.
_FACT_ACCEPTS: dict[ArrayKind, str] = {
    "label": "text",
    "float": "real",
    "int": "int",
    "bool": "bool",
    "state": "int",
}


#: The numeric facts' ranges, as the trial record and its grades' evidence allow them
#: (`agentgauge.evidence`): (least, most or ``None``, whether a whole number). A count
#: of -3 turns, a verdict state 9 or a precision of 7 is no value a trial gives.
_FACT_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "assistant_turns": (0, None, True),
    "tool_results": (0, INT64_MAX, True),
    "tool_errors": (0, INT64_MAX, True),
    **{name: (ABSENT, UNKNOWN, True) for name, kind in FACTS.items() if kind == "state"},
    "traj_precision": (0, 1, False),
    "traj_recall": (0, 1, False),
    "ms_score": (0, 1, False),
    "mine_max_severity": (0, 1, False),
    "mine_hit_severity": (0, 1, False),
    "ctl_irreversible": (0, None, True),
    "ctl_unconfirmed": (0, None, True),
}

#: Counts that are part of another count of the same trial: (part, whole, why).
_FACT_PARTS = (
    ("tool_errors", "tool_results", "a tool error is one of the tool results"),
    ("ctl_unconfirmed", "ctl_irreversible", "an unconfirmed call is one of the irreversible ones"),
)


def _refuse_row(path: Path, name: str, bad: Any, column: Any, reason: str) -> None:
    """One error naming the first row of ``bad`` (a boolean array; nulls false), if any."""
    bad = pc.fill_null(bad, False)
    if pc.any(bad).as_py():
        row = _first(bad)
        raise InputError(f"row {row + 1}: {column[row].as_py()!r}: {reason}", file=path, field=name)


def _check_fact_numbers(path: Path, name: str, column: pa.ChunkedArray) -> None:
    """A numeric fact column's values: finite (a missing value is null, never NaN,
    which would be read as missing and change what is counted) and in range."""
    if pa.types.is_floating(column.type):
        _refuse_row(
            path,
            name,
            pc.invert(pc.is_finite(column)),
            column,
            "NaN or infinity is no fact a trial has (a missing one is null)",
        )
    least, most, whole = _FACT_RANGES[name]
    words = f"at least {least:g}" + ("" if most is None else f" and at most {most:g}")
    bad = pc.less(column, least)
    if most is not None:
        bad = pc.or_(bad, pc.greater(column, most))
    _refuse_row(path, name, bad, column, f"must be {words}")
    if whole and pa.types.is_floating(column.type):
        _refuse_row(
            path, name, pc.not_equal(pc.floor(column), column), column, "must be a whole number"
        )


def _check_fact_pairs(
    path: Path, numbers: dict[str, pa.ChunkedArray], errors_by_type: npt.NDArray[np.int64] | None
) -> None:
    """The facts that count part of another: at most that count, and the tool errors by
    type adding up to the tool errors."""
    for part, whole, why in _FACT_PARTS:
        bad = pc.greater(numbers[part], numbers[whole])
        reason = f"more than {whole} ({why})"
        _refuse_row(path, part, bad, numbers[part], reason)
    if errors_by_type is not None:
        errors = _numpy(numbers["tool_errors"], np.int64)
        off = np.flatnonzero(errors_by_type != errors)
        if off.size:
            row = int(off[0])
            raise InputError(
                f"row {row + 1}: errors by type add up to {errors_by_type[row]}, but "
                f"tool_errors is {errors[row]}",
                file=path,
                field="error_types",
            )


def _strings(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return None
    return "expected a JSON list of tool names (strings)"


def _decisions(value: Any) -> str | None:
    if isinstance(value, list) and all(v in CONTROL_DECISIONS for v in value):
        return None
    return f"expected a JSON list of control decisions ({', '.join(CONTROL_DECISIONS)})"


def _counts(value: Any) -> str | None:
    if isinstance(value, dict) and all(
        type(n) is int and 1 <= n <= INT64_MAX for n in value.values()
    ):
        return None
    return "expected a JSON object of error types, each with a count of at least 1"


def _checkpoints(value: Any) -> str | None:
    if isinstance(value, list) and all(
        isinstance(v, list)
        and len(v) == 2
        and type(v[0]) is int
        and 1 <= v[0] <= INT64_MAX
        and v[1] in ("pass", "fail", None)
        for v in value
    ):
        return None
    return 'expected a JSON list of [turn ≥ 1, "pass" | "fail" | null]'


def _tc_class(value: Any) -> str | None:
    if value in ("wrong_call", "wrong_arguments", "partial_resolution"):
        return None
    return "expected wrong_call, wrong_arguments or partial_resolution"


#: The label facts whose values are JSON (read as the JSONL reader reads JSON, then
#: checked for what the metrics read of them), and the labels of a fixed set.
_JSON_FACTS: dict[str, Callable[[Any], str | None]] = {
    "actions": _strings,
    "error_types": _counts,
    "control_decisions": _decisions,
    "ckpt_turns": _checkpoints,
}
_CHOICE_FACTS: dict[str, Callable[[Any], str | None]] = {"tc_class": _tc_class}


def _check_fact_labels(
    path: Path, name: str, met: list[tuple[Any, int]], codes: npt.NDArray[np.intp]
) -> npt.NDArray[np.int64] | None:
    """A label fact's distinct values, each checked once; an error names its first row.
    For ``error_types``, each row's errors by type added up (0 where it has none)."""
    check = _JSON_FACTS.get(name) or _CHOICE_FACTS.get(name)
    if check is None:
        return None

    def row_of(code: int) -> int:  # looked up for an error only: a pass over the rows
        return int(np.flatnonzero(codes == code)[0])

    sums: dict[int, int] = {}
    for value, code in met:
        if value is None:
            sums[code] = 0
            continue
        decoded = value
        if name in _JSON_FACTS:
            try:
                decoded = loads_json(value, file=path, line=None)
            except InputError as exc:
                raise InputError(
                    f"row {row_of(code) + 1}: {exc.reason}", file=path, field=name
                ) from None
        why = check(decoded)
        if why is not None:
            raise InputError(f"row {row_of(code) + 1}: {why}", file=path, field=name)
        if name == "error_types":
            sums[code] = sum(decoded.values())
    if name != "error_types":
        return None
    total = np.zeros(max(sums, default=-1) + 1, dtype=np.int64)
    for code, n in sums.items():
        total[code] = min(n, INT64_MAX)
    return total[codes] if codes.size else np.zeros(0, np.int64)


def _facts_current(trials_file: Path) -> bool:
    """Whether the fact columns of ``trials_file`` were derived by this agentgauge's rules
    (`agentgauge.facts.RULES`, which an export's header records as ``facts_rules``): an
    export made before a rule changed holds what the old rule made of its trials (a bare
    "512" read as an HTTP status), so its facts are derived again from its transcripts
    and grades, as the store derives its records again. A file without a header (one
    another tool wrote) is read as it is."""
    path = trials_file.parent / HEADER_FILE
    if not path.is_file():
        return True
    data = loads_json(read_text(path), file=path, line=None)
    return isinstance(data, dict) and data.get("facts_rules") == RULES


def read_facts(parts: Sequence[Path]) -> Facts | None:
    """The facts of ``parts``' trials (`agentgauge.facts`), row for row with
    `read_table`; ``None`` when a file lacks them (one another tool wrote) or holds
    facts derived by other rules (`_facts_current`): the behaviour metrics then derive
    them from the transcripts, as for a list of trials."""
    found: dict[str, list[pa.ChunkedArray]] = {name: [] for name in FACTS}
    labels: dict[str, _Labels] = {}
    for path in parts:
        schema = _schema_of(path)
        if not set(FACTS) <= set(schema.names) or not _facts_current(path):
            return None
        for name, kind in FACTS.items():
            what, accepts, target = _ACCEPTS[_FACT_ACCEPTS[kind]]
            if not accepts(schema.field(name).type):
                raise InputError(
                    f"expected {what}, found Arrow type {schema.field(name).type}",
                    file=path,
                    field=name,
                )
        table = _read(path, list(FACTS), [n for n, kind in FACTS.items() if kind == "label"])
        numbers: dict[str, pa.ChunkedArray] = {}
        errors_by_type: npt.NDArray[np.int64] | None = None
        for name, kind in FACTS.items():
            column = table.column(name)
            if kind == "label":
                met, codes = labels.setdefault(name, _Labels()).add(path, None, column)
                sums = _check_fact_labels(path, name, met, codes)
                if sums is not None:
                    errors_by_type = sums
                continue
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            target = _ACCEPTS[_FACT_ACCEPTS[kind]][2]
            try:
                column = column.cast(target)
            except pa.ArrowInvalid as exc:
                raise _uncastable(path, name, column, target, exc) from None
            if kind in ("int", "bool", "state") and column.null_count:
                row = _first(pc.is_null(column))
                raise InputError(
                    f"row {row + 1}: a value is required, found null", file=path, field=name
                )
            if kind != "bool":
                _check_fact_numbers(path, name, column)
                numbers[name] = column
            found[name].append(column)
        _check_fact_pairs(path, numbers, errors_by_type)
    columns: dict[str, Any] = {}
    ids: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.object_]]] = {}
    for name, kind in FACTS.items():
        if kind == "label":  # as a store reads them: each row's index into the texts
            uniques, index = labels[name].codes()
            ids[name] = (index.astype(np.int32), uniques)
            continue
        chunks = [c for part in found[name] for c in part.chunks]
        target = _ACCEPTS[_FACT_ACCEPTS[kind]][2]
        columns[name] = to_array(pa.chunked_array(chunks, target), kind)[0]
    return Facts.from_columns(columns, ids)


def to_array(
    column: pa.ChunkedArray, kind: ArrayKind
) -> tuple[np.ndarray[Any, Any], tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]] | None]:
    """A column as the array the metrics read, and a label column's coding: labels as
    objects (``None`` where missing), floats with NaN where missing, verdict states as
    int8. The one conversion of the trial columns and of any derived columns beside them."""
    if kind == "label":
        uniques, index = _encode(column)
        return uniques[index], (uniques, index)
    if kind == "float":
        # An integer past 2**53 rounds to the nearest float, as numpy (and the store's
        # reader) round it; Arrow's safe cast would refuse it. Nulls read as NaN.
        return _numpy(column.cast(pa.float64(), safe=False), np.float64), None
    if kind == "state":
        return _numpy(column.cast(pa.int8()), np.int8), None
    return _numpy(column, column.type.to_pandas_dtype()), None


def _numpy(column: pa.ChunkedArray, dtype: Any) -> np.ndarray[Any, Any]:
    """The column as one numpy array, each chunk copied once into place (a chunked
    array's ``to_numpy`` copies each chunk, then copies them all again to join them)."""
    if column.num_chunks == 1:
        one: np.ndarray[Any, Any] = column.chunk(0).to_numpy(zero_copy_only=False)
        # A view of Arrow's buffer is read-only: the table's arrays are numpy's own.
        return one if one.flags.writeable else one.copy()
    out = np.empty(len(column), dtype=dtype)
    start = 0
    for chunk in column.chunks:
        out[start : start + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
        start += len(chunk)
    return out


def _target(name: str) -> pa.DataType:
    return _ACCEPTS[_FIELDS[name].type][2]


def _default(name: str, n: int) -> pa.ChunkedArray:
    """A column a file does not have: the trial record's default for the field."""
    default = Trial.model_fields[name].default
    if default is None:
        return pa.chunked_array([pa.nulls(n, _target(name))])
    return pa.chunked_array([pa.repeat(pa.scalar(default, _target(name)), n)])


def _encode(column: pa.ChunkedArray) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]]:
    """Distinct values in order of first appearance (``None`` among them) and each
    row's index into them: what `agentgauge.table.factorize` gives."""
    index: dict[Any, int] = {}
    _, codes = _encode_into(column, index)
    uniques = np.empty(len(index), dtype=object)
    uniques[:] = list(index)
    return uniques, codes


def _encode_into(
    column: pa.ChunkedArray, index: dict[Any, int]
) -> tuple[list[tuple[Any, int]], npt.NDArray[np.intp]]:
    """Each row's code in ``index`` (value -> code, new values added as met), from
    Arrow's hash of each chunk (a dictionary-encoded chunk's own codes are used where
    they are by first appearance already); and the values this column holds, with their
    codes, in order of their first appearance in it."""
    met: list[tuple[Any, int]] = []
    seen: set[int] = set()
    parts = []
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            dictionary, indices = _stored_codes(chunk)
        else:
            if pa.types.is_null(chunk.type):
                chunk = chunk.cast(pa.string())
            # Arrow's hash numbers values as it meets them, null included (as "encode"
            # places it), so these codes are by first appearance already.
            encoded = chunk.dictionary_encode(null_encoding="encode")
            dictionary, indices = encoded.dictionary.to_pylist(), encoded.indices.to_numpy()
        # Each chunk's values by first appearance in it, merged in order: by first
        # appearance in the column.
        remap = np.array([index.setdefault(v, len(index)) for v in dictionary], dtype=np.intp)
        for value, code in zip(dictionary, remap.tolist(), strict=True):
            if code not in seen:
                seen.add(code)
                met.append((value, code))
        # "clip": every code is in range, and "raise" would buffer the output.
        parts.append(np.take(remap, indices, mode="clip"))
    codes = parts[0] if len(parts) == 1 else np.concatenate([np.empty(0, np.intp), *parts])
    return met, codes.astype(np.intp, copy=False)


def _stored_codes(chunk: pa.DictionaryArray) -> tuple[list[Any], npt.NDArray[Any]]:
    """A dictionary-encoded chunk's values and codes, the values in order of first
    appearance and each used. A stored dictionary keeps its writer's order and may hold
    values no row uses; Arrow's writer and reader give them in that order already, which
    one pass checks; otherwise the codes are renumbered by each value's first row."""
    dictionary = chunk.dictionary.to_pylist()
    indices = chunk.indices
    if indices.null_count:  # the chunk's nulls: one more value, None
        indices = pc.fill_null(indices, len(dictionary))
        dictionary.append(None)
    codes = indices.to_numpy()
    if _in_first_appearance_order(codes, len(dictionary)):
        return dictionary, codes
    order, renumbered, _ = by_first_appearance(codes, len(dictionary))
    return [dictionary[i] for i in order.tolist()], renumbered


def _in_first_appearance_order(codes: npt.NDArray[Any], size: int) -> bool:
    """Whether codes ``0 .. size-1`` each occur and are numbered by their first row:
    each row's code is at most one above every code before it."""
    if not codes.size:
        return size == 0
    running = np.maximum.accumulate(codes)
    if codes[0] != 0 or running[-1] != size - 1:
        return False
    # From 0 to size − 1 in steps: size − 1 of them, each at least 1, so each exactly 1.
    return int(np.count_nonzero(running[1:] != running[:-1])) == size - 1


def _refuse_duplicates(parts: Sequence[Path], sizes: Sequence[int], table: TrialTable) -> None:
    """Two rows for one (agent, model, variant, task, trial) cell: a merge went wrong,
    a glob matched one export twice, or it matched two runs of one configuration (whose
    trials are each numbered from 0), and pooling them would count an attempt twice. The
    error says which, from the exports' headers."""
    if len(table) < 2:
        return
    keys = [table.codes(name)[1] for name in ("agent", "model", "variant", "task_id")]
    keys.append(table.trial - table.trial.min())
    sizes_of = [int(key.max()) + 1 for key in keys]
    if math.prod(sizes_of) <= 4 * len(table) + 1024:  # the cells counted densely
        cell = np.zeros(len(table), dtype=np.int64)
        for key, size in zip(keys, sizes_of, strict=True):
            cell = cell * size + key
        if not (np.bincount(cell) > 1).any():
            return
    order = np.lexsort(keys[::-1])
    same = np.ones(len(table) - 1, dtype=bool)
    for key in keys:
        sorted_key = key[order]
        same &= sorted_key[1:] == sorted_key[:-1]
    if not same.any():
        return
    i = int(np.flatnonzero(same)[0])
    a, b = sorted(int(x) for x in order[i : i + 2])
    ends = np.cumsum(sizes)
    where = [
        (parts[p], r - (ends[p] - sizes[p]))
        for r in (a, b)
        for p in [int(np.searchsorted(ends, r, "right"))]
    ]
    attempt = (
        f"trial {table.trial[b]} of task {table.task_id[b]!r} for "
        f"{trial_cell_words(table.agent[b], table.model[b], table.variant[b])}"
    )
    rows = f"row {where[0][1] + 1} of {where[0][0]} and row {where[1][1] + 1} of {where[1][0]}"
    runs = [read_header(path).run for path, _ in where] if where[0][0] != where[1][0] else []
    if len(runs) == 2 and runs[0] is not None and runs[1] is not None:
        first, second = (path.parent for path, _ in where)
        one, two = shlex.quote(str(first)), shlex.quote(str(second))
        if runs[0].run_id != runs[1].run_id:
            # Two runs of one configuration: their trials are numbered from 0 each, and
            # pooled they would read as one run's, the same attempt twice. Each is read
            # on its own, or the two compared.
            raise InputError(
                f"runs {runs[0].run_id!r} ({first}) and {runs[1].run_id!r} ({second}) are "
                f"two runs of one configuration, and a glob pools trials by configuration: "
                f"both hold {attempt}. Read each run as its own SOURCE (agentgauge metrics "
                f"{one}), or compare them (agentgauge compare {one} {two})",
                file=where[1][0],
                field="trial",
            )
        raise InputError(
            f"duplicate {attempt}: run {runs[0].run_id!r} is in the glob twice, as {first} "
            f"and {second}; read one of them ({rows})",
            file=where[1][0],
            field="trial",
        )
    raise InputError(f"duplicate {attempt}: {rows}", file=where[1][0], field="trial")


# --------------------------------------------------------------------------- trials


def read_trials(parts: Iterable[Path], *, events: bool = True) -> list[Trial]:
    """`Trial` models from the trials files (with each directory's events and grades
    when ``events``), in the order of `read_table`'s rows."""
    out: list[Trial] = []
    for path in parts:
        out.extend(_part_trials(path, events=events, grades=events))
    return out


def pick_trials(
    parts: Sequence[Path], rows: Sequence[int], *, events: bool, grades: bool
) -> list[Trial]:
    """The trials at ``rows`` of `read_table`'s (the files' rows one after another), in
    the order given, built alone: the same `Trial` models as `read_trials` builds,
    ``events`` with their transcripts, ``grades`` with their grades.

    Of each trials file only the row groups holding the rows asked for are read, and
    of the events and grades beside it only those trials' rows (found by their key,
    read whole). The rows read are checked as `read_trials` checks them, each error
    naming its row in its file; the keys joining events and grades to trials are
    checked for every row, as a whole read checks them. What `read_table` checks of
    every row (types, values, duplicates, families) was checked when the source
    was opened."""
    asked = np.asarray(rows, dtype=np.int64).reshape(-1)
    sizes = np.array([_open(path).metadata.num_rows for path in parts], dtype=np.int64)
    ends = np.cumsum(sizes)
    if asked.size and (asked.min() < 0 or asked.max() >= (ends[-1] if ends.size else 0)):
        raise IndexError(f"rows {asked.min()} to {asked.max()} of {int(ends.sum())} trials")
    of_part = np.searchsorted(ends, asked, side="right")
    built: dict[int, Trial] = {}
    for p in np.unique(of_part).tolist():
        start = int(ends[p] - sizes[p])
        local = np.unique(asked[of_part == p]) - start
        whole = local.size == sizes[p]  # every row: read as `read_trials` reads them
        trials = _part_trials(parts[p], events=events, grades=grades, rows=None if whole else local)
        built.update(zip((local + start).tolist(), trials, strict=True))
    return [built[r] for r in asked.tolist()]


def _part_trials(
    path: Path, *, events: bool, grades: bool, rows: npt.NDArray[np.int64] | None = None
) -> list[Trial]:
    """The trials of one trials file (``rows``: of those rows only, 0-based, ascending)."""
    schema = _schema_of(path)
    names = [f.name for f in TRIAL_FIELDS if f.name in schema.names]
    keyed = "trial_key" in schema.names
    at: npt.NDArray[np.intp] | None = None
    if rows is None:
        table = _read(path, names + (["trial_key"] if keyed else []))
        every = _trial_keys(path, table) if keyed else list(range(table.num_rows))
        keys = every
    else:
        # The keys of every row, checked (one each), and the other columns of the rows
        # asked for.
        every = (
            _trial_keys(path, _read(path, ["trial_key"]))
            if keyed
            else list(range(_open(path).metadata.num_rows))
        )
        table, at = _read_rows(path, names, rows), rows.astype(np.intp)
        keys = [every[r] for r in at.tolist()]
    values = {name: _normal(path, name, table.column(name), at).to_pylist() for name in names}
    trials: list[Trial] = []
    for i in range(table.num_rows):
        row = _row_number(i, at) - 1
        data: dict[str, Any] = {}
        for name in names:
            value = values[name][i]
            if value is None:
                continue
            if _FIELDS[name].type in ("json", "document"):
                value = _json(value, path, row, name)
            data[name] = value
        try:
            trials.append(Trial.model_validate(data))
        except ValidationError as exc:
            column, reason = first_error(exc)
            raise InputError(f"row {row + 1}: {reason}", file=path, field=column) from None
    if events or grades:
        by_key = dict(zip(keys, trials, strict=True))
        counts = _header_counts(path)
        joined = [(EVENTS_FILE, "events", _add_events)] if events else []
        joined += [(GRADES_FILE, "grades", _add_grades)] if grades else []
        for name, noun, _ in joined:
            _check_count(path.parent / name, counts.get(noun), noun)
        for name, _, add in joined:
            add(path.parent / name, by_key, every)
    return trials


def _read_rows(path: Path, columns: Sequence[str], rows: npt.NDArray[np.int64]) -> pa.Table:
    """The columns of a file at ``rows`` (0-based, ascending, distinct), reading only
    the row groups that hold them, checked as `_read` checks what it reads."""
    try:
        file = _open(path)
        meta = file.metadata
        sizes = np.array(
            [meta.row_group(g).num_rows for g in range(meta.num_row_groups)], dtype=np.int64
        )
        ends = np.cumsum(sizes)
        group = np.searchsorted(ends, rows, side="right")
        groups = np.unique(group)
        # Where each group read begins in the table read, and each row's place in it.
        begins = np.cumsum(sizes[groups]) - sizes[groups]
        local = begins[np.searchsorted(groups, group)] + rows - (ends[group] - sizes[group])
        table = file.read_row_groups(groups.tolist(), columns=list(columns))
        table.validate(full=True)
        return table.take(pa.array(local, pa.int64()))
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file ({exc})", file=path) from None


def _trial_keys(path: Path, table: pa.Table) -> list[int]:
    """The trials' keys, which events and grades name their trial by: one each (a key
    missing or held twice joined a trial's transcript and grades to another trial)."""
    column = table.column("trial_key")
    try:
        keys: list[Any] = column.cast(pa.int64()).to_pylist()
    except pa.ArrowInvalid as exc:
        raise _uncastable(path, "trial_key", column, pa.int64(), exc) from None
    first: dict[int, int] = {}
    for row, key in enumerate(keys):
        if key is None:
            raise InputError(
                f"row {row + 1}: a value is required, found null", file=path, field="trial_key"
            )
        if key in first:
            raise InputError(
                f"row {row + 1}: trial_key {key} is row {first[key] + 1}'s too; each trial "
                "has a key of its own, which its events and grades name it by",
                file=path,
                field="trial_key",
            )
        first[key] = row
    return keys


def _json(text: str, path: Path, row: int, name: str) -> Any:
    """The JSON text of column ``name`` at ``row`` (0-based), read as the JSONL reader
    reads a line (`agentgauge.textio.loads_json`: strict, at most `MAX_DEPTH` levels
    deep); what it refuses is one error naming the file, the row and the column."""
    try:
        return loads_json(text, file=path, line=None)
    except InputError as exc:
        raise InputError(f"row {row + 1}: {exc.reason}", file=path, field=name) from None


def _rows(
    path: Path, columns: dict[str, str], by_key: dict[int, Trial], every: Sequence[int]
) -> tuple[dict[str, list[Any]], list[int]] | None:
    """The named columns of a file beside a trials file, checked, at the rows of the
    trials of ``by_key``, and those rows (0-based); ``None`` when the file is absent.
    Its ``trial_key`` is read whole: every row's must be a key of ``every`` (the trials
    file's), whichever rows are read."""
    if not path.is_file():
        return None
    schema = _open(path).schema_arrow
    _refuse_repeated_names(path, schema)
    for name, kind in columns.items():
        if name not in schema.names:
            if name in ("trial_key", "seq", "type", "data", "grader"):
                raise InputError("missing required column", file=path, field=name)
            continue
        what, accepts, _ = _ACCEPTS[kind]
        if not accepts(schema.field(name).type):
            raise InputError(
                f"expected {what}, found Arrow type {schema.field(name).type}",
                file=path,
                field=name,
            )
    present = [n for n in columns if n in schema.names and n != "trial_key"]
    column = _read(path, ["trial_key"]).column("trial_key")
    try:
        found = column.cast(pa.int64())
    except pa.ArrowInvalid as exc:
        raise _uncastable(path, "trial_key", column, pa.int64(), exc) from None
    if found.null_count:
        row = _first(pc.is_null(found))
        raise InputError(
            f"row {row + 1}: a value is required, found null", file=path, field="trial_key"
        )
    foreign = pc.invert(pc.is_in(found, value_set=pa.array(every, pa.int64())))
    if pc.any(foreign).as_py():
        row = _first(foreign)
        raise InputError(
            f"row {row + 1}: trial_key {found[row].as_py()!r} is not a trial of {TRIALS_FILE}",
            file=path,
            field="trial_key",
        )
    if len(by_key) == len(every):  # every trial's rows: all of them
        table, at = _read(path, present), list(range(len(found)))
    else:
        wanted = pc.is_in(found, value_set=pa.array(list(by_key), pa.int64()))
        rows = np.flatnonzero(wanted.to_numpy(zero_copy_only=False))
        table, at = _read_rows(path, present, rows), rows.tolist()
    keys = found if len(at) == len(found) else found.take(pa.array(at, pa.int64()))
    values: dict[str, list[Any]] = {"trial_key": keys.to_pylist()}
    for name in columns:
        if name in present:
            column = table.column(name)
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            values[name] = column.cast(_ACCEPTS[columns[name]][2]).to_pylist()
        elif name != "trial_key":
            values[name] = [None] * table.num_rows
    return values, at


def _add_events(path: Path, by_key: dict[int, Trial], every: Sequence[int]) -> None:
    found = _rows(
        path,
        {"trial_key": "int", "seq": "int", "type": "text", "t": "real", "data": "text"},
        by_key,
        every,
    )
    if found is None:
        return
    v, at = found
    # Each trial's events in the order of their seq, wherever their rows are in the file
    # (row numbers in messages are the file's).
    rows: dict[Any, list[tuple[int, int]]] = {}
    for i, (key, seq) in enumerate(zip(v["trial_key"], v["seq"], strict=True)):
        if seq is None:
            raise InputError(f"row {at[i] + 1}: a value is required", file=path, field="seq")
        rows.setdefault(key, []).append((seq, i))
    order = [i for key in rows for _, i in sorted(rows[key])]
    for i in order:
        row = at[i]
        trial = by_key[v["trial_key"][i]]
        type_, data = v["type"][i], v["data"][i]
        if type_ is None or data is None:
            raise InputError(
                f"row {row + 1}: a value is required",
                file=path,
                field="type" if type_ is None else "data",
            )
        fields = _json(data, path, row, "data")
        if not isinstance(fields, dict):
            raise InputError(
                f"row {row + 1}: expected a JSON object, got {type(fields).__name__}",
                file=path,
                field="data",
            )
        try:
            trial.events.append(event_from(type_, v["t"][i], fields))
        except (ValidationError, TypeError) as exc:
            reason = first_error(exc)[1] if isinstance(exc, ValidationError) else str(exc)
            raise InputError(f"row {row + 1}: {reason}", file=path, field="data") from None


def _add_grades(path: Path, by_key: dict[int, Trial], every: Sequence[int]) -> None:
    columns = {
        "trial_key": "int",
        "grader": "text",
        "score": "real",
        "passed": "bool",
        "status": "text",
        "evidence": "json",
        "judge_model": "text",
    }
    found = _rows(path, columns, by_key, every)
    if found is None:
        return
    v, at = found
    for i, row in enumerate(at):
        trial = by_key[v["trial_key"][i]]
        evidence = v["evidence"][i]
        try:
            grade = Grade(
                grader=v["grader"][i],
                score=v["score"][i],
                passed=v["passed"][i],
                status=v["status"][i],
                evidence=None if evidence is None else _json(evidence, path, row, "evidence"),
                judge_model=v["judge_model"][i],
            )
        except ValidationError as exc:
            name, reason = first_error(exc)
            raise InputError(f"row {row + 1}: {reason}", file=path, field=name) from None
        # The evidence the metrics read, checked as a trial record's (`parse_trial`).
        problem = evidence_problem(grade.grader, grade.evidence)
        if problem is not None:
            raise InputError(
                f"row {row + 1}: {problem[1]}", file=path, field=f"evidence.{problem[0]}"
            )
        trial.grades.append(grade)
