"""The ``agentgauge`` command: a thin typer layer over the Python API.

Each command lives in its own module and registers itself on `app`. Errors a
user can fix (`AgentgaugeError`) print one line to stderr and exit with their
code (2 for bad input, 1 for a failed gate); anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import sqlite3
import sys

import typer

from agentgauge.display import visible
from agentgauge.errors import AgentgaugeError

app = typer.Typer(
    name="agentgauge",
    help="Measure AI agents honestly: run trials, grade them, report metrics with error bars.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Markdown, not rich markup: under rich a "[base]" in a help text was read as a
    # style tag and dropped, and a docstring's line breaks were kept as breaks, which
    # left ragged half-lines in the command list. (Markdown drops "<...>": not used.)
    rich_markup_mode="markdown",
)


@app.callback()
def _group() -> None:
    # A callback keeps the app a group of commands when only one is registered (typer
    # runs a lone command without its name otherwise): `main` registers only the
    # command it is given.
    pass


#: A command whose module is named otherwise (``import`` is a Python keyword).
_MODULE_OF = {"import": "imports"}


def _command_modules() -> list[str]:
    import pkgutil

    return [info.name for info in pkgutil.iter_modules(__path__) if info.name not in _NOT_COMMANDS]


_NOT_COMMANDS = frozenset({"common", "span_options"})


def _register_commands(argv: list[str] | None = None) -> None:
    """Import the module of the command ``argv`` names (importing registers it on
    `app`), or every command module when it names none we know: ``--help``, no
    command, or a misspelt one, which click then lists or corrects.

    Importing all of them costs a second (the metrics, scipy, aiohttp, the viewer);
    one command needs only its own."""
    import importlib

    modules = _command_modules()
    name = argv[0] if argv else None
    module = _MODULE_OF.get(name, name) if name and not name.startswith("-") else None
    for each in [module] if module in modules else modules:
        importlib.import_module(f"{__name__}.{each}")


def _tolerate_any_encoding() -> None:
    """A character the output's encoding lacks (``PYTHONIOENCODING=ascii``, a Latin-1
    terminal) is written as ``?`` instead of ending the command with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def main() -> None:
    """Console entry point."""
    _tolerate_any_encoding()
    _register_commands(sys.argv[1:])

    faults = sys.modules.get("agentgauge.store.faults")  # not imported just for this:
    if faults is not None:  # the store package costs start-up time `--help` need not pay
        faults.forget_opened()  # another command in this process opened stores
    try:
        app()  # standalone: click reports usage errors itself, with exit code 2
    except AgentgaugeError as exc:
        # The message may quote the data (a name, a line of a file): controls shown, not run.
        print(f"agentgauge: error: {visible(exc, keep=chr(10))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except sqlite3.DatabaseError as exc:  # a damaged or locked store, found mid-command
        from agentgauge.store.faults import database_error

        error = database_error(exc)
        if error is None:
            raise
        print(f"agentgauge: error: {visible(error, keep=chr(10))}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:  # a second Ctrl-C during a run, or one outside it
        print("agentgauge: interrupted", file=sys.stderr)
        sys.exit(130)
