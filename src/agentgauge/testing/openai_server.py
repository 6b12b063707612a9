"""A real chat-completions server on 127.0.0.1, for tests and benchmarks.

A hosted model is the one boundary tests cannot reach, so they talk to this
instead: a real HTTP/1.1 server (asyncio, keep-alive) speaking the OpenAI
chat-completions protocol over a real socket. What it answers is decided by a
*responder*, a function of the parsed request body:

    def responder(request: dict) -> Reply: ...

A `Reply` carries an HTTP status, a JSON body (or raw text, to test parsers)
and an optional delay. Helpers build the common bodies: `completion` (text
and/or tool calls with usage) and `error_body`.

    with OpenAIServer(responder) as server:
        agent = OpenAIAgent("fake-model", base_url=server.base_url)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OpenAIServer", "Reply", "completion", "error_body", "tool_call"]


@dataclass
class Reply:
    """What the server sends for one request."""

    status: int = 200
    body: Any = None
    """A JSON-able object, or a ``str`` sent verbatim (for malformed responses)."""
    delay_s: float = 0.0
    """Seconds to wait before answering (latency, or a hang past a client timeout)."""
    headers: dict[str, str] = field(default_factory=dict)
    constant: bool = False
    """Never changed once made: the server may encode it once and resend the bytes."""


Responder = Callable[[dict[str, Any]], Reply]

_ids = itertools.count(1)


def tool_call(
    name: str, arguments: dict[str, Any] | str, call_id: str | None = None
) -> dict[str, Any]:
    """One tool call in the assistant message (``arguments`` may be raw text)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    model: str = "fake-model",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """A chat-completions response body with usage."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_body(message: str, kind: str = "server_error") -> dict[str, Any]:
    """An OpenAI-style error object."""
    return {"error": {"message": message, "type": kind, "code": None}}


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class OpenAIServer:
    """Serve ``responder`` on ``127.0.0.1`` in a background thread.

    ``requests`` keeps every parsed request body in arrival order, so tests can
    check what a client sent (retries included).
    """

    def __init__(self, responder: Responder, *, port: int = 0, record: bool = True) -> None:
        self.responder = responder
        self.record = record
        """Keep each request in `requests` (off for long benchmark runs)."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        """Each request's headers (lower-case names), parallel to ``requests``."""
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._conns: set[_Connection] = set()
        self._wire: dict[tuple[int, bool], tuple[Reply, bytes]] = {}

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        """Base URL for an OpenAI client (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(target=self._run, name="openai-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._server is None:
            raise RuntimeError("fake OpenAI server failed to start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._shutdown)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _shutdown(self) -> None:
        # Close kept-alive client connections first, so no reply outlives the loop.
        assert self._server is not None and self._loop is not None
        self._server.close()
        for conn in list(self._conns):
            conn.close()
        loop = self._loop
        loop.call_later(0.05, loop.stop)  # let the transports finish closing

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(
            loop.create_server(lambda: _Connection(self), "127.0.0.1", self._port, backlog=1024)
        )
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def _encoded(self, reply: Reply, *, close: bool = False) -> bytes:
        """The reply as bytes on the wire (a ``constant`` one encoded once). ``close``:
        the connection closes after it, and the reply says so (RFC 9112 9.6), so that
        no client sends another request on it."""
        key = (id(reply), close)
        hit = self._wire.get(key) if reply.constant else None
        if hit is not None and hit[0] is reply:
            return hit[1]
        body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        data = body.encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
        connection = "close" if close else "keep-alive"
        wire = (
            f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            f"{extra}Connection: {connection}\r\n\r\n".encode()
            + data
        )
        if reply.constant:
            if len(self._wire) > 64:
                self._wire.clear()
            self._wire[key] = (reply, wire)
        return wire

    def _dispatch(self, method: str, path: str, raw: bytes, headers: dict[str, str]) -> Reply:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return Reply(body={"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return Reply(status=404, body=error_body(f"no route {method} {path}", "not_found"))
        try:
            request = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return Reply(status=400, body=error_body("request body is not JSON", "invalid_request"))
        if self.record:
            with self._lock:
                self.requests.append(request)
                self.headers.append(headers)
        return self.responder(request)


_MAX_HEAD = 64 * 1024


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed as they arrive, each reply written
    when its delay (counted from the request's arrival) has passed, in order."""

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.due: deque[tuple[float, bytes, bool]] = deque()  # (when, bytes, close after)
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._conns.discard(self)
        if self.timer is not None:
            self.timer.cancel()
        self.due.clear()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        loop = asyncio.get_running_loop()
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEAD:
                    self.close()
                return
            lines = self.buf[:end].decode("latin-1").split("\r\n")
            try:
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)
                }
                length = int(headers.get("content-length", "0"))
            except ValueError:
                self.close()
                return
            if len(self.buf) < end + 4 + length:
                return  # the body is still coming
            raw = bytes(self.buf[end + 4 : end + 4 + length])
            del self.buf[: end + 4 + length]
            arrived = loop.time()
            reply = self.server._dispatch(method, path, raw, headers)
            close = headers.get("connection", "").lower() == "close"
            wire = self.server._encoded(reply, close=close)
            self.due.append((arrived + reply.delay_s, wire, close))
            if self.timer is None:
                self._send_due()

    def _send_due(self) -> None:
        self.timer = None
        loop = asyncio.get_running_loop()
        while self.due and self.transport is not None and not self.transport.is_closing():
            when, wire, close = self.due[0]
            if when > loop.time():
                self.timer = loop.call_at(when, self._send_due)
                return
            self.due.popleft()
            self.transport.write(wire)
            if close:
                self.close()
                return


def fixed_latency(latency_s: float, content: str = "Done.") -> Responder:
    """A responder answering every request with the same text after ``latency_s``."""
    reply = Reply(body=completion(content), delay_s=latency_s, constant=True)
    return lambda request: reply


def main(argv: list[str] | None = None) -> None:
    """Serve `fixed_latency` in its own process (benchmarks keep the server off the
    harness's interpreter, so the two do not contend for one GIL). Prints the base
    URL on the first line of stdout, then serves until killed."""
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(prog="python -m agentgauge.testing.openai_server")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per reply")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    # Nothing reads the requests of a standalone server: keeping thousands of them
    # would only slow its garbage collector.
    with OpenAIServer(fixed_latency(args.latency), port=args.port, record=False) as server:
        print(server.base_url, flush=True)
        sys.stdout.close()
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
