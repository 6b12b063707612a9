"""Write a stored run as a Parquet export directory (`agentgauge.parquet`).

The run is read column-wise in batches (`agentgauge.store.columns`), never as
`Trial` models, and written with pyarrow one row group per batch, so a run of
millions of trials needs the memory of one batch. The directory is written
beside its destination under a temporary name and renamed into place once
complete: a failed export leaves nothing at the destination, and nothing
already there is replaced unless the user asks (``force``). Even then only an
earlier export's own files go (`EXPORT_FILES`): a directory holding anything
else (notes, a nested folder, the store being read) is refused, never emptied.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentgauge._version import __version__
from agentgauge.errors import InputError
from agentgauge.facts import FACTS, RULES, FactKind, Facts
from agentgauge.parquet import (
    EVENTS_FILE,
    GRADES_FILE,
    HEADER_FILE,
    LABELS,
    LAYOUT,
    TRIALS_FILE,
    events_schema,
    fact_type,
    grades_schema,
    trials_schema,
)
from agentgauge.schema import TRIAL_FIELDS
from agentgauge.sources import Selector, selected_rows, split_selector
from agentgauge.store import Store, utc_now
from agentgauge.store.columns import event_batches, grade_batches, trial_batches
from agentgauge.store.rows import UNREADABLE
from agentgauge.textio import MAX_DEPTH, nests_deeper

__all__ = ["BATCH", "EXPORT_FILES", "ExportCounts", "write_parquet"]

_Row = TypeVar("_Row", bound=tuple[Any, ...])

BATCH = 65_536
"""Rows per batch read from the store and per row group written."""

#: The files an export writes, and so the only ones ``--force`` removes.
EXPORT_FILES = (TRIALS_FILE, EVENTS_FILE, GRADES_FILE, HEADER_FILE)
#: The files SQLite keeps beside a store while it is open (WAL mode, a rollback journal).
_STORE_SIBLINGS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class ExportCounts:
    """What an export wrote."""

    trials: int
    events: int
    grades: int
    grade_version: int
    left_behind: str | None = None
    """When ``--force`` replaced an earlier export whose files could not all be removed
    afterwards: the hidden folder holding them, and why (the export itself is whole)."""


def write_parquet(
    store_path: str | Path,
    run_id: str,
    out: str | Path,
    *,
    grade_version: int | None = None,
    selector: Selector | None = None,
    source: str | None = None,
    force: bool = False,
    batch: int = BATCH,
) -> ExportCounts:
    """Export run ``run_id`` of the store at ``store_path`` to the directory ``out``.

    ``grade_version`` picks the outcomes and grades exported (default: the run's
    active version). A ``selector``'s ``#agent=``/``#model=`` keep that configuration's
    trials (with their events and grades) and must match some, as everywhere a SOURCE
    is read; ``source`` (how the user named the run, ``DB:RUN#agent=NAME``) words the
    refusal. ``out`` must not exist or be empty (folders above it that do not exist
    are made); with ``force`` an earlier export there is replaced: a directory that
    holds anything but an export's own files (`EXPORT_FILES`), or holds the store
    read, never is. The export is 0777 less the umask.
    """
    given = Path(out)
    # Through a link, the folder it names is written (as a FILE export writes through
    # one): the rename into place must not replace the link itself.
    out = _resolved(given)
    _check_destination(given, force=force, inputs=_store_files(Path(store_path)))
    # One snapshot for every read: a run committing trials meanwhile adds none of them
    # halfway (their events or grades without their rows).
    with Store(store_path, readonly=True) as store, store.snapshot():
        run = store.require_run(run_id)
        version = store.resolve_grade_version(run_id, grade_version)
        grading = next(v for v in store.grade_versions(run_id) if v.version == version)
        tasks = store.get_tasks(run_id)
        table, facts = store.columns(run_id, grade_version=version)
        rows: np.ndarray[Any, Any] | None = None
        if selector is not None and (selector.agent is not None or selector.model is not None):
            named = source if source is not None else f"{store_path}:{run_id}"
            # Refused before a folder is made: a selector matching nothing writes nothing.
            rows = selected_rows(table, selector, split_selector(named)[0], named)
            facts = facts.take(rows)
        del table
        try:
            # Missing folders above it are made, as `mkdir -p` would (the run is known
            # to exist by now, so a bad DB:RUN leaves none behind).
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = _new_folder(out)
        except OSError as exc:
            raise _cannot_write(exc, given) from None
        try:
            keys: dict[int, int] = {}
            n_trials = _write(
                tmp / TRIALS_FILE,
                trials_schema(),
                _trial_tables(store, run_id, version, batch, keys, facts, rows),
            )
            events = event_batches(store, run_id, batch)
            grades = grade_batches(store, run_id, version, batch)
            if rows is not None:  # only the kept trials' events and grades
                events, grades = _of_kept(events, keys), _of_kept(grades, keys)
            n_events = _write(
                tmp / EVENTS_FILE, events_schema(), _event_tables(store, events, run_id, keys)
            )
            n_grades = _write(
                tmp / GRADES_FILE, grades_schema(), _grade_tables(store, grades, run_id, keys)
            )
            header = {
                "schema": LAYOUT,
                "agentgauge_version": __version__,
                "exported_at": utc_now(),
                "run": run.model_dump(mode="json"),
                "grade_version": asdict(grading),
                "counts": {"trials": n_trials, "events": n_events, "grades": n_grades},
                "facts_rules": RULES,
                "tasks": [t.model_dump(mode="json", exclude_defaults=True) for t in tasks],
            }
            (tmp / HEADER_FILE).write_text(json.dumps(header) + "\n", encoding="utf-8")
            left = _put_in_place(tmp, out)
        except BaseException as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError):  # a full disk, a file size limit: nothing was put
                raise _cannot_write(exc, given) from None
            raise
    return ExportCounts(n_trials, n_events, n_grades, version, left)


def _resolved(out: Path) -> Path:
    try:
        return out.resolve()
    except (OSError, RuntimeError) as exc:  # a loop of links
        raise _cannot_write(exc, out) from None


def _cannot_write(exc: BaseException, out: Path) -> InputError:
    """The user's line for a write the system refused, in the system's words (pyarrow's
    OSError wraps them in its own: "Error writing bytes to file. Detail: ...")."""
    if isinstance(exc, OSError):
        reason = os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)
    else:
        reason = "symlink loop"
    return InputError(f"cannot write here: {reason}", file=out, field="--parquet")


def _new_folder(out: Path) -> Path:
    """A new, empty folder beside ``out`` to write the export into. Made as any folder
    is (0777 less the umask), not as mkdtemp makes one (0700): the export is for readers
    running as other users too (Spark, DuckDB)."""
    while True:
        tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
        try:
            tmp.mkdir(0o777)
        except FileExistsError:
            continue
        return tmp


def _store_files(store: Path) -> list[Path]:
    """The files the export reads: the store and the files SQLite keeps beside it."""
    return [store, *(store.with_name(store.name + end) for end in _STORE_SIBLINGS)]


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies in it, links and ``..`` followed."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a loop of links: not ours to decide, so refused
        return True


def _foreign(out: Path) -> Path | None:
    """The first entry of ``out`` (by name) that an export does not write: anything but
    a plain file named as one of `EXPORT_FILES` (a folder, a link, another file)."""
    for entry in sorted(out.iterdir()):
        if entry.name not in EXPORT_FILES or entry.is_symlink() or not entry.is_file():
            return entry
    return None


def _check_destination(out: Path, *, force: bool, inputs: Sequence[Path]) -> None:
    above = next((p for p in out.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise InputError("is a file, not a folder to write into", file=above)
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError("exists and is not a directory; name a new directory", file=out)
    if not any(out.iterdir()):
        return
    # The store read, inside the folder the export replaces, would go with it: refused
    # whatever else the folder holds, before --force is even asked about.
    held = next((p for p in inputs if p.exists() and _inside(p, out)), None)
    if held is not None:
        raise InputError(
            f"holds {held}, the store this export reads, which replacing the directory "
            "would delete; write the export to another directory",
            file=out,
        )
    if not force:
        raise InputError("exists and is not empty; add --force to replace it", file=out)
    if not (out / HEADER_FILE).is_file():
        raise InputError(
            f"is not an agentgauge Parquet export (no {HEADER_FILE}); --force replaces "
            "only an earlier export, so name a new or empty directory",
            file=out,
        )
    foreign = _foreign(out)
    if foreign is not None:
        raise InputError(
            f"holds {foreign.name!r}, which is no file an export writes "
            f"({', '.join(EXPORT_FILES)}); --force replaces only an earlier export's own "
            "files, so move it out or name another directory",
            file=out,
        )
    # Its files go once the new export is in place: a directory whose entries this user
    # may not remove would be swapped out and then stick, half replaced.
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError(
            "holds an earlier export that cannot be replaced: the directory is read-only, "
            "so its files cannot be removed; make it writable (chmod u+w) or name another "
            "directory",
            file=out,
        )


def _put_in_place(tmp: Path, out: Path) -> str | None:
    """Rename the finished export to ``out`` (a real path, no link); an earlier export
    there goes only after, and of it only the files an export writes (`EXPORT_FILES`,
    all that `_check_destination` let through). Anything that appeared in ``out`` while
    the export was written is moved into the new export's directory, never deleted.

    Returns, when the earlier export's folder could not be emptied once the new one was
    in place, that folder and why (for the user to remove); ``None`` otherwise."""
    if not (out.is_dir() and any(out.iterdir())):
        os.replace(tmp, out)  # POSIX renames over an empty directory
        return None
    old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
    try:
        os.replace(out, old)  # replaces the empty directory just made
    except BaseException:
        with contextlib.suppress(OSError):
            old.rmdir()
        raise
    try:
        os.replace(tmp, out)
    except BaseException:
        os.replace(old, out)  # the earlier export back where it was
        raise
    failed: OSError | None = None
    for entry in sorted(old.iterdir()):
        try:
            if entry.name in EXPORT_FILES and entry.is_file() and not entry.is_symlink():
                entry.unlink()
            elif not (out / entry.name).exists():
                entry.rename(out / entry.name)
        except OSError as exc:  # the export is in place: a success, with what stuck said
            failed = failed or exc
    try:
        old.rmdir()  # not empty: what could not move back stays, and is said
    except OSError as exc:
        failed = failed or exc
    return None if failed is None else f"{old} ({failed.strerror or failed})"


def _write(path: Path, schema: pa.Schema, tables: Iterator[pa.Table]) -> int:
    n = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for table in tables:
            writer.write_table(table)
            n += table.num_rows
    return n


def _run_ids(run_id: str, n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32), [run_id])


def _documents(keys: Sequence[Hashable], text: Callable[[Hashable], str]) -> pa.DictionaryArray:
    """A document column: each distinct document's text once, indexed by row (hashing
    the store's keys, not the texts, which are kilobytes each)."""
    seen: dict[Hashable, int] = {}
    index = [None if k is None else seen.setdefault(k, len(seen)) for k in keys]
    return pa.DictionaryArray.from_arrays(
        pa.array(index, pa.int32()), pa.array([text(k) for k in seen], pa.string())
    )


def _column(values: Sequence[Any], type_: str, label: bool) -> pa.Array:
    if label:
        return pa.array(values, pa.string()).dictionary_encode()
    if type_ == "bool":  # SQLite keeps booleans as 0/1
        return pa.array([None if v is None else bool(v) for v in values], pa.bool_())
    arrow = {"int": pa.int64(), "real": pa.float64()}.get(type_, pa.string())
    return pa.array(values, arrow)


def _fact_column(values: np.ndarray[Any, Any], kind: FactKind) -> pa.Array:
    if kind == "label":
        return pa.array(values.tolist(), pa.string()).dictionary_encode()
    if kind == "float":  # NaN is the facts' missing value: null in the file
        return pa.array(values, pa.float64(), mask=np.isnan(values))
    return pa.array(values, fact_type(kind))


def _trial_tables(
    store: Store,
    run_id: str,
    version: int,
    batch: int,
    keys: dict[int, int],
    facts: Facts,
    rows: np.ndarray[Any, Any] | None,
) -> Iterator[pa.Table]:
    """The trials as tables, one a batch; ``rows`` (one flag a trial of the run, in key
    order): only those kept, ``facts`` being theirs alone."""
    schema = trials_schema()
    seen = 0
    for part in trial_batches(store, run_id, version, batch):
        pks, fields = part.keys, part.fields
        if rows is not None:
            keep = rows[seen : seen + len(pks)].tolist()
            seen += len(pks)
            pks = [pk for pk, k in zip(pks, keep, strict=True) if k]
            fields = {
                name: [v for v, k in zip(values, keep, strict=True) if k]
                for name, values in fields.items()
            }
            if not pks:
                continue
        for f in _JSON_FIELDS:
            if (bad := _damaged_json(fields[f])) is not None:
                raise _refused(store, f"trial {pks[bad[0]]} of run {run_id!r}", bad[1], f)
        first = len(keys)
        keys.update((pk, first + i) for i, pk in enumerate(pks))
        n = len(pks)
        columns = [
            _run_ids(run_id, n),
            pa.array(range(first, first + n), pa.int64()),
            *(
                _documents(fields[f.name], part.document)
                if f.type == "document"
                else _column(fields[f.name], f.type, f.name in LABELS)
                for f in TRIAL_FIELDS
            ),
            *(_fact_column(facts[name][first : first + n], kind) for name, kind in FACTS.items()),
        ]
        yield pa.Table.from_arrays(columns, schema=schema)


#: The trial fields the store keeps as JSON text, copied to the export as it is.
_JSON_FIELDS = tuple(f.name for f in TRIAL_FIELDS if f.type == "json")


def _damaged_json(
    texts: Sequence[str | None], *, mapping: bool = True
) -> tuple[int, BaseException] | None:
    """The first of a batch's stored JSON texts that would not read back, and why, for
    the store's damaged-row error (`Store.damaged`, what ``--jsonl`` says of it): the
    export copies each text as it is, and a reader would then blame the export. Each
    distinct text is parsed once, by orjson (a few microseconds); ``mapping`` asks for
    an object (metadata, an event's data)."""
    for text in set(texts):
        if text is not None and _json_problem(text, mapping) is not None:
            return next(
                (i, p)
                for i, t in enumerate(texts)
                if t is not None and (p := _json_problem(t, mapping)) is not None
            )
    return None


def _json_problem(text: str, mapping: bool) -> BaseException | None:
    """Why ``text`` would not read back as the store reads it (`agentgauge.store.rows.loads`),
    or ``None``."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:  # what orjson refuses and the store reads (NaN, a lone surrogate, a long integer)
            value = json.loads(text)
        except UNREADABLE as exc:
            return exc
    if mapping and not isinstance(value, dict):
        return TypeError(f"not a JSON object ({type(value).__name__})")
    # Deeper than the readers take (`agentgauge.textio.MAX_DEPTH`, as `import jsonl`):
    # the export would be written and then refused by every reader of it.
    if text.count("[") + text.count("{") > MAX_DEPTH and nests_deeper(text, MAX_DEPTH):
        return _TooDeep()
    return None


class _TooDeep(ValueError):
    """A stored JSON text nested deeper than a Parquet export is read back."""


def _refused(store: Store, what: str, problem: BaseException, field: str) -> InputError:
    """The error for a stored JSON text the export will not copy: the store's
    damaged-row error, or, for a text that reads back from the store but nests deeper
    than the readers of an export take, one line saying so."""
    if isinstance(problem, _TooDeep):
        return InputError(
            f"{what} is nested too deeply to export: more than {MAX_DEPTH} levels of "
            "arrays and objects, which no reader of the export (agentgauge's Parquet "
            "and JSONL readers) takes back",
            file=store.path,
            field=field,
        )
    return store.damaged(what, problem, field=field)


def _of_kept(batches: Iterator[list[_Row]], keys: dict[int, int]) -> Iterator[list[_Row]]:
    """The rows (events or grades, each led by its trial's key) of the trials exported."""
    for rows in batches:
        if kept := [r for r in rows if r[0] in keys]:
            yield kept


def _event_tables(
    store: Store,
    batches: Iterator[list[tuple[int, int, str, float | None, str]]],
    run_id: str,
    keys: dict[int, int],
) -> Iterator[pa.Table]:
    schema = events_schema()
    for rows in batches:
        pk, seq, type_, t, data = zip(*rows, strict=True)
        if (bad := _damaged_json(data)) is not None:
            where = f"an event of trial {pk[bad[0]]} of run {run_id!r}"
            raise _refused(store, where, bad[1], "data")
        yield pa.Table.from_arrays(
            [
                _run_ids(run_id, len(rows)),
                pa.array([keys[k] for k in pk], pa.int64()),
                pa.array(seq, pa.int64()),
                _column(type_, "text", label=True),
                pa.array(t, pa.float64()),
                pa.array(data, pa.string()),
            ],
            schema=schema,
        )


def _grade_tables(
    store: Store, batches: Iterator[list[tuple[Any, ...]]], run_id: str, keys: dict[int, int]
) -> Iterator[pa.Table]:
    schema = grades_schema()
    for rows in batches:
        pk, grader, score, passed, status, evidence, judge_model = zip(*rows, strict=True)
        if (bad := _damaged_json(evidence, mapping=False)) is not None:
            where = f"the {grader[bad[0]]!r} grade of trial {pk[bad[0]]} of run {run_id!r}"
            raise _refused(store, where, bad[1], "evidence")
        yield pa.Table.from_arrays(
            [
                _run_ids(run_id, len(rows)),
                pa.array([keys[k] for k in pk], pa.int64()),
                _column(grader, "text", label=True),
                pa.array(score, pa.float64()),
                _column(passed, "bool", label=False),
                _column(status, "text", label=True),
                pa.array(evidence, pa.string()),
                _column(judge_model, "text", label=True),
            ],
            schema=schema,
        )
