"""User-facing errors.

Bad input is a user's problem to fix, not a bug: it gets one sentence naming the
file, line and field, and the CLI exits with code 2. Tracebacks are for bugs.
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import os
import re
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "AgentUnavailable",
    "AgentgaugeError",
    "GateFailed",
    "InputError",
    "Note",
    "RunInterrupted",
    "RunStopped",
    "RunTakenOver",
    "StoreFull",
    "first_error",
    "import_failure",
    "real_number",
    "whole_number",
]


class AgentgaugeError(Exception):
    """Base class for errors agentgauge reports to users without a traceback."""

    exit_code = 2


class Note(UserWarning):
    """Something a user should know that is no error (a store read the slow way, and
    the command that makes it fast): a `warnings` warning from Python, one line
    ``note: MESSAGE`` on stderr from the command line."""


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
        return _one_line(f"{where}{field}{self.reason}")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _one_line(text: str) -> str:
    """``text`` with control characters escaped: a key or file name from the input
    may hold a CR or LF, and the error must stay one line (for CI logs and grep)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class GateFailed(AgentgaugeError):
    """A release gate failed (exit code 1)."""

    exit_code = 1


class StoreFull(AgentgaugeError):
    """The filesystem holding the store is full (SQLite's "database or disk is full"):
    exit code 4. The step that hit it was rolled back, whatever was committed before is
    intact, and the command can be run again (a run resumes) once there is room."""

    exit_code = 4

    def __init__(self, reason: str, *, file: str, cause: str) -> None:
        self.reason = reason
        self.file = file
        self.cause = cause
        """What SQLite said, in short ("database or disk is full")."""
        super().__init__(f"{file}: {reason}")


class AgentUnavailable(AgentgaugeError):
    """The agent failed its check before the run (a program that cannot start, an
    endpoint that does not answer or has no chat route): exit code 2, nothing run."""


class RunEnded(AgentgaugeError):
    """A run stopped before its last cell; what was done is stored and resumable."""

    def __init__(self, reason: str, *, run_id: str, saved: int, total: int) -> None:
        self.reason = reason
        self.run_id = run_id
        self.saved = saved
        """Trials of the run in the store."""
        self.total = total
        """Cells the run has in all (done or not)."""
        super().__init__(reason)


class RunStopped(RunEnded):
    """The circuit breaker stopped a run whose trials were mostly infra errors (exit 3)."""

    exit_code = 3


class RunTakenOver(RunStopped):
    """Another session took the run over, finding this one's heartbeat stale (a session
    paused past the claim's limit): what this one did is saved, the other goes on with
    the rest, and nothing is to be resumed here (exit 3)."""


class RunInterrupted(RunEnded):
    """Ctrl-C (SIGINT) stopped the run (exit 130, the shell's code for SIGINT)."""

    exit_code = 130


def whole_number(
    value: object, field: str, *, least: int = 0, file: str | Path | None = None
) -> int:
    """``value`` as an int if it is a whole number ``>= least`` (a bool is not one);
    else `InputError` naming ``field``, the option the CLI spells it with (``--seed``),
    and ``file`` when the value is about one. The Python twins check what the CLI's
    parser checks with these, so that a ``seed=-1`` or ``trials=2.5`` is refused in one
    line there too."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise InputError(
            f"must be a whole number >= {least}, got {value!r}", file=file, field=field
        )
    return int(value)


def real_number(value: object, field: str) -> float:
    """``value`` as a float if it is a real number (an int or a float; not a bool, not
    a string); else `InputError` naming ``field``. Its range is the caller's to check."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"must be a number, got {value!r}", field=field)
    return float(value)


def as_float(value: int | float) -> float:
    """``float(value)``, with an int too large for a float read as infinity (``float``
    raises OverflowError there), so that a range check refuses it by its value."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def value_kind(value: object) -> str:
    """What a value read from a YAML or JSON file is, as a reason names it: ``a
    mapping``, ``a list`` (``an empty list``), ``text``, ``a boolean``, ``a number``,
    ``a date`` (YAML reads ``2024-06-01`` unquoted as one), ``null``; else the type's
    name. The one wording for the suite's and the retail world's checks."""
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    kinds: tuple[tuple[type | tuple[type, ...], str], ...] = (
        (Mapping, "a mapping"),
        (str, "text"),
        (bool, "a boolean"),
        ((int, float), "a number"),
        (datetime.date, "a date"),
    )
    found = (name for t, name in kinds if isinstance(value, t))
    return next(found, "null" if value is None else type(value).__name__)


def shown_number(value: object) -> str:
    """A number as an error message quotes it: a 400-digit integer is cut short."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} digits)"


def import_failure(exc: Exception) -> str:
    """Why importing a user's module (an agent, an environment factory) failed, for the
    one-line error: ``SyntaxError: '(' was never closed (my_agent.py, line 1)``, or the
    exception and the line of the user's code it was raised at
    (``RuntimeError: no key configured (my_agent.py, line 3)``).

    Importing runs the module's code, which may raise anything; an ImportError keeps
    its own words (``No module named 'x'`` says what it is), any other exception is
    named by its type. Callers catch `Exception` only: Ctrl-C and ``sys.exit()`` at
    import are not bad input and go on up.
    """
    try:
        said = str(exc.msg if isinstance(exc, SyntaxError) else exc)
    except Exception:  # a hostile __str__ in the user's module
        said = "<message could not be read>"
    said = said.strip()[:300]
    text = said if isinstance(exc, ImportError) else f"{type(exc).__name__}: {said}".rstrip(": ")
    if isinstance(exc, SyntaxError):  # the file that does not parse is not in the traceback
        where = (exc.filename, exc.lineno) if exc.filename else None
    else:
        where = _raised_at(exc)
    if where is None:
        return text
    file, line = where
    return f"{text} ({_shown_path(file)}" + (f", line {line})" if line else ")")


def _raised_at(exc: BaseException) -> tuple[str, int | None] | None:
    """The innermost frame of module code run by the import (after the import
    machinery's first frame) that is in a real file: where the user's code raised. None
    when the import failed before running any (a module that is not there)."""
    frames = traceback.extract_tb(exc.__traceback__)
    started = next(
        (i for i, f in enumerate(frames) if f.filename.startswith("<frozen importlib")), None
    )
    if started is None:
        return None
    real = [f for f in frames[started:] if not f.filename.startswith("<")]
    return (real[-1].filename, real[-1].lineno) if real else None


def _shown_path(file: str) -> str:
    """``file`` relative to the current folder when it is under it, as the user would
    type it; else as it is."""
    try:
        relative = os.path.relpath(file)
    except ValueError:  # another drive (Windows)
        return file
    return file if relative.startswith(os.pardir) else relative


def first_error(exc: ValidationError, *, metadata_hint: bool = True) -> tuple[str | None, str]:
    """The first validation error as ``(dotted field path, reason)``.

    ``metadata_hint``: point unknown keys at ``metadata`` (for models that have one).
    """
    err = exc.errors()[0]
    loc = [str(part) for part in err.get("loc", ())]
    # Discriminated unions put the tag in the path (``events.3.tool_call.name``):
    # that is noise for a user, who wrote ``events[3].name``.
    field = ".".join(loc) if loc else None
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        reason = "unknown key" + (" (put free-form data under 'metadata')" if metadata_hint else "")
    elif kind == "missing":
        reason = "required field is missing"
    else:
        # pydantic prefixes messages raised by validators with "Value error, ".
        reason = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if "input" in err and kind not in ("value_error",):
            given = err["input"]
            if isinstance(given, datetime.date):
                # YAML reads an unquoted 2024-01-01 as a date: "(got "2024-01-01")" read as
                # if it were the text the field wants. (A Parquet date column is one too.)
                reason += f" (got a date, {given}; in YAML, quote it: '{given}')"
                return field, reason
            shown = json.dumps(given, default=str)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            reason += f" (got {shown})"
    return field, reason
