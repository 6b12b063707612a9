"""``cmd:PROGRAM ARGS``: an external program as an agent, speaking JSON lines.

Each trial starts the program afresh (no state carries over between trials)
and talks to it over its standard input and output, one JSON object per line
(protocol ``agentgauge.cmd/1``; ``docs/running-agents.md`` has the full
description and ``examples/cmd_agent.py`` a working program).

The harness writes to the program's stdin:

- ``{"type": "start", "protocol": "agentgauge.cmd/1", "task_id", "policy",
  "tools", "instruction", "seed"}`` once, first;
- ``{"type": "tool_result", "id", "content", "is_error"}`` after each tool call;
- ``{"type": "user", "content"}`` after each ``say``: the user's reply, or
  ``null`` when the user has left.

The program writes to its stdout:

- ``{"type": "tool_call", "name", "arguments", "id"?}`` -> a ``tool_result``;
- ``{"type": "say", "content"}`` -> a ``user`` message;
- ``{"type": "control", "decision", "reason"?}``, ``{"type": "answer", "content"}``,
  ``{"type": "confidence", "value"}`` (in [0, 1]), ``{"type": "model_call",
  "model"?, "input_tokens"?, "output_tokens"?, "cost_usd"?, "latency_s"?}`` and
  ``{"type": "cost", "usd"}`` (spend beyond the model calls; ``0`` for a free
  program), none of which gets a reply. A program that sends neither a priced
  ``model_call`` nor a ``cost`` has an unknown cost, never $0;
- ``{"type": "done"}`` when finished, then exits. A non-zero exit after ``done``
  leaves the trial completed (the answer was given) and is recorded in its
  metadata as ``cmd_exit`` and said in a `Note`.

Stdout carries only the protocol; logs go to stderr (its tail is quoted in
errors). A line that is not a JSON object, an unknown ``type``, a missing
field, or an exit before ``done`` is a `ProtocolError` — the agent's error.

The program runs in a process group of its own, which is ended whole when the
trial ends or times out (`agentgauge.agents.process`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import shlex
import warnings
from collections.abc import Sequence
from typing import Any, get_args

from agentgauge.agents.base import AgentError, Session
from agentgauge.agents.process import Program
from agentgauge.errors import AgentUnavailable, InputError, Note, as_float, shown_number
from agentgauge.schema import ControlDecision

__all__ = ["PROTOCOL", "CommandAgent", "ProtocolError"]

PROTOCOL = "agentgauge.cmd/1"
_DECISIONS = frozenset(get_args(ControlDecision))
_LINE_LIMIT = 16 * 1024 * 1024
#: The section of docs/running-agents.md that states the protocol and its limits.
LIMITS_SECTION = "An external program"
#: Seconds a program must stay alive, before it is sent anything, to pass the preflight.
PREFLIGHT_GRACE_S = 1.0
#: Seconds a program has to exit after sending ``done`` before its process group is ended.
_EXIT_AFTER_DONE_S = 5.0


class ProtocolError(AgentError):
    """The program broke the JSON-lines protocol."""


class CommandAgent:
    """Run ``argv`` once per trial and relay its JSON-lines messages to the session."""

    def __init__(
        self,
        argv: Sequence[str] | str,
        *,
        name: str | None = None,
        model: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        # Bad input, not a bug: one line naming the agent, exit 2 (was a ValueError
        # traceback from shlex or from the check below).
        if isinstance(argv, str):
            try:
                self.argv = shlex.split(argv)
            except ValueError as exc:  # "No closing quotation", "No escaped character"
                raise InputError(
                    f"cannot split cmd:{argv} into a program and its arguments ({exc}); "
                    "quote as in a shell: cmd:python 'my agent.py' --flag",
                    field="agent",
                ) from None
        else:
            self.argv = list(argv)
        if not self.argv:
            got = repr(f"cmd:{argv}") if isinstance(argv, str) else "an empty argument list"
            raise InputError(
                "cmd: needs a program after the prefix, e.g. cmd:python examples/cmd_agent.py "
                f"(got {got})",
                field="agent",
            )
        self.name = name or "cmd:" + shlex.join(self.argv)
        self.model = model
        self.env = env
        self.cwd = cwd

    async def preflight(self, grace_s: float = PREFLIGHT_GRACE_S) -> None:
        """Start the program once, send it nothing, and raise `AgentUnavailable` if it
        cannot start or fails (a non-zero exit) within ``grace_s`` seconds: a missing
        script, an import error, a bad flag; every trial would fail the same way. A
        program still waiting for its ``start`` message then is killed, and one that
        exits cleanly is left to the trials (they record what it does); no trial is run."""
        command = shlex.join(self.argv)
        try:
            program = await Program.start(
                self.argv,
                stdout=asyncio.subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                limit=_LINE_LIMIT,
            )
        except OSError as exc:  # not found, not executable, bad cwd
            reason = exc.strerror or type(exc).__name__
            raise AgentUnavailable(f"cmd: cannot start {command}: {reason}") from None
        try:
            code = await program.wait_exit(grace_s)
            if code is None or code == 0:
                return  # alive and waiting for the start message, or a clean exit: it starts
            # The last line of stderr is where a traceback says what went wrong.
            lines = (await program.stderr_text()).splitlines()
        finally:
            await program.stop()
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        said = "".join(c if c.isprintable() else " " for c in last)[:300]
        raise AgentUnavailable(
            f"cmd: {command} exited with code {code} before it was sent anything"
            + (f"; its stderr ends: {said}" if said else "")
        )

    async def __call__(self, session: Session) -> None:
        program = await Program.start(
            self.argv, stdout=asyncio.subprocess.PIPE, env=self.env, cwd=self.cwd, limit=_LINE_LIMIT
        )
        try:
            await self._converse(program, session)
        finally:
            # Also on a timeout or a cancellation: the program's children go with it.
            await program.stop()

    async def _converse(self, program: Program, session: Session) -> None:
        try:
            await self._exchange(program, session)
        except _InputClosed:
            # The program stopped reading: what it printed before (a line that is not
            # JSON, say) or its exit says why better than the broken pipe does.
            while line := await _readline(program):
                _parse(line)
            code = await program.wait_exit(_EXIT_AFTER_DONE_S)
            exited = "" if code is None else f" (it exited with code {code})"
            raise ProtocolError(
                f"program closed its input before the conversation ended{exited}"
                + _tail(await program.stderr_text())
            ) from None

    async def _exited_after_done(self, program: Program, session: Session, code: int) -> None:
        """The answer was given, so the trial stays completed; the exit is kept in its
        metadata (``cmd_exit``: the code and stderr's last line) and said once a run."""
        lines = (await program.stderr_text()).splitlines()
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        session.note("cmd_exit", {"code": code, "stderr": _cut(last, 500) or None})
        warnings.warn(
            f"cmd: {shlex.join(self.argv)} exited with code {code} after sending 'done'; "
            "its trials keep their answers and record the exit in metadata.cmd_exit "
            '(docs/running-agents.md, "An external program")',
            Note,
            stacklevel=2,
        )

    async def _exchange(self, program: Program, session: Session) -> None:
        proc = program.process
        assert proc.stdin is not None
        seed = int(session.rng.integers(0, 2**31 - 1))
        await _send(
            proc,
            {
                "type": "start",
                "protocol": PROTOCOL,
                "task_id": session.task_id,
                "policy": session.policy,
                "tools": session.tools,
                "instruction": session.instruction,
                "seed": seed,
            },
        )
        while True:
            line = await _readline(program)
            if not line:
                code = await program.wait_exit(None)
                raise ProtocolError(
                    f"program exited with code {code} before sending 'done'"
                    + _tail(await program.stderr_text())
                )
            msg = _parse(line)
            kind = msg["type"]
            if kind == "done":
                with contextlib.suppress(ConnectionError):
                    proc.stdin.close()
                # The program's own exit; a child it left holding the pipes is not waited for.
                code = await program.wait_exit(_EXIT_AFTER_DONE_S)
                if code:  # not None (still running: it is ended) nor 0
                    await self._exited_after_done(program, session, code)
                return
            if kind == "tool_call":
                name = _field(msg, "name", str)
                args = msg.get("arguments", {})
                if not isinstance(args, dict):
                    raise ProtocolError(f"tool_call arguments must be an object, got {args!r}")
                outcome = await session.call_tool(name, args)
                await _send(
                    proc,
                    {
                        "type": "tool_result",
                        "id": msg.get("id"),
                        "content": outcome.content,
                        "is_error": outcome.is_error,
                    },
                )
            elif kind == "say":
                reply = await session.say(_field(msg, "content", str))
                await _send(proc, {"type": "user", "content": reply})
            elif kind == "control":
                decision = _field(msg, "decision", str)
                if decision not in _DECISIONS:
                    raise ProtocolError(
                        f"unknown control decision {decision!r} "
                        f"(one of {', '.join(sorted(_DECISIONS))})"
                    )
                reason = msg.get("reason")
                if reason is not None and not isinstance(reason, str):  # was dropped unsaid
                    raise ProtocolError(f"control.reason must be a string, got {reason!r}")
                session.control(decision, reason)
            elif kind == "answer":
                session.answer(_field(msg, "content", str))
            elif kind == "confidence":
                value = msg.get("value")
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ProtocolError(
                        f"confidence needs a number 'value', got {shown_number(value)}"
                    )
                if not 0 <= as_float(value) <= 1:  # an int past any float, too
                    raise ProtocolError(
                        f"confidence.value must be a number in [0, 1], got {shown_number(value)}"
                    )
                session.report_confidence(float(value))
            elif kind == "model_call":
                session.record_model_call(
                    model=_opt(msg, "model", str),
                    input_tokens=_opt(msg, "input_tokens", int),
                    output_tokens=_opt(msg, "output_tokens", int),
                    cost_usd=_opt_number(msg, "cost_usd"),
                    latency_s=_opt_number(msg, "latency_s"),
                )
            elif kind == "cost":
                usd = _opt_number(msg, "usd")
                if usd is None:
                    raise ProtocolError(f"cost needs a non-negative number 'usd', got {msg!r}")
                session.record_cost(usd)
            else:
                raise ProtocolError(f"unknown message type {kind!r}")


async def _send(proc: asyncio.subprocess.Process, msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(msg, default=str).encode() + b"\n")
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        raise _InputClosed from None


class _InputClosed(Exception):
    """The program closed its stdin (`CmdAgent._converse` says why)."""


def _tail(stderr: str, keep: int = 500) -> str:
    """What the program said on stderr, for its error: the last line first (a Python
    program's traceback ends with the exception, which is the story; a summary that
    cuts the message keeps it), then the end of the whole text."""
    text = stderr.strip()
    if not text:
        return ""
    last = text.splitlines()[-1].strip()
    if last == text:
        return f"; stderr: {_cut(text, keep)}"
    return f"; stderr's last line: {_cut(last, keep)}; stderr ends: {_cut(text, keep)}"


def _cut(text: str, keep: int) -> str:
    return text if len(text) <= keep else "..." + text[-keep:]


async def _readline(program: Program) -> bytes:
    """The program's next stdout line; one past the line limit is the program's
    protocol error, named as such (asyncio says "Separator is not found")."""
    try:
        return await program.readline()
    except ValueError:
        raise ProtocolError(
            f"stdout line longer than {_LINE_LIMIT // 2**20} MiB: each message is one JSON "
            f"line of at most {_LINE_LIMIT // 2**20} MiB (docs/running-agents.md, "
            f'"{LIMITS_SECTION}")'
        ) from None


def _parse(line: bytes) -> dict[str, Any]:
    try:
        msg = json.loads(line)
    except UnicodeDecodeError as exc:  # JSON, perhaps, but not in UTF-8
        raise ProtocolError(
            f"stdout line: byte {exc.start} is not valid UTF-8 (each line must be UTF-8 "
            f"JSON): {line[:120]!r}"
        ) from None
    except json.JSONDecodeError:
        raise ProtocolError(f"stdout line is not JSON: {line[:120]!r}") from None
    except RecursionError:
        raise ProtocolError(f"stdout line is JSON nested too deeply: {line[:120]!r}") from None
    except ValueError as exc:  # an integer past Python's digit limit (sys.int_info)
        raise ProtocolError(
            f"stdout line has a number that cannot be read ({exc}): {line[:60]!r}"
        ) from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ProtocolError(f"expected an object with a 'type', got {line[:120]!r}")
    return msg


def _field(msg: dict[str, Any], key: str, kind: type) -> Any:
    value = msg.get(key)
    if not isinstance(value, kind):
        raise ProtocolError(f"{msg['type']} needs {key!r} ({kind.__name__}), got {value!r}")
    return value


def _opt(msg: dict[str, Any], key: str, kind: type) -> Any:
    value: Any = msg.get(key)
    if value is None:
        return None
    negative = isinstance(value, int) and value < 0
    if not isinstance(value, kind) or isinstance(value, bool) or negative:
        raise ProtocolError(f"{msg['type']}.{key} must be a valid {kind.__name__}, got {value!r}")
    return value


def _opt_number(msg: dict[str, Any], key: str) -> float | None:
    value = msg.get(key)
    if value is None:
        return None
    number = as_float(value) if isinstance(value, int | float) else math.nan
    if isinstance(value, bool) or not (0 <= number < math.inf):
        raise ProtocolError(
            f"{msg['type']}.{key} must be a finite non-negative number, got {shown_number(value)}"
        )
    return number
