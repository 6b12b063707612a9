"""User-facing errors.

Bad input is a user's problem to fix, not a bug: it gets one sentence naming the
file, line and field, and the CLI exits with code 2. Tracebacks are for bugs.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["AgentgaugeError", "GateFailed", "InputError"]


class AgentgaugeError(Exception):
    """Base class for errors agentgauge reports to users without a traceback."""

    exit_code = 2


class InputError(AgentgaugeError):
    """Bad input: a file, line and field that a user can go and fix.

    ``str(error)`` is ``FILE:LINE: field: reason`` (parts that are unknown are
    left out), the format editors and CI annotators understand.
    """

    def __init__(
        self,
        reason: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.reason}"


class GateFailed(AgentgaugeError):
    """A release gate failed (exit code 1)."""

    exit_code = 1
