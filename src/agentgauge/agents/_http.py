"""A lean HTTP/1.1 transport for httpx, used for plain-``http://`` endpoints.

Local model servers (vLLM, llama.cpp server, Ollama) answer in milliseconds and
are where a harness's own overhead shows. This transport speaks HTTP/1.1
straight over asyncio streams, with a keep-alive pool per host. It is an
`httpx.AsyncBaseTransport`, so requests, responses, headers and errors stay
httpx's.

Why not httpx's own transport (the project prefers libraries for HTTP): measured
with ``benchmarks/bench_harness.py`` part (b) — 50 ms loopback endpoint,
concurrency 64, ceiling 1,280 trials/s, target 90% — interleaved best of 3 on
2 cores shared with other work (load average 1.9-2.5), httpx 0.28.1, httpcore
1.0.9, sniffio installed:

==================================================  ===========  ======  ===============
client                                              trials/s     of N/L  CPU per trial
==================================================  ===========  ======  ===============
this transport (one httpx client around it)         912          71.2%   0.71 ms
ONE shared ``httpx.AsyncClient``, 64 connections,   87           6.8%    9.2-11.4 ms
HTTP/1.1, CA bundle loaded once, reused by all
==================================================  ===========  ======  ===============

Raw requests at concurrency 64 (no harness), CPU per request: this transport
0.5-0.6 ms; httpx sharded into 8 clients x 8 connections 1.5 ms, 16 x 4 1.4 ms,
one-connection clients 1.4 ms; the ``httpx2`` fork (2.16.2), one shared client,
1.3-1.7 ms. So httpx used as recommended is 10x slower here, and even its best
arrangement costs over a millisecond per request, which caps one core below
the 1,152 trials/s target. The profile of the shared client is dominated by
httpcore's pool: ``AsyncConnectionPool._assign_requests_to_connections`` re-scans
every connection for every queued request on each state change (2.4 million
``is_idle`` calls for 640 requests); see encode/httpcore#1035 (open) and the
httpx2 fixes pydantic/httpx2#974 and #1075. Revisit when httpcore ships those.

Scope, on purpose: plain HTTP only (``https://`` endpoints — hosted providers,
with TLS and proxies — keep httpx's default transport), ``Content-Length`` and
``chunked`` bodies, no compression requested, no proxies. A reused connection
that the server closed while idle is retried once on a fresh one, as browsers
and httpcore do, since nothing was received for the request.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx

__all__ = ["StreamTransport"]

_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _StaleConnection(Exception):
    """A kept-alive connection failed before any byte of the response arrived."""


class StreamTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams with a keep-alive pool (see the module docstring)."""

    def __init__(self, *, max_idle: int = 256) -> None:
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._max_idle = max_idle

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"StreamTransport speaks plain http, not {url.scheme}")
        key = (url.host, url.port or 80)
        body = await request.aread()
        head = [f"{request.method} {url.raw_path.decode('ascii')} HTTP/1.1"]
        head += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in request.headers.raw]
        if "content-length" not in request.headers and body:
            head.append(f"Content-Length: {len(body)}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        timeout = request.extensions.get("timeout", {})
        limit = timeout.get("read") if isinstance(timeout, dict) else None
        try:
            async with asyncio.timeout(limit):
                return await self._exchange(key, data, request)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None

    async def _exchange(
        self, key: tuple[str, int], data: bytes, request: httpx.Request
    ) -> httpx.Response:
        conn = self._take(key)
        if conn is not None:
            try:
                return await self._send(conn, data, key, request, reused=True)
            except _StaleConnection:
                pass  # the server dropped an idle connection: try a fresh one
        try:
            conn = await asyncio.open_connection(*key)
        except OSError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        return await self._send(conn, data, key, request, reused=False)

    async def _send(
        self,
        conn: _Conn,
        data: bytes,
        key: tuple[str, int],
        request: httpx.Request,
        *,
        reused: bool,
    ) -> httpx.Response:
        reader, writer = conn
        try:
            try:
                writer.write(data)
                await writer.drain()
                status_line = await reader.readuntil(b"\r\n")
            except (OSError, asyncio.IncompleteReadError) as exc:
                if reused:
                    raise _StaleConnection from exc
                raise httpx.ReadError(f"connection lost: {exc}", request=request) from exc
            try:
                return await self._read(conn, status_line, key, request)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                raise httpx.RemoteProtocolError(f"bad response: {exc}", request=request) from exc
        except BaseException:
            _close(writer)  # failed or cancelled mid-exchange: never reuse the connection
            raise

    async def _read(
        self, conn: _Conn, status_line: bytes, key: tuple[str, int], request: httpx.Request
    ) -> httpx.Response:
        reader, writer = conn
        parts = status_line.decode("latin-1").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            _close(writer)
            raise httpx.RemoteProtocolError(
                f"bad status line {status_line[:80]!r}", request=request
            )
        status = int(parts[1])
        raw = await reader.readuntil(b"\r\n\r\n")
        headers: list[tuple[str, str]] = []
        for line in raw.decode("latin-1").split("\r\n"):
            if ":" in line:
                name, value = line.split(":", 1)
                headers.append((name.strip(), value.strip()))
        lookup = {k.lower(): v for k, v in headers}
        if "chunked" in lookup.get("transfer-encoding", "").lower():
            content = await _read_chunked(reader)
        elif "content-length" in lookup:
            content = await reader.readexactly(int(lookup["content-length"]))
        else:  # delimited by the connection closing
            content = await reader.read()
            lookup["connection"] = "close"
        keep = lookup.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
        if keep:
            self._give(key, conn)
        else:
            _close(writer)
        # The body is already decoded from its transfer encoding; httpx must not redo it.
        headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
        return httpx.Response(status, headers=headers, content=content, request=request)

    def _take(self, key: tuple[str, int]) -> _Conn | None:
        pool = self._idle.get(key)
        while pool:
            conn = pool.pop()
            if not conn[0].at_eof():
                return conn
            _close(conn[1])
        return None

    def _give(self, key: tuple[str, int], conn: _Conn) -> None:
        pool = self._idle.setdefault(key, [])
        if len(pool) < self._max_idle:
            pool.append(conn)
        else:
            _close(conn[1])

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for _, writer in pool:
                _close(writer)
        self._idle.clear()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    # RFC 9112 7.1: size line (hex, optional extensions), data, CRLF; 0 ends; trailers.
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # skip trailers
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)


def _close(writer: Any) -> None:
    with contextlib.suppress(Exception):
        writer.close()
