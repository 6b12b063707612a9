"""A lean HTTP/1.1 client for plain-``http://`` model endpoints.

Local model servers (vLLM, llama.cpp server, Ollama) answer in milliseconds and
are where a harness's own overhead shows. `HttpPool` speaks HTTP/1.1 over
`asyncio.Protocol` connections with a keep-alive pool per host, and returns a
small `Reply` (status, lower-cased headers, decoded body). `StreamTransport`
puts the same pool behind httpx's transport interface, so code that wants
httpx's request and response objects can have them.

Why not httpx (the project prefers libraries for HTTP): measured with
``benchmarks/bench_harness.py`` part (b) — 50 ms loopback endpoint,
concurrency 64, ceiling 1,280 trials/s, target 90% — on this project's 2-core
machine, httpx 0.28.1, httpcore 1.0.9, in one session (2026-11-30):

===================================================  ========  ======  ==============
client (whole harness: agent, grading, SQLite)       trials/s  of N/L  CPU per trial
===================================================  ========  ======  ==============
ONE shared ``httpx.AsyncClient``, 64 connections,    93-125    7-10%   8-12 ms
HTTP/1.1, CA bundle loaded once, reused by all
httpx request/response objects around an asyncio-    1,081-    84-86%  0.78-0.84 ms
streams transport (this module's previous design;    1,097
SQLite written on the loop)
this module (and the store's writer thread)          1,158-    90-94%  0.51-0.65 ms
                                                     1,203
===================================================  ========  ======  ==============

The profile of the shared client is dominated by httpcore's pool:
``AsyncConnectionPool._assign_requests_to_connections`` re-scans every
connection for every queued request on each state change (2.4 million
``is_idle`` calls for 640 requests); see encode/httpcore#1035 (open) and the
httpx2 fixes pydantic/httpx2#974 and #1075. Revisit when httpcore ships those.
Even httpx's best arrangement (sharded one-connection clients) cost over a
millisecond per request, and building httpx's request and response objects
around a raw transport still cost about a fifth of a millisecond.

Scope, on purpose: plain HTTP only (``https://`` endpoints — hosted providers,
with TLS and proxies — keep httpx), ``Content-Length``, ``chunked`` and
close-delimited bodies, ``gzip``/``deflate`` bodies decoded, no proxies. A
reused connection that the server closed while idle is retried once on a fresh
one, as browsers and httpcore do, since nothing was received for the request.
Errors are httpx's exception classes (``ConnectError``, ``ReadError``,
``ReadTimeout``, ``RemoteProtocolError``), so callers handle both clients alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zlib
from typing import Any

import httpx

__all__ = ["HttpPool", "Reply", "StreamTransport"]

_MAX_HEAD = 64 * 1024  # a response head larger than this is not a model server's


class Reply:
    """One HTTP response: what the chat-completions adapter reads of it."""

    __slots__ = ("content", "headers", "reason_phrase", "status_code")

    def __init__(
        self, status_code: int, reason_phrase: str, headers: dict[str, str], content: bytes
    ) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers  # names lower-cased; a repeated header keeps its last value
        self.content = content

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class _StaleConnection(Exception):
    """A kept-alive connection closed before any byte of the response arrived."""


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: at most one request in flight (no pipelining)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buf = bytearray()
        self._waiter: asyncio.Future[Reply] | None = None
        self._head: tuple[int, str, dict[str, str], bool] | None = None
        self._body_start = 0
        self._got_bytes = False
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._got_bytes = True
        self._buf += data
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            try:
                reply = self._parse(eof=False)
            except httpx.RemoteProtocolError as exc:
                self._fail(exc)
                return
            if reply is not None:
                self._settle(waiter, reply)

    def eof_received(self) -> bool:
        self._finish_at_close(None)
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish_at_close(exc)

    # -- requests

    def send(self, data: bytes, timeout: float | None) -> asyncio.Future[Reply]:
        """Write one request; the future is its reply, or `httpx.ReadTimeout` when
        none is complete within ``timeout`` seconds (the connection is then closed)."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        self._buf.clear()
        self._head = None
        self._got_bytes = False
        self.transport.write(data)
        if timeout is not None:
            # One timer handle, cancelled with the reply: cheaper than asyncio.timeout
            # (a context manager and a rescheduled handle per request).
            self._timer = loop.call_later(timeout, self._time_out, waiter)
        return waiter

    def _settle(self, waiter: asyncio.Future[Reply], outcome: Reply | BaseException) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if waiter.done():
            return
        if isinstance(outcome, BaseException):
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)

    def _time_out(self, waiter: asyncio.Future[Reply]) -> None:
        if not waiter.done():
            self._fail(httpx.ReadTimeout("timed out waiting for the response"))

    def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.close()

    # -- internals

    def _fail(self, exc: BaseException) -> None:
        self.close()
        if self._waiter is not None:
            self._settle(self._waiter, exc)

    def _finish_at_close(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        outcome: Reply | BaseException
        if not self._got_bytes:
            outcome = _StaleConnection(str(exc or "closed by the server"))
        else:
            try:
                reply = self._parse(eof=True)
            except httpx.RemoteProtocolError as err:
                outcome = err
            else:
                outcome = reply or httpx.ReadError(f"connection lost mid-response: {exc or 'EOF'}")
        self._settle(waiter, outcome)

    def _parse(self, *, eof: bool) -> Reply | None:
        """The complete reply in the buffer, or ``None`` while more is due."""
        buf = self._buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise httpx.RemoteProtocolError("response head too large")
                if eof and buf:
                    raise httpx.RemoteProtocolError(f"bad status line {bytes(buf[:80])!r}")
                return None
            self._head = _parse_head(bytes(buf[:end]))
            self._body_start = end + 4
        status, reason, headers, keep = self._head
        start = self._body_start
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = _dechunk(buf, start)
            if body is None:
                return None
        elif "content-length" in headers:
            try:
                size = int(headers["content-length"])
            except ValueError:
                raise httpx.RemoteProtocolError("bad Content-Length") from None
            if len(buf) - start < size:
                return None
            body = bytes(buf[start : start + size])
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:  # delimited by the connection closing
            if not eof:
                return None
            body = bytes(buf[start:])
            keep = False
        reply = Reply(status, reason, headers, _decode(body, headers))
        if not keep:
            self.close()
        self._waiter = None
        return reply


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str], bool]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"bad status line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    keep = headers.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
    return int(parts[1]), parts[2] if len(parts) > 2 else "", headers, keep


def _dechunk(buf: bytearray, pos: int) -> bytes | None:
    """RFC 9112 7.1: size line (hex, optional extensions), data, CRLF; 0 ends;
    then trailers up to an empty line. ``None`` while incomplete."""
    out = bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        try:
            size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise httpx.RemoteProtocolError("bad chunk size line") from None
        pos = eol + 2
        if size == 0:
            end = buf.find(b"\r\n\r\n", pos - 2)  # trailers (if any) end with an empty line
            return None if end < 0 else bytes(out)
        if len(buf) < pos + size + 2:
            return None
        out += buf[pos : pos + size]
        pos += size + 2


def _decode(body: bytes, headers: dict[str, str]) -> bytes:
    coding = headers.get("content-encoding", "").lower()
    if not coding or coding == "identity" or not body:
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:  # raw deflate, as some servers send it
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise httpx.RemoteProtocolError(f"bad {coding} body: {exc}") from None
    raise httpx.RemoteProtocolError(f"unsupported Content-Encoding {coding!r}")


class HttpPool:
    """Keep-alive HTTP/1.1 connections per (host, port); see the module docstring."""

    def __init__(self, *, max_idle: int = 256) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._max_idle = max_idle

    async def request(
        self, host: str, port: int, head: bytes, body: bytes, *, timeout: float | None
    ) -> Reply:
        """Send ``head`` (request line and headers, ending with the blank line)
        and ``body``; the reply, or an httpx transport error."""
        data = head + body
        key = (host, port)
        conn = self._take(key)
        if conn is not None:
            try:
                return await self._exchange(key, conn, data, timeout)
            except _StaleConnection:
                pass  # the server dropped an idle connection: try a fresh one
        conn = await self._connect(key, timeout)
        try:
            return await self._exchange(key, conn, data, timeout)
        except _StaleConnection as exc:
            raise httpx.ReadError(f"connection lost: {exc}") from None

    async def _connect(self, key: tuple[str, int], timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(_Connection, *key)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {key[0]}:{key[1]}") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        return conn

    async def _exchange(
        self, key: tuple[str, int], conn: _Connection, data: bytes, timeout: float | None
    ) -> Reply:
        try:
            reply = await conn.send(data, timeout)
        except BaseException:
            conn.close()  # failed or cancelled mid-exchange: never reuse the connection
            raise
        if not conn.closed:
            self._give(key, conn)
        return reply

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        pool = self._idle.get(key)
        while pool:
            conn = pool.pop()
            if not conn.closed:
                return conn
        return None

    def _give(self, key: tuple[str, int], conn: _Connection) -> None:
        pool = self._idle.setdefault(key, [])
        if len(pool) < self._max_idle:
            pool.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()


class StreamTransport(httpx.AsyncBaseTransport):
    """`HttpPool` as an httpx transport: ``httpx.AsyncClient(transport=StreamTransport())``."""

    def __init__(self, *, max_idle: int = 256) -> None:
        self._pool = HttpPool(max_idle=max_idle)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"StreamTransport speaks plain http, not {url.scheme}")
        body = await request.aread()
        lines = [f"{request.method} {url.raw_path.decode('ascii')} HTTP/1.1"]
        lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in request.headers.raw]
        if "content-length" not in request.headers and body:
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        timeout = request.extensions.get("timeout", {})
        limit = timeout.get("read") if isinstance(timeout, dict) else None
        try:
            reply = await self._pool.request(url.host, url.port or 80, head, body, timeout=limit)
        except httpx.TransportError as exc:
            exc.request = request
            raise
        # The body is already decoded from its transfer and content encodings.
        headers = [
            (k, v)
            for k, v in reply.headers.items()
            if k not in ("transfer-encoding", "content-encoding", "content-length")
        ]
        return httpx.Response(
            reply.status_code, headers=headers, content=reply.content, request=request
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
