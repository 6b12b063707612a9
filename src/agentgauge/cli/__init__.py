"""The ``agentgauge`` command: a thin typer layer over the Python API.

Each command lives in its own module and registers itself on `app`. Errors a
user can fix (`AgentgaugeError`) print one line to stderr and exit with their
code (2 for bad input, 1 for a failed gate); anything else is a bug and keeps
its traceback. Output whose reader went away (``agentgauge show ... | head -1``)
ends the command quietly with 141, as a shell reports a process SIGPIPE ended.
"""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any


def _interrupted_while_loading(signum: int, frame: object) -> None:
    """Ctrl-C while the command's modules load (typer, rich, jinja2 here; the command's
    own in `main`): a line and 130, where a traceback from deep inside an import came
    out (Python's handler raises `KeyboardInterrupt` wherever the import stands)."""
    print("agentgauge: interrupted", file=sys.stderr)
    raise SystemExit(130)


def _quiet_ctrl_c() -> object:
    """Install `_interrupted_while_loading` for SIGINT, if Python's own handler is the
    one in place (never over a program's own, nor off the main thread); returns the
    handler it replaced, or ``None``."""
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupted_while_loading)
            return signal.default_int_handler
    except ValueError:  # not the main thread: signals are not ours to set
        pass
    return None


_LOADING = _quiet_ctrl_c()

import typer  # noqa: E402
from typer.core import TyperGroup  # noqa: E402

from agentgauge.display import visible  # noqa: E402
from agentgauge.errors import AgentgaugeError  # noqa: E402

#: The exit code of a command whose output pipe closed: 128 + SIGPIPE (13), what a
#: shell reports for a program that signal ended (Python ignores SIGPIPE, so a write
#: to a closed pipe raises `BrokenPipeError` instead).
PIPE_CLOSED = 141


#: Writes that failed for want of room or a working device: the user's to fix (free
#: space, another file), where any other `OSError` reaching `main` is a bug. They exit
#: `DISK_FULL`, as a full disk under the store does (`agentgauge.errors.StoreFull`).
_CANNOT_WRITE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
DISK_FULL = 4


class _PipeClosed(Exception):
    """A write to stdout or stderr found the reader gone. Not an `OSError`: click would
    take an EPIPE for its own and exit 1, the code of a failed gate, without a word."""


@contextmanager
def _pipe_closes() -> Iterator[None]:
    """A closed pipe (EPIPE: `BrokenPipeError`, or an `OSError` saying so) raised in
    the block comes out as `_PipeClosed`."""
    try:
        yield
    except OSError as exc:
        if _closed_pipe(exc):
            raise _PipeClosed from exc
        raise


def _closed_pipe(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a write that found its pipe's reader gone (EPIPE)."""
    return isinstance(exc, OSError) and exc.errno in (errno.EPIPE, errno.ESHUTDOWN)


def _raise_broken_pipe(console: Any) -> None:
    """In place of `rich.console.Console.on_broken_pipe`, which exits with 1 (the code
    of a failed gate): the error goes on to `main`, as any closed pipe's does."""
    console.quiet = True
    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


@contextmanager
def _rich_pipes_raise() -> Iterator[None]:
    """While inside, every rich console (the commands', typer's help) raises on a
    closed pipe instead of exiting."""
    from rich.console import Console

    previous = Console.on_broken_pipe
    Console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Console.on_broken_pipe = previous  # type: ignore[method-assign]


class _Interrupted(Exception):
    """Ctrl-C in a command that did not handle it itself. Not a `KeyboardInterrupt`:
    typer turns that into a silent exit 130, and `main` says it was interrupted."""


class _Misused(Exception):
    """A usage error click found (an unknown option or command, a missing argument, a
    value an option refuses), carried past typer to `main`, which prints it as one
    line: typer drew it as a usage line, a hint and a boxed panel."""


def _usage_errors() -> tuple[type[Exception], ...]:
    """Click's usage-error class: typer 0.2x carries its own copy of click, earlier
    versions use click itself."""
    import importlib

    found: list[type[Exception]] = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        with suppress(ImportError, AttributeError):
            found.append(importlib.import_module(name).UsageError)
    return tuple(found)


_USAGE_ERRORS = _usage_errors()


@contextmanager
def _interrupts_carried() -> Iterator[None]:
    try:
        yield
    except KeyboardInterrupt as exc:
        raise _Interrupted from exc
    except _USAGE_ERRORS as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command: its help
            raise
        ctx = getattr(exc, "ctx", None)
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        message = message.strip()
        if ctx is not None and message.endswith("?"):  # "Did you mean 'run', 'runs'?"
            message = f"{message} See '{ctx.command_path} --help'."
        elif ctx is not None:
            message = f"{message.rstrip('.')}; see '{ctx.command_path} --help'"
        raise _Misused(message) from exc


class _Group(TyperGroup):
    """The command group, with a closed pipe and a Ctrl-C carried past click to `main`:
    parsing (``--help`` is printed there) and every command's body."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _pipe_closes(), _interrupts_carried():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _pipe_closes(), _interrupts_carried():
            return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The command list boxed at any width (`_help_markup` aside): its names never
        wrap and its summaries wrap whole, where click's plain list cuts each summary
        at "..."."""
        from typer import rich_utils

        rich_utils.rich_format_help(obj=self, ctx=ctx, markup_mode="markdown")


app = typer.Typer(
    name="agentgauge",
    cls=_Group,
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


#: The codec error handler of stdout and stderr (`_tolerate_any_encoding`).
_AS_WIDE = "agentgauge.question-marks"


def _question_marks(exc: UnicodeError) -> tuple[str, int]:
    """A ``?`` per column of each character the encoding lacks (at least one): Rich laid
    the table out with 日 two columns wide, so a single ``?`` shifted every border after
    it (``| ?mega-?????-?? |`` one column short per character)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    from rich.cells import cell_len

    bad = exc.object[exc.start : exc.end]
    return "".join("?" * max(1, cell_len(ch)) for ch in bad), exc.end


def _tolerate_any_encoding() -> None:
    """A character the output's encoding lacks (``PYTHONIOENCODING=ascii``, a Latin-1
    terminal) is written as ``?`` (``??`` for one two columns wide) instead of ending
    the command with a traceback."""
    import codecs

    codecs.register_error(_AS_WIDE, _question_marks)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=_AS_WIDE)


def _leave_quietly() -> None:
    """Point a stream whose pipe closed at devnull, so that the flush at exit does not
    fail again (and print "Exception ignored ... BrokenPipeError"), as Python's
    documentation of `signal` recommends ("Note on SIGPIPE"). A stream that still
    flushes keeps its output (stdout to a file while stderr's reader went away)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):  # not a file descriptor (a test's StringIO)
                pass


#: The narrowest terminal typer's boxed help fits without cutting an option's name
#: (``run --help`` read ``--include-held…`` at 80 columns, ``--concurr…`` at 60): Rich
#: shrinks its columns alike, with an ellipsis. Narrower, click's plain help, which
#: wraps its text and never cuts.
RICH_HELP_COLUMNS = 100


def _help_markup() -> str | None:
    """typer's markup mode for this terminal: ``markdown`` (boxed help) where it fits,
    ``None`` (click's plain help) below `RICH_HELP_COLUMNS`, measured as typer does
    (``TERMINAL_WIDTH``, then ``COLUMNS``, then the terminal)."""
    import shutil

    try:
        columns = int(os.environ.get("TERMINAL_WIDTH", ""))
    except ValueError:
        columns = shutil.get_terminal_size().columns
    return "markdown" if columns >= RICH_HELP_COLUMNS else None


def _run_app() -> None:
    markup = app.rich_markup_mode
    app.rich_markup_mode = _help_markup()  # type: ignore[assignment]
    try:
        with _rich_pipes_raise():
            # One name however it was started (`python -m agentgauge` too), as the
            # messages that name a command's --help give it.
            app(prog_name="agentgauge")
    finally:
        app.rich_markup_mode = markup  # `app` as it was, for a caller that runs it itself
        # What is still buffered is written now, where a closed pipe is told apart; at
        # exit it would print "Exception ignored ... BrokenPipeError" and exit 120.
        with _pipe_closes():
            sys.stdout.flush()


@contextmanager
def _notes_on_stderr() -> Iterator[None]:
    """A `agentgauge.errors.Note` warned while inside (a stale store, a judge of the
    evaluated model, abandoned agent threads) is one line on stderr, ``note: MESSAGE``,
    once a command however often it is warned (a judge checks each trial it grades);
    any other warning is shown as Python shows it."""
    import threading
    import warnings

    from agentgauge.errors import Note

    shown = warnings.showwarning
    said: set[str] = set()
    lock = threading.Lock()  # graders warn from their worker threads

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if not issubclass(category, Note):
            shown(message, category, *args, **kwargs)
            return
        line = f"note: {visible(message)}"
        with lock:
            if line in said:
                return
            said.add(line)
        print(line, file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", Note)
        warnings.showwarning = show
        yield


def main() -> None:
    """Console entry point."""
    _tolerate_any_encoding()
    _quiet_ctrl_c()  # again: another command in this process may have run meanwhile
    _register_commands(sys.argv[1:])
    _loaded()

    faults = sys.modules.get("agentgauge.store.faults")  # not imported just for this:
    if faults is not None:  # the store package costs start-up time `--help` need not pay
        faults.forget_opened()  # another command in this process opened stores
    try:
        with _notes_on_stderr():
            _run_app()
    except _PipeClosed:
        # The reader had what it wanted (`| head -1`): no message, no traceback.
        _leave_quietly()
        sys.exit(PIPE_CLOSED)
    except AgentgaugeError as exc:
        if _closed_pipe(exc.__context__):
            # `export --jsonl /dev/stdout | head -1`: the writer's refusal ("cannot write
            # here: Broken pipe", exit 2) is the reader going away, as for any output.
            _leave_quietly()
            sys.exit(PIPE_CLOSED)
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
    except _Misused as exc:
        print(f"agentgauge: error: {visible(exc, keep='')}", file=sys.stderr)
        sys.exit(2)
    except (_Interrupted, KeyboardInterrupt):  # a Ctrl-C no command handled itself
        print("agentgauge: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:
        if exc.errno not in _CANNOT_WRITE:
            raise
        # Output to a full disk (`> /dev/full`, a quota): one line, not a traceback; the
        # output left unwritten is dropped, not tried again (and failed again) at exit.
        _leave_quietly()
        where = f"{exc.filename}: " if exc.filename else "the output: "
        print(f"agentgauge: error: {visible(where)}cannot write ({exc.strerror})", file=sys.stderr)
        sys.exit(DISK_FULL)


def _loaded() -> None:
    """Python's own Ctrl-C handler again, once the modules are loaded: the commands
    handle `KeyboardInterrupt` themselves (a run saves what it has and says how to
    resume)."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)


if _LOADING is not None:
    _loaded()
