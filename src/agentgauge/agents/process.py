"""A program run for a trial, in its own process group, ended without waiting on its pipes.

Why not plain `asyncio.create_subprocess_exec` and ``await proc.wait()``:

- a program that starts a child of its own (a server, a shell pipeline, ``sleep 300``)
  passes its stdout and stderr on to it. ``Process.wait()`` returns only once every
  pipe is closed, so it waits for the child, which may outlive the trial by minutes;
  killing the program alone leaves the child running, an orphan;
- a subprocess transport that is never closed is closed by the garbage collector,
  which may run after the event loop is gone: "RuntimeError: Event loop is closed"
  at exit.

So `Program` starts the program as the leader of a new session (its own process
group, which its children join unless they leave it on purpose), watches for the
program's own exit rather than for its pipes, and `Program.stop` ends the whole
group (SIGTERM, a short grace, then SIGKILL) and closes the transport itself.
POSIX only, like the ``cmd:`` adapter itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Any

__all__ = ["KILL_GRACE_S", "Program"]

#: Seconds the process group has between SIGTERM and SIGKILL.
KILL_GRACE_S = 1.0
#: Seconds to collect what an exited program wrote: it is in the pipe already, so
#: this is only the loop's turn to read it (a descendant may keep the pipe open, and
#: then end-of-file never comes).
_AFTER_EXIT_S = 0.5
#: How often the group is checked for members while it has its grace.
_POLL_S = 0.02
_STDERR_TAIL = 4096


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol, which also says when the program itself has exited."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class Program:
    """One run of ``argv``: stdin and stdout as streams, the tail of stderr kept."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.process = asyncio.subprocess.Process(transport, protocol, asyncio.get_running_loop())
        self.pid: int = transport.get_pid()
        self.stderr_tail = bytearray()
        self._drain = asyncio.ensure_future(_drain(protocol.stderr, self.stderr_tail))

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        stdout: int,
        env: dict[str, str] | None,
        cwd: str | None,
        limit: int,
    ) -> Program:
        """Start ``argv`` as the leader of a new process group (`OSError` if it cannot)."""
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(limit, loop),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=stdout,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        return cls(transport, protocol)

    @property
    def returncode(self) -> int | None:
        """The program's exit code once it has exited (its descendants aside)."""
        code: int | None = self._transport.get_returncode()
        return code

    async def wait_exit(self, within: float | None) -> int | None:
        """The program's exit code, waiting at most ``within`` seconds (``None``: if it
        is still running then). Its pipes are not waited for."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._protocol.exited), within)
        return self.returncode

    async def readline(self) -> bytes:
        """The next line of stdout; ``b""`` at end of file or once the program has exited
        and the lines it wrote have been read."""
        stdout = self.process.stdout
        assert stdout is not None
        exited = self._protocol.exited
        read = asyncio.ensure_future(stdout.readline())
        try:
            if not exited.done():
                either: set[asyncio.Future[Any]] = {read, exited}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():
                await asyncio.wait({read}, timeout=_AFTER_EXIT_S)
            return read.result() if read.done() else b""
        finally:
            read.cancel()

    async def stderr_text(self) -> str:
        """The last few KB of stderr, once the exited program's last writes are read."""
        await asyncio.wait({self._drain}, timeout=_AFTER_EXIT_S)
        return self.stderr_tail.decode("utf-8", "replace")

    async def stop(self) -> None:
        """End the program and every process in its group, and close the transport.

        SIGTERM first, so a program may clean up; SIGKILL for whatever is left after
        `KILL_GRACE_S`. Safe to call when everything has exited already, and during a
        cancellation (the SIGKILL and the close happen whatever interrupts the grace).
        """
        try:
            if _signal_group(self.pid, signal.SIGTERM):
                await self._group_gone(KILL_GRACE_S)
        finally:
            _signal_group(self.pid, signal.SIGKILL)
            self._transport.close()
            self._drain.cancel()
        # Reap the leader now, while the loop that watches it still runs.
        await self.wait_exit(KILL_GRACE_S)

    async def _group_gone(self, within: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while _signal_group(self.pid, 0) and loop.time() < deadline:
            await asyncio.sleep(_POLL_S)


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the process group; ``False`` when no process is left in it."""
    # The leader's pid names the group. It cannot be reused for another process while
    # any member of the group is alive, so this never signals a stranger.
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its user id: nothing more we may do
        return False
    return True


async def _drain(stream: asyncio.StreamReader | None, tail: bytearray) -> None:
    # Read stderr continuously so a chatty program never blocks on a full pipe;
    # keep only the last few KB for error messages.
    if stream is None:
        return
    with contextlib.suppress(Exception):
        while chunk := await stream.read(65536):
            tail.extend(chunk)
            del tail[:-_STDERR_TAIL]
