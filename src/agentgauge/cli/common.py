"""Options and output helpers shared by the commands."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from agentgauge.defaults import DEFAULT_STORE

StoreOption = Annotated[str, typer.Option("--store", help="SQLite store file.", show_default=True)]
DEFAULT_STORE_PATH = DEFAULT_STORE
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
GradeVersionOption = Annotated[
    int | None,
    typer.Option(
        "--grade-version",
        min=1,
        help="Grade version of each stored run to read (1 = as recorded; default: the "
        "active one). A SOURCE's own #grade=N wins.",
    ),
]
SOURCE_HELP = (
    "Trials JSONL file, DB:RUN_ID, or a Parquet export directory (or a glob of them); "
    "add #agent=NAME (and ,model=NAME) to keep one "
    "configuration, #grade=N for a stored run's grade version."
)


def console() -> Console:
    """Standard output; ``COLUMNS`` or 120 columns when it is not a terminal (logs, CI, pipes).

    Strings are printed as they are, never read as Rich markup: what a command prints
    holds paths, run ids and task ids, and a "[/]" in one would end it with a
    traceback (styles are given as `rich.text.Text` styles, or ``markup=True`` on a
    line that holds none of the user's text)."""
    width = None if sys.stdout.isatty() else _columns_or(120)
    return Console(highlight=False, soft_wrap=False, width=width, markup=False)


def _columns_or(default: int) -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return default
    return columns if columns >= 20 else default


def err_console() -> Console:
    """Standard error, never wrapped: one message stays one line for CI logs and grep.
    No markup, as for `console`."""
    return Console(stderr=True, highlight=False, soft_wrap=True, markup=False)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, allow_nan=False, default=str) + "\n")


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]
