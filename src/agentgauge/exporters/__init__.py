"""Exporters: a stored run -> a file other tools read.

`export_run` reads one run (``DB:RUN``, its active grade version unless
``#grade=N`` or ``grade_version`` names another, only one configuration's trials
with ``#agent=``/``#model=``, as every command reads a SOURCE) and writes it
as the JSONL interchange format (`agentgauge.exporters.jsonl`, which
``agentgauge import jsonl`` reads back) or as OTLP JSON
(`agentgauge.exporters.otel`). The file is written beside its destination and
renamed into place, so a failed export leaves no half-written file
(`write_output`, which ``agentgauge report`` writes its files with too).
`export_parquet` writes a directory of Parquet files (`agentgauge.parquet`),
read column-wise from the store, as atomically.
"""

from __future__ import annotations

import glob
import os
import secrets
import shlex
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from agentgauge.errors import InputError
from agentgauge.parquet import EVENTS_FILE, GRADES_FILE, HEADER_FILE
from agentgauge.schema import Run, Trial
from agentgauge.sources import (
    Selector,
    asked_grade_version,
    is_store,
    parse_source,
    selected_rows,
    source_text,
    split_selector,
)
from agentgauge.spelling import quoted
from agentgauge.store import Store
from agentgauge.table import TrialTable

if TYPE_CHECKING:
    from agentgauge.parquet.write import ExportCounts

__all__ = [
    "EXPORT_FORMATS",
    "Exported",
    "StagedOutput",
    "check_output",
    "export_parquet",
    "export_run",
    "input_files",
    "is_stream",
    "run_source",
    "source_label",
    "stage_output",
    "write_output",
]

Writer = Callable[[Run, list[Trial]], str]


def _jsonl(run: Run, trials: list[Trial]) -> str:
    from agentgauge.exporters.jsonl import trials_jsonl

    return trials_jsonl(trials)


def _otel(run: Run, trials: list[Trial]) -> str:
    from agentgauge.exporters.otel import otlp_json, run_to_otlp

    return otlp_json(run_to_otlp(run, trials)) + "\n"


EXPORT_FORMATS: dict[str, Writer] = {"jsonl": _jsonl, "otel": _otel}
"""Format name -> writer of the file's text."""

_SUFFIX = {"jsonl": "jsonl", "otel": "json"}


@dataclass(frozen=True)
class Exported:
    """What `export_run` wrote."""

    trials: int
    grade_version: int
    """The grade version whose outcomes and grades were written."""


def export_run(
    source: str | PathLike[str],
    fmt: str,
    out: str | Path,
    *,
    grade_version: int | None = None,
    force: bool = False,
) -> Exported:
    """Write run ``source`` (``DB:RUN``, or a store of one run, with an optional
    ``#agent=``, ``#model=`` or ``#grade=N`` selector) to ``out`` in format ``fmt``.

    The selector is read as every command reads a SOURCE (docs/cli.md, "SOURCE"): a
    configuration's trials only, refused in one line when it matches none; grade
    version ``N``'s outcomes and grades, or ``grade_version``'s (``--grade-version``;
    the two differing is refused). Before, the ``#...`` part was dropped and the whole
    run written under its active version, so an export could hold other than what was
    asked with nothing said. ``out`` is written as `write_output` writes: an existing
    non-empty file is refused unless ``force``, and the store itself (or its
    ``-wal``/``-shm`` files) always is; a missing folder is made (``mkdir -p``), as
    for ``--parquet`` and the report's files."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(
            f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}",
            field="format",
        )
    source = source_text(source)
    base, selector = split_selector(source)
    path, run_id = run_source(base)
    asked = asked_grade_version(selector, grade_version, path)
    option = f"--{fmt}"
    example = f"{run_id}.{_SUFFIX[fmt]}"
    inputs = input_files([str(path)])
    # Before the work, so that a refused destination costs nothing; again when writing.
    check_output(out, option=option, inputs=inputs, force=force, example=example)
    with Store(path, readonly=True) as db:
        run = db.require_run(run_id)
        version = db.resolve_grade_version(run_id, asked)
        trials = db.trials(run_id, grade_version=version)
    if selector.agent is not None or selector.model is not None:
        rows = selected_rows(TrialTable.from_trials(trials), selector, base, source)
        trials = [t for t, keep in zip(trials, rows.tolist(), strict=True) if keep]
    text = EXPORT_FORMATS[fmt](run, trials)
    write_output(
        out, text, option=option, inputs=inputs, force=force, create_folder=True, example=example
    )
    return Exported(len(trials), version)


def export_parquet(
    source: str | PathLike[str],
    out: str | Path,
    *,
    grade_version: int | None = None,
    force: bool = False,
) -> ExportCounts:
    """Write run ``source`` (``DB:RUN``, with an optional ``#...`` selector, read as
    `export_run` reads it) as a Parquet export directory ``out`` (docs/parquet.md),
    with the outcomes and grades of ``#grade=N`` or ``grade_version`` (default: the
    active one). An existing non-empty ``out`` is refused unless ``force``, which
    replaces an earlier export only."""
    from agentgauge.parquet.write import write_parquet

    source = source_text(source)
    base, selector = split_selector(source)
    path, run_id = run_source(base)
    return write_parquet(
        path,
        run_id,
        out,
        grade_version=asked_grade_version(selector, grade_version, path),
        selector=selector,
        source=source,
        force=force,
    )


def source_label(path: Path, run_id: str, selector: Selector, grade_version: int | None) -> str:
    """``DB:RUN`` with the selector that was honoured, spelled as a SOURCE
    (``s.db:m#agent=careful,grade=2``): what an export holds, named so that ``metrics``
    of it counts the same trials."""
    asked = (("agent", selector.agent), ("model", selector.model), ("grade", grade_version))
    parts = [f"{key}={value}" for key, value in asked if value is not None]
    return f"{path}:{run_id}" + ("#" + ",".join(parts) if parts else "")


def run_source(source: str) -> tuple[Path, str]:
    """The store and run of ``source``: ``DB:RUN``, or ``DB`` when the store holds one
    run; refused when it holds several (which one to export is the user's choice) or
    none. A ``#...`` selector is not read here (`split_selector` reads it)."""
    path, run_id = parse_source(source)
    if run_id is not None:
        return path, run_id
    with Store(path, readonly=True) as db:
        runs = [r.run_id for r in db.list_runs()]
    if len(runs) == 1:
        return path, runs[0]
    if not runs:
        raise InputError("this store holds no run to export", file=source)
    recent = ", ".join(quoted(runs[-5:]))
    raise InputError(
        f"this store holds {len(runs)} runs: name the one to export as DB:RUN, e.g. "
        f"{source}:{runs[-1]} (recent runs: {recent})",
        file=source,
    )


# --------------------------------------------------------------------------- output files

#: The files SQLite keeps beside a store while it is open (WAL mode, or a rollback journal).
_STORE_SIBLINGS = ("-wal", "-shm", "-journal")
#: The files the Parquet reader reads beside a trials file, whatever that file's name.
_PARQUET_SIBLINGS = (HEADER_FILE, EVENTS_FILE, GRADES_FILE)


def input_files(sources: Iterable[str]) -> list[Path]:
    """The files a command reads for ``sources`` (SOURCE strings: ``DB:RUN``, a trials
    file, a Parquet export or a glob, with or without a ``#`` selector): each file, the
    files of an export directory, and a store's ``-wal``, ``-shm`` and ``-journal``
    (whether they exist now or not). A ``.parquet`` file is read with the export's other
    files beside it (its header, ``events.parquet``, ``grades.parquet``: whether they exist
    now or not), so those are inputs too. A SOURCE that names nothing adds nothing
    (reading it will say what is wrong)."""
    found: list[Path] = []
    for spec in sources:
        base, _ = split_selector(spec)
        if Path(base).exists():
            paths = [Path(base)]
        elif set("*?[") & set(base):
            paths = [Path(p) for p in glob.glob(base)]
        else:
            try:
                paths = [parse_source(base)[0]]
            except InputError:
                paths = []
        for path in paths:
            files = sorted(path.iterdir()) if path.is_dir() else [path]
            for file in files:
                found.append(file)
                if file.is_file() and is_store(file):
                    found.extend(Path(f"{file}{suffix}") for suffix in _STORE_SIBLINGS)
                elif file.suffix == ".parquet" and not path.is_dir():
                    found.extend(file.parent / name for name in _PARQUET_SIBLINGS)
    return found


def check_output(
    out: str | Path,
    *,
    option: str,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
    what: str = "export",
    example: str = "run.jsonl",
) -> Path:
    """Refuse ``out`` as a destination when writing there would lose something, before any
    work is done; returns the path written (``out`` with its symlinks resolved).

    Always refused, with or without ``force``: a directory; one of ``inputs`` (the same
    path once symlinks are resolved, or the same file by another name, a hard link);
    a block device, socket or anything else that is neither a regular file, a character
    device nor a FIFO. Refused unless ``force``: an existing regular file that is not
    empty. A character device or FIFO (``/dev/stdout``, a pipe) is written to as a
    stream. ``what`` and ``example`` word the refusal of a directory."""
    given = Path(out)
    try:
        target = given.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "symlink loop"
        raise InputError(f"cannot write here: {reason}", file=given, field=option) from None
    try:
        # The given path, not the resolved one: /dev/stdout resolves to a name in /proc
        # that cannot be opened (pipe:[N]) while the link itself can.
        st: os.stat_result | None = os.stat(given)
    except FileNotFoundError:
        st = None  # nothing there, or a symlink to nothing yet: the file it names is made
    except OSError as exc:
        raise InputError(
            f"cannot write here: {exc.strerror or exc}", file=given, field=option
        ) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        # Writing DIR/NAME by itself instead could overwrite another file there.
        raise InputError(
            f"is a directory: give the {what}'s file name (e.g. {given / example})",
            file=given,
            field=option,
        )
    for path in inputs:
        if _same_file(target, st, Path(path)):
            raise InputError(
                f"is one of this command's inputs ({path}); write to another file "
                "(--force never replaces an input)",
                file=given,
                field=option,
            )
    if st is None:
        return target
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return target
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            "exists and is not a regular file, a terminal or a pipe; name a file to write",
            file=given,
            field=option,
        )
    if st.st_size > 0 and not force:
        raise InputError(
            "exists and is not empty; add --force to replace it", file=given, field=option
        )
    return target


def is_stream(out: str | Path) -> bool:
    """Whether ``out`` is a character device or FIFO (``/dev/stdout``, a pipe), which
    `write_output` writes to directly: a command then prints what it did to stderr."""
    try:
        mode = os.stat(out).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _same_file(target: Path, st: os.stat_result | None, other: Path) -> bool:
    try:
        if target == other.resolve():
            return True
    except (OSError, RuntimeError):
        pass
    if st is None:
        return False
    try:
        theirs = os.stat(other)
    except OSError:
        return False
    return (theirs.st_dev, theirs.st_ino) == (st.st_dev, st.st_ino)


def write_output(
    out: str | Path,
    text: str,
    *,
    option: str,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
    create_folder: bool = False,
    what: str = "export",
    example: str = "run.jsonl",
) -> bool:
    """Write ``text`` to ``out`` as UTF-8, refusing what `check_output` refuses (as
    `InputError`, naming ``out`` and ``option``). Returns whether ``out`` was a stream
    (a character device or FIFO, such as ``/dev/stdout``).

    A file is written beside its destination and renamed over it when complete, so a
    failure leaves the old file (or none) and no half-written one; through a symlink,
    the file it points to is replaced and the link kept. A new file gets the usual
    permissions (0666 less the umask); a replaced one keeps its own. A stream is
    written to directly. ``create_folder``: make a missing parent folder first."""
    return stage_output(
        out,
        text,
        option=option,
        inputs=inputs,
        force=force,
        create_folder=create_folder,
        what=what,
        example=example,
    ).commit()


@dataclass
class StagedOutput:
    """A file written in full beside its destination, not yet renamed over it
    (`stage_output`): a command writing several files stages them all, then commits
    them, so that one that cannot be written leaves none of the others written."""

    out: str | Path
    option: str
    target: Path
    tmp: Path | None
    """The staged file; ``None`` for a stream, written to only by `commit`."""
    text: str

    def commit(self) -> bool:
        """Put the staged file in place (or write a stream); whether it was a stream."""
        try:
            if self.tmp is None:
                with open(self.out, "w", encoding="utf-8") as stream:
                    stream.write(self.text)
                return True
            os.replace(self.tmp, self.target)
            self.tmp = None  # in place: nothing left to discard
        except OSError as exc:
            self.discard()
            why = exc.strerror or str(exc)
            raise InputError(
                f"cannot write here: {why}", file=self.out, field=self.option
            ) from None
        return False

    def discard(self) -> None:
        """Remove the staged file (nothing is written)."""
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)


def stage_output(
    out: str | Path,
    text: str,
    *,
    option: str,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
    create_folder: bool = False,
    what: str = "export",
    example: str = "run.jsonl",
) -> StagedOutput:
    """`write_output` up to the last step: ``text`` written in full to a file beside
    ``out`` (its folder made first with ``create_folder``), which `StagedOutput.commit`
    renames over ``out``; a stream is only checked. Refuses what `write_output` refuses,
    and a destination that cannot be written, before anything is in place."""
    inputs = list(inputs)
    target = check_output(
        out, option=option, inputs=inputs, force=force, what=what, example=example
    )
    try:
        st: os.stat_result | None = os.stat(out)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        return StagedOutput(out, option, target, None, text)
    try:
        if create_folder:
            target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _stage(target, text, None if st is None else stat.S_IMODE(st.st_mode))
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and not target.parent.exists():
            # strerror said "No such file or directory", as if the export were read.
            typed = Path(out).parent  # as the user wrote it
            why = (
                f"folder {typed} cannot be made ({why})"
                if create_folder  # it was tried: "make it first" would send the user round
                else f"no folder {typed}: make it first (mkdir -p {shlex.quote(str(typed))})"
            )
        raise InputError(f"cannot write here: {why}", file=out, field=option) from None
    return StagedOutput(out, option, target, tmp, text)


def _stage(target: Path, text: str, mode: int | None) -> Path:
    """``text`` written in full to a new file beside ``target`` (``mode``: the
    permissions of the file it will replace); the file's path. Nothing is left behind
    on failure."""
    data = text.encode("utf-8")
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            # 0o666: the umask applies, as to any file a program creates.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp
