"""Running a suite-named callable with a deadline, in a worker process.

A thread cannot be stopped, so a callable that loops forever would hold the
grading (and the run) for good; the callable therefore runs in a separate
Python process (`agentgauge.graders._exec_worker`), which is killed when a call
outlives its deadline and started again for the next call. One worker serves
every call until then, so a run pays Python's start-up once, not per call.

Every way a call can end is an `ExecOutcome`: ``returned`` (with the result as
JSON), ``raised`` (exception class and message), ``timeout``, ``crashed`` (the
worker died: ``os._exit``, a signal), ``unserialisable`` (a result JSON cannot
hold: a set, NaN, an object), ``too_large`` (a result over `MAX_OUTPUT`
characters of JSON), or ``unresolvable`` (the suite names a callable that cannot
be imported).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["MAX_OUTPUT", "MEMORY_LIMIT", "ExecOutcome", "Executor", "import_path", "run_callable"]

#: Characters of JSON a result may have; a larger one is failed, not compared.
MAX_OUTPUT = 1_000_000
#: The worker's address-space limit: a callable that allocates beyond it raises MemoryError.
MEMORY_LIMIT = 4 * 2**30

Outcome = Literal[
    "returned", "raised", "timeout", "crashed", "unserialisable", "too_large", "unresolvable"
]

_WORKER = Path(__file__).with_name("_exec_worker.py")


@dataclass(frozen=True)
class ExecOutcome:
    """How one call ended."""

    outcome: Outcome
    """``returned``, ``raised``, ``timeout``, ``crashed``, ``unserialisable``,
    ``too_large`` or ``unresolvable``."""
    result: Any = None
    """The returned value as JSON (``returned`` only)."""
    error: str | None = None
    """What went wrong, e.g. ``ValueError: unknown unit 'parsec'``."""


class Executor:
    """One worker process at a time, started on the first call; thread-safe."""

    def __init__(self, *, max_output: int = MAX_OUTPUT, memory_bytes: int = MEMORY_LIMIT) -> None:
        self._max_output = max_output
        self._memory = memory_bytes
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._path: list[str] = []
        self._owner = os.getpid()

    def call(self, ref: str, arguments: dict[str, Any], timeout_s: float) -> ExecOutcome:
        """Run ``ref(**arguments)``; stop it after ``timeout_s`` seconds."""
        self._forget_if_forked()
        with self._lock:
            proc = self._start()
            message: dict[str, Any] = {"ref": ref, "arguments": arguments}
            path = import_path()
            if path != self._path:
                # The import path changed since the worker started (a folder added, the
                # current folder moved): the callable resolves as it would here now.
                message["path"] = self._path = path
            try:
                request = json.dumps(message, default=str)
            except (TypeError, ValueError) as exc:
                return ExecOutcome("raised", error=f"arguments are not JSON: {exc}")
            assert proc.stdin is not None
            try:
                proc.stdin.write(request + "\n")
                proc.stdin.flush()
            except OSError as exc:
                self._stop()
                return ExecOutcome("crashed", error=f"the worker process is gone ({exc})")
            try:
                line = self._replies.get(timeout=timeout_s)
            except queue.Empty:
                self._stop()
                return ExecOutcome("timeout", error=f"still running after {timeout_s:g} s")
            if line is None:
                code = self._stop()
                return ExecOutcome("crashed", error=f"the worker process exited ({code})")
        return _outcome(line)

    def close(self) -> None:
        """Stop the worker (the next call starts another)."""
        self._forget_if_forked()
        with self._lock:
            self._stop()

    def _forget_if_forked(self) -> None:
        # A forked child (multiprocessing, a Ray worker) inherits the parent's worker,
        # but not the thread that reads its replies, and maybe a lock another thread
        # held: it starts afresh and leaves the parent's worker alone.
        if self._owner != os.getpid():
            self._owner = os.getpid()
            self._lock = threading.Lock()
            self._proc = None
            self._path = []

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        # -I: no user site, no PYTHON* variables and no script folder on the path;
        # the worker gets this process's import path instead, so a callable resolves
        # as it would here.
        proc = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        assert proc.stdin is not None and proc.stdout is not None
        self._path = import_path()
        header = {"path": self._path, "max_output": self._max_output, "memory_bytes": self._memory}
        proc.stdin.write(json.dumps(header) + "\n")
        proc.stdin.flush()
        self._replies = queue.Queue()
        threading.Thread(
            target=_read_replies, args=(proc, self._replies, self._max_output), daemon=True
        ).start()
        self._proc = proc
        return proc

    def _stop(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return code


def import_path() -> list[str]:
    """Where the worker looks for a callable's module: this process's import path,
    then the current folder (last, as `agentgauge.agents.resolve` finds a user's
    agent). The suite loader looks there too, so what loads is what runs."""
    return [*sys.path, str(Path.cwd())]


def _read_replies(proc: subprocess.Popen[str], replies: queue.Queue[str | None], cap: int) -> None:
    assert proc.stdout is not None
    try:
        while True:
            # The worker caps results itself; a longer line is a broken worker.
            line = proc.stdout.readline(cap + 4096)
            if not line.endswith("\n"):
                break
            replies.put(line)
    except (OSError, ValueError):
        pass
    replies.put(None)


def _outcome(line: str) -> ExecOutcome:
    try:
        reply = json.loads(line)
    except ValueError:
        return ExecOutcome("crashed", error="the worker answered something that is not JSON")
    kind = reply.get("outcome") if isinstance(reply, dict) else None
    if kind == "returned":
        return ExecOutcome("returned", result=reply.get("result"))
    if kind == "too_large":
        return ExecOutcome("too_large", error=f"{reply.get('size')} characters of JSON")
    if kind in ("raised", "unserialisable", "unresolvable"):
        return ExecOutcome(kind, error=f"{reply.get('type')}: {reply.get('message')}")
    return ExecOutcome("crashed", error=f"unexpected reply {line[:200]!r}")


_SHARED = Executor()
atexit.register(_SHARED.close)


def run_callable(ref: str, arguments: dict[str, Any], timeout_s: float) -> ExecOutcome:
    """`Executor.call` on the process's shared worker."""
    return _SHARED.call(ref, arguments, timeout_s)
