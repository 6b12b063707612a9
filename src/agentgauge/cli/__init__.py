"""The ``agentgauge`` command: a thin typer layer over the Python API (SPEC 7).

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


def main() -> None:
    """Console entry point."""
    # Importing the command modules registers them on `app`.
    from agentgauge.cli import imports, metrics, runs  # noqa: F401
    from agentgauge.cli import run as _run  # noqa: F401

    try:
        app()  # standalone: click reports usage errors itself, with exit code 2
    except AgentgaugeError as exc:
        print(f"agentgauge: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
