"""The ``agentgauge`` command: a thin typer layer over the Python API.

Each command lives in its own module and registers itself on `app`. Errors a
user can fix (`AgentgaugeError`) print one line to stderr and exit with their
code (2 for bad input, 1 for a failed gate); anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import sys

import typer

from agentgauge.errors import AgentgaugeError

app = typer.Typer(
    name="agentgauge",
    help="Measure AI agents honestly: run trials, grade them, report metrics with error bars.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register_commands() -> None:
    """Import every command module in this package; importing registers it on `app`."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if info.name != "common":
            importlib.import_module(f"{__name__}.{info.name}")


def main() -> None:
    """Console entry point."""
    _register_commands()

    try:
        app()  # standalone: click reports usage errors itself, with exit code 2
    except AgentgaugeError as exc:
        print(f"agentgauge: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # a second Ctrl-C during a run, or one outside it
        print("agentgauge: interrupted", file=sys.stderr)
        sys.exit(130)
