"""Importers: foreign result formats -> `Trial` records -> one run in the store.

Each format module exposes ``read(path) -> ImportedRun`` (``read(path, **options)``
for formats registered with ``options=True``, such as ``otel``); `import_file` reads
the whole file first (validating every record) and only then opens the store
and writes the run in one transaction, so bad input leaves the store unchanged
and creates no store file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge._version import __version__
from agentgauge.errors import InputError
from agentgauge.schema import Run, Task, Trial
from agentgauge.store import Store, utc_now

__all__ = ["FORMATS", "ImportedRun", "file_sha256", "import_file", "read_import", "register"]


@dataclass
class ImportedRun:
    """What a format reader returns: trials plus whatever run header it knows."""

    trials: list[Trial]
    agent: str | None = None
    model: str | None = None
    suite: str | None = None
    tasks: list[Task] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)


Reader = Callable[..., ImportedRun]
FORMATS: dict[str, Reader] = {}
#: Formats whose reader takes keyword options (``read(path, **options)``).
TAKES_OPTIONS: set[str] = set()


def register(name: str, *, options: bool = False) -> Callable[[Reader], Reader]:
    """Register a reader under a format name (``agentgauge import NAME``); with
    ``options``, the reader also takes keyword options from the command line."""

    def deco(fn: Reader) -> Reader:
        FORMATS[name] = fn
        if options:
            TAKES_OPTIONS.add(name)
        return fn

    return deco


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _single(values: set[str | None]) -> str | None:
    return next(iter(values)) if len(values) == 1 else None


def read_import(
    fmt: str, path: str | Path, options: Mapping[str, Any] | None = None
) -> ImportedRun:
    """Read and validate the whole of ``path`` in format ``fmt``, writing nothing.
    ``options`` go to readers that take them (``otel``, ``openinference``)."""
    _load_builtin_formats()
    if fmt not in FORMATS:
        raise InputError(
            f"unknown import format {fmt!r}; choose from {', '.join(sorted(FORMATS))}",
            field="FORMAT",
        )
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", file=path)
    if options and fmt not in TAKES_OPTIONS:
        takes = ", ".join(sorted(TAKES_OPTIONS))
        raise InputError(f"format {fmt!r} takes no options (formats that do: {takes})", field=fmt)
    imported = FORMATS[fmt](path, **options) if options else FORMATS[fmt](path)
    if not imported.trials:
        raise InputError("no trials found", file=path)
    return imported


def import_file(
    fmt: str,
    path: str | Path,
    store: Store | str | Path,
    run_id: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Run:
    """Read ``path`` in format ``fmt`` and store it as one run, atomically.

    ``store`` is an open `Store` or the path of one: a path is opened (and a new
    store created) only once the whole file has validated, so a bad file leaves
    no empty store behind."""
    imported = read_import(fmt, path, options)
    if not isinstance(store, Store):
        with Store(store) as db:
            return _write(fmt, Path(path), imported, db, run_id)
    return _write(fmt, Path(path), imported, store, run_id)


def _write(fmt: str, path: Path, imported: ImportedRun, store: Store, run_id: str | None) -> Run:
    sha = file_sha256(path)
    if run_id is None:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.stem)
        run_id = f"{stem}-{sha[:8]}"
    run = Run(
        run_id=run_id,
        agent=imported.agent or _single({t.agent for t in imported.trials}),
        model=imported.model or _single({t.model for t in imported.trials}),
        suite=imported.suite or str(path),
        created_at=utc_now(),
        source=f"import:{fmt}:{path.resolve()}",
        source_sha256=sha,
        agentgauge_version=__version__,
        config=imported.config,
        n_trials=len(imported.trials),
    )
    with store.transaction():
        store.create_run(run)
        if imported.tasks:
            store.add_tasks(run_id, imported.tasks)
        for trial in imported.trials:
            store.add_trial(run_id, trial)
    return run


def _load_builtin_formats() -> None:
    # Importing the modules registers them.
    from agentgauge.importers import jsonl, metr, openinference, otel, taubench  # noqa: F401
