"""The lean HTTP/1.1 transport against raw scripted servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import socket
import zlib
from collections.abc import Awaitable, Callable

import httpx
import pytest

from agentgauge.agents._http import HttpPool, Reply, StreamTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    lines = head.split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


def serve(handler: Handler, requests: int = 2) -> tuple[list[httpx.Response | Exception], int]:
    """Run ``requests`` POSTs through the transport; returns responses and connections made."""
    connections = 0

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            await handler(reader, writer, connections)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> list[httpx.Response | Exception]:
        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        out: list[httpx.Response | Exception] = []
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", transport=StreamTransport(), timeout=1.0
        ) as client:
            for i in range(requests):
                try:
                    out.append(await client.post("/v1/x", json={"i": i}))
                except httpx.HTTPError as exc:
                    out.append(exc)
                await asyncio.sleep(0.01)
        server.close()
        return out

    return asyncio.run(main()), connections


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while True:
        line, headers, body = await read_request(reader)
        assert line == "POST /v1/x HTTP/1.1" and headers["content-type"] == "application/json"
        payload = b'{"echo": ' + body + b"}"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
        await writer.drain()


def test_keep_alive_reuses_one_connection() -> None:
    responses, connections = serve(keep_alive, 3)
    assert [r.json()["echo"]["i"] for r in responses] == [0, 1, 2]  # type: ignore[union-attr]
    assert connections == 1


async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while True:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n"
            b'\r\n5;ext=1\r\n{"a":\r\n3\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n'
        )
        await writer.drain()


def test_chunked_bodies_are_reassembled_and_the_connection_kept() -> None:
    responses, connections = serve(chunked, 2)
    assert [r.json() for r in responses] == [{"a": 1}, {"a": 1}]  # type: ignore[union-attr]
    assert connections == 1


async def close_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    await read_request(reader)
    body = gzip.compress(b'{"n": %d}' % n)
    writer.write(
        b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Encoding: gzip\r\n"
        b"Retry-After: 2\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    await writer.drain()


def test_connection_close_status_headers_and_gzip() -> None:
    responses, connections = serve(close_each, 2)
    assert connections == 2
    assert [r.status_code for r in responses] == [503, 503]  # type: ignore[union-attr]
    assert [r.json()["n"] for r in responses] == [1, 2]  # type: ignore[union-attr]
    assert responses[0].headers["retry-after"] == "2"  # type: ignore[union-attr]


async def drop_when_idle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
) -> None:
    await read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    await writer.drain()
    # then close without saying so: the client's pooled connection goes stale


def test_a_stale_pooled_connection_is_replaced() -> None:
    responses, connections = serve(drop_when_idle, 2)
    assert all(isinstance(r, httpx.Response) and r.status_code == 200 for r in responses)
    assert connections == 2


async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    await read_request(reader)
    writer.write(b"SMTP ready\r\n\r\n")
    await writer.drain()


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    await read_request(reader)
    await asyncio.sleep(5)


async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    await read_request(reader)


@pytest.mark.parametrize(
    ("handler", "error"),
    [
        (garbage, httpx.RemoteProtocolError),
        (silent, httpx.ReadTimeout),
        (hang_up, httpx.ReadError),
    ],
)
def test_failures_map_to_httpx_transport_errors(handler: Handler, error: type) -> None:
    (response,), _ = serve(handler, 1)
    assert isinstance(response, error)
    assert isinstance(response, httpx.TransportError)  # what the adapter retries


def test_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused

        async def main() -> None:
            async with httpx.AsyncClient(transport=StreamTransport()) as client:
                await client.post(f"http://127.0.0.1:{port}/x", json={})

        with pytest.raises(httpx.ConnectError):
            asyncio.run(main())


async def close_delimited(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
) -> None:
    await read_request(reader)
    # No Content-Length, not chunked: the body runs to the end of the connection,
    # here in two writes, raw-deflate-compressed.
    deflater = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    body = deflater.compress(b'{"n": %d}' % n) + deflater.flush()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n" + body[:3])
    await writer.drain()
    await asyncio.sleep(0.01)
    writer.write(body[3:])
    await writer.drain()


def test_a_body_delimited_by_the_connection_closing() -> None:
    responses, connections = serve(close_delimited, 2)
    assert [r.json() for r in responses] == [{"n": 1}, {"n": 2}]  # type: ignore[union-attr]
    assert connections == 2  # such a connection is never reused


def test_the_pool_answers_with_replies_and_times_out_per_request() -> None:
    async def main() -> tuple[Reply, Exception, int]:
        served = 0

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal served
            try:
                while True:
                    _, _, body = await read_request(reader)
                    served += 1
                    if body == b"slow":
                        await asyncio.sleep(1)
                    writer.write(
                        b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}"
                    )
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()

        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = HttpPool()
        head = b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n"
        reply = await pool.request("127.0.0.1", port, head, b"fast", timeout=1.0)
        try:
            await pool.request("127.0.0.1", port, head, b"slow", timeout=0.05)
        except httpx.ReadTimeout as exc:
            late: Exception = exc
        await pool.aclose()
        server.close()
        return reply, late, served

    reply, late, served = asyncio.run(main())
    assert (reply.status_code, reply.reason_phrase) == (429, "Too Many")
    assert reply.headers["retry-after"] == "3" and reply.json() == {}
    assert isinstance(late, httpx.ReadTimeout) and served == 2
