"""Options and output helpers shared by the commands."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from agentgauge.defaults import DEFAULT_STORE
from agentgauge.errors import InputError

StoreOption = Annotated[str, typer.Option("--store", help="SQLite store file.", show_default=True)]
DEFAULT_STORE_PATH = DEFAULT_STORE
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
GradeVersionOption = Annotated[
    int | None,
    typer.Option(
        "--grade-version",
        # No `min`: the API's check speaks for it (`--grade-version: must be a whole
        # number >= 1, got 0`), as it does for `grade_version=0` from Python.
        help="Grade version of each stored run to read (1 = as recorded; default: the "
        "active one). A SOURCE's own #grade=N naming another version is refused.",
    ),
]
SOURCE_HELP = (
    "Trials JSONL file, DB:RUN_ID, or a Parquet export directory (or a glob of them); "
    "add #agent=NAME (and ,model=NAME) to keep one "
    "configuration, #grade=N for a stored run's grade version."
)


class TextConsole(Console):
    """A console that prints each string as `agentgauge.display.terminal_text`: what a
    command prints holds paths, run ids and task ids from the user's data, so a string
    is never read as Rich markup (a "[/]" in a run id ended the command with a
    traceback), ``:emoji:`` codes stay as written, and a control character (an ESC
    that would drive the terminal) is shown as an escape. Line breaks and tabs are
    kept. Styles are given as `rich.text.Text` styles."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        from agentgauge.display import terminal_text  # not for --help: it loads jinja2

        super().print(
            *(terminal_text(o, keep="\n\t") if isinstance(o, str) else o for o in objects),
            **kwargs,
        )


def console() -> Console:
    """Standard output; ``COLUMNS`` or 120 columns when it is not a terminal (logs, CI,
    pipes). A `TextConsole`: strings are text, never markup."""
    width = None if sys.stdout.isatty() else _columns_or(120)
    return TextConsole(highlight=False, soft_wrap=False, width=width, markup=False)


def _columns_or(default: int) -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return default
    return columns if columns >= 20 else default


def err_console() -> Console:
    """Standard error, never wrapped: one message stays one line for CI logs and grep.
    A `TextConsole`, as `console`."""
    return TextConsole(stderr=True, highlight=False, soft_wrap=True, markup=False)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, allow_nan=False, default=str) + "\n")


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@contextmanager
def options_typed(**options: str) -> Iterator[None]:
    """A refusal that names a parameter of the Python call (``grade_version``) names,
    instead, the option the user typed for it (``options``: ``--grade-version``),
    keeping the file it is about: ``r.db: --grade-version: run 'h' has no grade
    version 7 (it has 1, 2)``, where it said ``grade_version:``. A Parquet export's
    header field of that name is the file's own and keeps its name."""
    try:
        yield
    except InputError as exc:
        option = options.get(exc.field or "")
        if option is None or _in_export_header(exc):
            raise
        raise InputError(exc.reason, file=exc.file, line=exc.line, field=option) from None


@contextmanager
def replicates_fit(n_boot: int, default: int) -> Iterator[None]:
    """A bootstrap of more replicates than memory holds (``--bootstrap`` with a few zeros
    too many: every replicate's draws are made at once) refused in one line naming the
    option, exit 2, where numpy's ``MemoryError`` ended the command in a traceback."""
    try:
        yield
    except MemoryError:
        raise InputError(
            f"{n_boot} bootstrap replicates do not fit in memory: give fewer "
            f"({default} by default)",
            field="--bootstrap",
        ) from None


@contextmanager
def run_named(source: str) -> Iterator[None]:
    """A run the store does not hold, refused by the store as ``r.db: run_id: no run
    'x' ...`` (the Python parameter), named instead by the SOURCE the user typed, as
    every command that reads one names it: ``r.db:x: no run 'x' in this store ...``."""
    from agentgauge.store import MissingRun

    try:
        yield
    except MissingRun as exc:
        if exc.field != "run_id":
            raise
        raise MissingRun(exc.reason, file=source) from None


def _in_export_header(exc: InputError) -> bool:
    from agentgauge.parquet import HEADER_FILE

    return exc.file is not None and Path(exc.file).name == HEADER_FILE


def standard_output(option: str) -> str:
    """The path that writes to standard output, for an output option given as ``-`` (as
    Unix tools read it: before, ``-`` wrote a file of that name). Refused, naming
    ``option``, on a system without ``/dev/stdout``."""
    if not os.path.exists("/dev/stdout"):
        raise InputError(
            "this system has no /dev/stdout to write standard output to: give a file",
            file="-",
            field=option,
        )
    return "/dev/stdout"
