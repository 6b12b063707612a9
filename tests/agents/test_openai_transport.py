"""The ``openai:`` adapter's HTTP (aiohttp) against raw scripted servers on 127.0.0.1.

Each server speaks HTTP/1.1 (or fails to) by hand over a real socket, so the
cases a well-behaved test server never shows — idle connections dropped, bodies
chunked, compressed or delimited by the connection closing, garbage, silence,
hang-ups, refused connections — reach the adapter as they would from a real
endpoint."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentgauge.agents.base import TransientError
from agentgauge.agents.openai import OpenAIAgent
from agentgauge.agents.provider import ProviderError, ProviderExhausted, RetryPolicy
from agentgauge.harness.session import TrialSession
from agentgauge.schema import Task
from agentgauge.testing.openai_server import completion, error_body
from agentgauge.testing.worlds import make_counter_env

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]

NO_RETRY = RetryPolicy(max_retries=0)


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    lines = head.split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


def asked(body: bytes) -> str:
    """The last message the adapter sent (the tests' requests are numbered ``q0, q1, ...``)."""
    return str(json.loads(body)["messages"][-1]["content"])


def answer(body: bytes) -> bytes:
    """A chat completion that echoes the request's last message."""
    return json.dumps(completion(f"echo {asked(body)}")).encode()


def new_session() -> TrialSession:
    task = Task(id="t", instruction="add 1", expectations={"final_state": {"counter": 1}})
    return TrialSession("t", make_counter_env(task, variant="base", seed=0), seed=0)


def serve(
    handler: Handler,
    requests: int = 2,
    *,
    timeout: float = 1.0,
    retry: RetryPolicy = NO_RETRY,
) -> tuple[list[str | Exception], int]:
    """Run ``requests`` chat completions through one adapter; returns each reply's text
    (or the error it raised) and the number of connections the server saw."""
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

    async def main() -> list[str | Exception]:
        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        agent = OpenAIAgent(
            "m", base_url=f"http://127.0.0.1:{port}/v1", request_timeout=timeout, retry=retry
        )
        out: list[str | Exception] = []
        try:
            for i in range(requests):
                messages = [{"role": "user", "content": f"q{i}"}]
                try:
                    message = await agent.complete(new_session(), messages, [])
                    out.append(message["content"])
                except Exception as exc:
                    out.append(exc)
                await asyncio.sleep(0.01)
        finally:
            await agent.aclose()
            server.close()
        return out

    return asyncio.run(main()), connections


def failure(outcome: str | Exception) -> TransientError:
    """The transport error behind a request that failed with retries off."""
    assert isinstance(outcome, ProviderExhausted), outcome
    cause = outcome.__cause__
    assert isinstance(cause, TransientError)  # what with_retries retries
    return cause


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while True:
        line, headers, body = await read_request(reader)
        assert line == "POST /v1/chat/completions HTTP/1.1"
        assert headers["content-type"] == "application/json"
        payload = answer(body)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
        await writer.drain()


def test_keep_alive_reuses_one_connection() -> None:
    replies, connections = serve(keep_alive, 3)
    assert replies == ["echo q0", "echo q1", "echo q2"]
    assert connections == 1


async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while True:
        _, _, body = await read_request(reader)
        payload = answer(body)
        first, rest = payload[:7], payload[7:]
        writer.write(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n"
            b"\r\n%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n"
            % (len(first), first, len(rest), rest)
        )
        await writer.drain()


def test_chunked_bodies_are_reassembled_and_the_connection_kept() -> None:
    replies, connections = serve(chunked, 2)
    assert replies == ["echo q0", "echo q1"]
    assert connections == 1


async def close_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    await read_request(reader)
    body = gzip.compress(json.dumps(error_body(f"busy {n}")).encode())
    writer.write(
        b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Encoding: gzip\r\n"
        b"Retry-After: 2\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    await writer.drain()


def test_connection_close_status_headers_and_gzip() -> None:
    # One retry, its wait capped at 10 ms (Retry-After says 2 s): both attempts are
    # answered 503 on a connection the server then closes.
    retry = RetryPolicy(max_retries=1, max_delay=0.01)
    (outcome,), connections = serve(close_each, 1, retry=retry)
    assert connections == 2
    assert isinstance(outcome, ProviderExhausted) and outcome.attempts == 2
    # The gzip body was decoded to the server's error message; its Retry-After was read.
    assert str(outcome) == "gave up after 2 attempts: HTTP 503: busy 2"
    assert failure(outcome).retry_after == 2.0


async def drop_when_idle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
) -> None:
    _, _, body = await read_request(reader)
    payload = answer(body)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
    await writer.drain()
    # then close without saying so: the client's pooled connection goes stale


def test_a_stale_pooled_connection_is_replaced() -> None:
    replies, connections = serve(drop_when_idle, 2)  # retries off: no second chance
    assert replies == ["echo q0", "echo q1"]
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


async def cut_short(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    await read_request(reader)
    writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"choices": ')
    await writer.drain()


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        (garbage, "the server's response is not valid HTTP (ClientResponseError: "),
        (silent, "request timed out after 0.2 s (request_timeout)"),
        (hang_up, "the server closed the connection before the response was complete ("),
        (cut_short, "the response body was cut short or could not be decoded (ClientPayloadError"),
    ],
)
def test_failures_are_retryable_transport_errors_that_say_what_happened(
    handler: Handler, message: str
) -> None:
    (outcome,), _ = serve(handler, 1, timeout=0.2)
    assert str(failure(outcome)).startswith(message)


def test_a_refused_connection_is_retryable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused

        async def main() -> None:
            agent = OpenAIAgent("m", base_url=f"http://127.0.0.1:{port}/v1", retry=NO_RETRY)
            try:
                await agent.complete(new_session(), [{"role": "user", "content": "hi"}], [])
            finally:
                await agent.aclose()

        with pytest.raises(ProviderExhausted) as err:
            asyncio.run(main())
    assert str(failure(err.value)).startswith("could not connect (ClientConnectorError: ")


async def close_delimited(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
) -> None:
    _, _, body = await read_request(reader)
    # No Content-Length, not chunked: the body runs to the end of the connection,
    # here in two writes, raw-deflate-compressed.
    deflater = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    data = deflater.compress(answer(body)) + deflater.flush()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n" + data[:3])
    await writer.drain()
    await asyncio.sleep(0.01)
    writer.write(data[3:])
    await writer.drain()


def test_a_body_delimited_by_the_connection_closing() -> None:
    replies, connections = serve(close_delimited, 2)
    assert replies == ["echo q0", "echo q1"]
    assert connections == 2  # such a connection is never reused


def test_retry_after_is_read_and_the_timeout_is_per_request() -> None:
    served: list[str] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            _, _, body = await read_request(reader)
            served.append(asked(body))
            if asked(body) == "q1":
                await asyncio.sleep(1)
            writer.write(b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()

    (fast, slow), _ = serve(handler, 2, timeout=0.3)
    assert str(fast) == "gave up after 1 attempt: HTTP 429: {}"
    assert failure(fast).retry_after == 3.0
    assert str(failure(slow)) == "request timed out after 0.3 s (request_timeout)"
    assert served == ["q0", "q1"]


def test_a_hostile_body_is_a_provider_error_not_a_crash() -> None:
    async def nested(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        payload = b"[" * 100_000  # deeper than json.loads can recurse
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
        await writer.drain()

    (outcome,), _ = serve(nested, 1)
    assert isinstance(outcome, ProviderError)  # infra, and not retried
    assert str(outcome).startswith("malformed chat-completions response: '[[[")


def test_the_proxy_named_by_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line, _, body = await read_request(reader)
        lines.append(line)
        payload = answer(body)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
        await writer.drain()
        writer.close()

    async def main() -> Any:
        server = await asyncio.start_server(proxy, "127.0.0.1", 0)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        # The endpoint's name does not resolve: only the proxy can answer for it.
        agent = OpenAIAgent("m", base_url="http://model.invalid/v1", retry=NO_RETRY)
        try:
            return await agent.complete(new_session(), [{"role": "user", "content": "q0"}], [])
        finally:
            await agent.aclose()
            server.close()

    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    message = asyncio.run(main())
    assert message["content"] == "echo q0"
    # A request through an HTTP proxy names the whole URL (RFC 9112 3.2.2).
    assert lines == ["POST http://model.invalid/v1/chat/completions HTTP/1.1"]
