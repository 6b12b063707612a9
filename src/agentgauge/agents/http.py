"""HTTP to model providers, over aiohttp: how a session is made, and what a failure means.

The ``openai:`` adapter and the model judge both talk to chat-completions
endpoints; they share these rules so that they behave alike:

- one `aiohttp.ClientSession` per client (and per event loop): keep-alive
  connections, TLS with aiohttp's default context (certificates verified
  against the system's store, made once per process);
- one timeout per request (`aiohttp.ClientTimeout` ``total``: connecting,
  sending and reading the whole response);
- the proxy the environment names for the endpoint (``HTTP_PROXY``,
  ``HTTPS_PROXY``, ``NO_PROXY``, proxy credentials in ``~/.netrc``), by
  aiohttp's own rules for ``trust_env``, looked up once per session;
- transport failures (refused or reset connections, a response cut short or
  not HTTP at all, the request timeout) are retryable: `transport_failure`
  says which happened, in words, for the `TransientError` the caller raises.

Why the proxy is looked up once rather than with ``trust_env=True``: aiohttp
3.14 then looks up the proxy (``asyncio.to_thread``) and ``~/.netrc``
(``run_in_executor``) in worker threads on every request
(``ClientSession._request`` in aiohttp's ``client.py``), which on
``benchmarks/bench_harness.py`` (b) held the adapter to 44–50% of its ceiling
against 80–87% this way, in the same runs (two cores, aiohttp 3.14.5). An
endpoint's proxy does not change while a run lasts.
``~/.netrc`` is not read for the endpoint's own credentials: the key comes from
the environment variable the caller names.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Callable, Mapping

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from agentgauge.errors import InputError

__all__ = [
    "TRANSPORT_ERRORS",
    "LoopSession",
    "billed_unknown",
    "check_base_url",
    "check_header",
    "env_proxy",
    "new_session",
    "sent_unread",
    "transport_failure",
    "unread_cost",
    "url_problem",
]

TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,  # the request timeout (aiohttp's socket timeouts are TimeoutErrors too)
    aiohttp.ClientConnectionError,  # refused, reset, closed before the response was complete
    aiohttp.ClientPayloadError,  # a body cut short or badly encoded
    aiohttp.ClientResponseError,  # a response aiohttp could not parse as HTTP
)
"""What a request can raise that retrying may cure."""


def check_header(text: str, what: str) -> None:
    """Refuse a header name or value holding a control character, naming where it came from.

    A CR/LF in an API key would start a new header line (``X-Injected: yes``, a
    second ``Host:``). aiohttp refuses to send it, but only when the first request
    is made, as a ``ValueError`` in every trial; checked when the key is read, it
    is one line before anything runs."""
    bad = list(dict.fromkeys(ch for ch in text if unicodedata.category(ch) == "Cc"))
    if bad:
        shown = "".join(ch.encode("unicode_escape").decode("ascii") for ch in bad)
        raise InputError(
            f"{what} contains a control character ({shown}); header values must be printable"
        )


def env_proxy(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy (and its credentials) the environment names for ``url``, or ``None``."""
    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:  # no proxy for this scheme, or NO_PROXY covers the host
        return None, None


def new_session(
    base_url: str,
    headers: Mapping[str, str],
    timeout_s: float,
    *,
    max_connections: int | None = None,
) -> aiohttp.ClientSession:
    """A session for requests to ``base_url`` (call it inside the event loop that uses it).

    ``max_connections`` caps the open connections; ``None`` sets no cap of its own
    (aiohttp opens a connection only when no idle one is left, so the pool grows to
    the number of requests in flight, and keeps them alive for the next ones).
    """
    proxy, proxy_auth = env_proxy(base_url)
    return aiohttp.ClientSession(
        headers=dict(headers),
        connector=aiohttp.TCPConnector(limit=max_connections or 0),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
        proxy=proxy,
        proxy_auth=proxy_auth,
    )


def transport_failure(exc: BaseException, timeout_s: float, setting: str) -> str:
    """What went wrong on the wire, in words, with aiohttp's own account after it.

    ``setting`` names the option that set ``timeout_s``, so a user who sees the
    message knows what to raise."""
    if isinstance(exc, TimeoutError):
        return f"request timed out after {timeout_s:g} s ({setting})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        what = "could not connect"
    elif isinstance(exc, aiohttp.ServerDisconnectedError):
        what = "the server closed the connection before the response was complete"
    elif isinstance(exc, aiohttp.ClientPayloadError):
        what = "the response body was cut short or could not be decoded"
    elif isinstance(exc, aiohttp.ClientResponseError):
        what = "the server's response is not valid HTTP"
    else:
        what = "the connection failed"
    return f"{what} ({type(exc).__name__}: {exc})"


def sent_unread(exc: BaseException) -> bool:
    """Whether a request that failed with ``exc`` (one of `TRANSPORT_ERRORS`) may have
    reached the server, been served and been billed, its reply never read: a timeout, a
    connection cut mid-reply. aiohttp raises `aiohttp.ClientConnectorError` and
    `aiohttp.ConnectionTimeoutError` before a byte of the request is sent: those were
    not. The judge and the ``openai:`` adapter both price a call by this rule
    (`unread_cost`)."""
    return not isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)


def unread_cost(unread: str, *, answered: bool) -> str:
    """Why a model call's cost is unknown when an attempt of it was sent and its reply
    not read (`sent_unread`; ``unread`` says what happened): the endpoint may have billed
    a completion nobody saw, besides the answer's (``answered``), so the call's cost and
    tokens are unknown, never the answer's alone. Read as a price source
    (``unknown: ...``)."""
    which = "an attempt before the one that answered" if answered else "a request"
    return billed_unknown(f"{which} was sent and its reply not read ({unread})")


def billed_unknown(because: str) -> str:
    """A price source saying why what an endpoint billed for a call is unknown."""
    return f"unknown: {because}; what the endpoint billed for it is unknown"


def check_base_url(url: str, source: str) -> str:
    """``url`` if requests can be sent to it; else `InputError` saying why, before any run.

    A base URL that is not http(s), has no host, names an impossible port (``:99999``)
    or does not parse is a typo, not a provider that is down: refused once, here,
    rather than failing every request of every trial. ``source`` says where the URL
    came from (``--base-url``, ``$OPENAI_BASE_URL``), for the message.
    """
    problem = url_problem(url)
    if problem is None:
        return url
    raise InputError(f"{url!r} ({source}) cannot be used: {problem}", field="base URL")


def url_problem(url: str) -> str | None:
    """Why requests cannot be sent to ``url`` (a scheme other than http(s), no host, an
    impossible port, a URL that does not parse), in words; ``None`` if they can."""
    try:
        parsed = URL(url)
        port = parsed.explicit_port
    except ValueError as exc:  # yarl's words: "Port out of range 0-65535", "Invalid IPv6 URL"
        return f"it does not parse as a URL ({exc})"
    if parsed.scheme not in ("http", "https"):
        hint = f"; did you mean http://{url}?" if "://" not in url else ""
        return f"the scheme must be http or https, not {parsed.scheme or 'none'!r}{hint}"
    if not parsed.host:
        return "it names no host"
    if port == 0:
        return "port 0 cannot be connected to"
    return None


class LoopSession:
    """One aiohttp session per event loop, made by ``make`` on first use in a loop.

    A session cannot outlive its loop, and `agentgauge.run` starts a new loop per
    call, so an adapter keeps this instead of a session."""

    def __init__(self, make: Callable[[], aiohttp.ClientSession]) -> None:
        self._make = make
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            self._session, self._loop = self._make(), loop
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
