"""Importers: foreign result formats -> `Trial` records -> one run in the store.

Each format module exposes ``read(path, **options) -> ImportedRun``; the options
a reader takes (the Inspect reader's ``scorer``, the span readers' ``suite``,
``outcomes``, ``task_attr``...) are declared at `register`; `import_file` reads
the whole file first (validating every record) and only then opens the store
and writes the run in one transaction, so bad input leaves the store unchanged
and creates no store file.
"""

from __future__ import annotations

import gc
import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge._version import __version__
from agentgauge.errors import InputError
from agentgauge.schema import Run, Task, Trial
from agentgauge.store import Store, utc_now

__all__ = [
    "FORMATS",
    "OPTIONS",
    "ImportedRun",
    "file_sha256",
    "import_file",
    "read_import",
    "register",
    "require_file",
]


@dataclass
class ImportedRun:
    """What a format reader returns: trials plus whatever run header it knows."""

    trials: list[Trial]
    agent: str | None = None
    model: str | None = None
    suite: str | None = None
    suite_version: str | None = None
    """The suite's version (`agentgauge.suite.suite_version`), when the source says it."""
    tasks: list[Task] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None
    """What the trials were read from when it is more than PATH (tau2's results
    directory, for its ``results.json``): the run is named, hashed and recorded by it."""


#: ``read(path, **options) -> ImportedRun``; options are keyword-only.
Reader = Callable[..., ImportedRun]
FORMATS: dict[str, Reader] = {}
#: The options each format takes (``scorer`` for ``inspect``, ...).
OPTIONS: dict[str, tuple[str, ...]] = {}
#: Formats whose PATH may be a directory (tau2's ``results.json`` + ``simulations/``).
DIRECTORY_FORMATS = frozenset({"tau2"})


def register(name: str, options: tuple[str, ...] = ()) -> Callable[[Reader], Reader]:
    """Register a reader under a format name (``agentgauge import NAME``), with the
    keyword options it takes."""

    def deco(fn: Reader) -> Reader:
        FORMATS[name] = fn
        OPTIONS[name] = options
        return fn

    return deco


def file_sha256(path: Path) -> str:
    """SHA-256 of a file; of a directory (tau2's results folder), of its files'
    relative paths and contents in sorted order."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a while: an import holds every span and
    trial it has read until it is done (no cycles among them to free), and each
    collection walks them all again, which made half of a large import's time.

    On the way out, what was made meanwhile is moved to the oldest generation
    (`gc.freeze` then `gc.unfreeze`, two list splices), as the collections it skipped
    would have moved what survives: else the first young collection after it walks
    every object the import made, a twentieth of its time. Not done when something
    else has frozen objects (a server before it forks), which unfreezing would undo."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _single(values: set[str | None]) -> str | None:
    return next(iter(values)) if len(values) == 1 else None


def require_file(path: Path, *, field: str | None = None) -> None:
    """Refuse what is no regular file, saying what it is: missing, or there but a
    device or a pipe (``/dev/null``, ``<(zcat ...)``), which an import cannot read
    twice as it does (once for the trials, once for the run's SHA-256)."""
    if path.is_file():
        return
    if path.exists():
        raise InputError(
            "is not a regular file (a device or a pipe): save the data to a file and import that",
            file=path,
            field=field,
        )
    raise InputError("no such file", file=path, field=field)


def read_import(
    fmt: str, path: str | Path, options: Mapping[str, Any] | None = None, **more: Any
) -> ImportedRun:
    """Read and validate the whole of ``path`` in format ``fmt``, writing nothing.
    ``options`` (and keyword ``more``) left at ``None`` are not passed on; one the
    format does not take is refused."""
    _load_builtin_formats(fmt)
    if fmt not in FORMATS:
        raise InputError(
            f"unknown import format {fmt!r}; choose from {', '.join(sorted(FORMATS))}",
            field="FORMAT",
        )
    path = Path(path)
    if not (fmt in DIRECTORY_FORMATS and path.is_dir()):
        if path.is_dir():
            takes = ", ".join(sorted(DIRECTORY_FORMATS))
            raise InputError(
                f"is a directory; the {fmt} format reads a file (formats that read a "
                f"directory: {takes})",
                file=path,
            )
        require_file(path)
    given = {k: v for k, v in {**(options or {}), **more}.items() if v is not None}
    # Each option named (a format that takes none named itself: "jsonl: format 'jsonl'
    # takes no options", though --store and --run-id are every format's).
    for key in given:
        if key not in OPTIONS[fmt]:
            _load_builtin_formats()  # to say which formats take it
            takers = sorted(f for f, opts in OPTIONS.items() if key in opts)
            formats = (
                f"the {takers[0]} format"
                if len(takers) == 1
                else f"the {', '.join(takers)} formats"
            )
            raise InputError(
                f"applies only to {formats if takers else 'no format'}",
                field=f"--{key.replace('_', '-')}",
            )
    with gc_paused():
        imported = FORMATS[fmt](path, **given)
    if not imported.trials:
        raise InputError("no trials found", file=path)
    _check_evidence(imported.trials, path)
    return imported


def _check_evidence(trials: Sequence[Trial], path: Path) -> None:
    """Refuse grade evidence the metrics could not read (`agentgauge.evidence`), in a
    format without lines (the JSONL readers name the line); an OTLP file carries an
    agentgauge export's evidence as JSON."""
    from agentgauge.evidence import grades_problem

    for trial in trials:
        if trial.grades and (problem := grades_problem(trial.grades)) is not None:
            where = f"trial {trial.trial} of task {trial.task_id!r}: {problem[0]}"
            raise InputError(problem[1], file=path, field=where)


def import_file(
    fmt: str,
    path: str | Path,
    store: Store | str | Path,
    run_id: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    baseline_role: str | None = None,
    **more: Any,
) -> Run:
    """Read ``path`` in format ``fmt`` and store it as one run, atomically.

    ``store`` is an open `Store` or the path of one: a path is opened (and a new
    store created) only once the whole file has validated, so a bad file leaves
    no empty store behind. ``baseline_role`` marks the run as that baseline
    (``human`` for the humans' trials: docs/compare-and-plan.md, "Baselines")."""
    from agentgauge.sources import check_run_id
    from agentgauge.store import check_store_path

    check_store_path(store)  # before the file is read: a store that would keep nothing
    check_run_id(run_id)  # before the file is read: a run id DB:RUN could not name again
    if baseline_role is not None:
        from agentgauge.metrics.baselines import ROLE_KEY, check_role

        check_role(baseline_role)
    imported = read_import(fmt, path, options, **more)
    if baseline_role is not None:
        imported.config[ROLE_KEY] = baseline_role
    if not isinstance(store, Store):
        with Store(store) as db:
            return _write(fmt, Path(path), imported, db, run_id)
    return _write(fmt, Path(path), imported, store, run_id)


def _write(fmt: str, path: Path, imported: ImportedRun, store: Store, run_id: str | None) -> Run:
    path = imported.source or path
    sha = file_sha256(path)
    if run_id is None:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.stem)
        run_id = f"{stem}-{sha[:8]}"
        _refuse_import_again(store, path, run_id, sha)
    run = Run(
        run_id=run_id,
        agent=imported.agent or _single({t.agent for t in imported.trials}),
        model=imported.model or _single({t.model for t in imported.trials}),
        suite=imported.suite or str(path),
        suite_version=imported.suite_version if imported.suite else None,
        created_at=utc_now(),
        source=f"import:{fmt}:{path.resolve()}",
        source_sha256=sha,
        agentgauge_version=__version__,
        config=imported.config,
        n_trials=len(imported.trials),
    )
    with gc_paused(), store.transaction():
        store.create_run(run)
        if imported.tasks:
            store.add_tasks(run_id, imported.tasks)
        store.add_trials(run_id, imported.trials)
    return run


def _refuse_import_again(store: Store, path: Path, run_id: str, sha: str) -> None:
    """A file imported without ``--run-id`` whose bytes a run of the store was imported
    from (under the default run id, the file's name and the start of its hash, or under
    one given with ``--run-id``, or from a copy by another name) names that import: not
    "choose another --run-id", which reads as an invitation to store the same trials
    twice, nor (the default id being free) a second copy stored unasked."""
    existing = store.get_run(run_id)
    if existing is None or existing.source_sha256 != sha:
        found = store.run_of_source(sha)
        if found is None:
            return
        run_id, created_at = found
    else:
        created_at = existing.created_at
    raise InputError(
        f"{path} was already imported as run {run_id!r} "
        f"at {created_at}: its trials are in the store; "
        "to store them a second time, give --run-id",
        file=store.path,
        field="--run-id",
    )


#: The built-in formats, each registered by the module of its name.
BUILTIN_FORMATS = ("inspect", "jsonl", "metr", "openinference", "otel", "tau2", "taubench")


def _load_builtin_formats(fmt: str | None = None) -> None:
    """Register the reader of ``fmt`` (importing its module registers it), or every
    built-in reader when ``fmt`` is none of them: one format's import need not pay
    for the others' (the tau2 reader's, the Inspect reader's)."""
    import importlib

    for name in [fmt] if fmt in BUILTIN_FORMATS else BUILTIN_FORMATS:
        importlib.import_module(f"{__name__}.{name}")
