"""Serving the viewer: loopback unless asked otherwise, with uvicorn.

The viewer has no authentication: whoever reaches its address reads every
transcript in the store. It binds to 127.0.0.1 by default; a non-loopback
address is refused unless the caller passes ``allow_remote``, and then a
warning says so.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from pathlib import Path

import uvicorn

from agentgauge.display import visible
from agentgauge.errors import InputError
from agentgauge.store import Store
from agentgauge.viewer import DEFAULT_PORT
from agentgauge.viewer.app import LOOPBACK_HOSTS, create_app

__all__ = ["hosts_for", "is_loopback", "open_socket", "serve"]

NO_AUTH_WARNING = (
    "warning: the viewer has no authentication; anyone who can reach {url} can read "
    "every run and transcript in {store}"
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


#: Failures of the address itself (``--host``): a name that does not resolve, an
#: address this machine does not have, a family it does not speak. Any other failure to
#: listen (the port in use, below 1024 without the right, out of range) is ``--port``'s.
_HOST_ERRNOS = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT})


def open_socket(host: str, port: int, *, allow_remote: bool = False) -> socket.socket:
    """A listening socket on ``host:port``; `InputError` for a non-loopback host
    without ``allow_remote`` or an address that cannot be bound, naming the option to
    change (``--host`` or ``--port``, as the user typed them)."""
    if not is_loopback(host) and not allow_remote:
        raise InputError(
            f"{host} is not a loopback address; the viewer has no authentication, "
            "so serving beyond this machine needs --allow-remote",
            field="--host",
        )
    sock: socket.socket | None = None
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except (OSError, OverflowError) as exc:
        if sock is not None:
            sock.close()
        why = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)).rstrip(".")
        if (
            sock is None
            or isinstance(exc, socket.gaierror)
            or (isinstance(exc, OSError) and exc.errno in _HOST_ERRNOS)
        ):
            raise InputError(f"cannot listen on {host}:{port}: {why}", field="--host") from None
        raise InputError(
            f"cannot listen on {host}:{port}: {why} (choose another --port; 0 picks a free one)",
            field="--port",
        ) from None
    sock.setblocking(False)
    return sock


def hosts_for(host: str) -> list[str]:
    """The ``Host`` names the viewer bound to ``host`` answers to: this machine's own
    (127.0.0.1, localhost, [::1]) and ``host`` as given; any for an address of every
    interface (``0.0.0.0``, ``::``), whose names cannot be listed."""
    bare = host.strip("[]").lower()
    try:
        if ipaddress.ip_address(bare).is_unspecified:
            return ["*"]
    except ValueError:  # a host name
        pass
    return [*LOOPBACK_HOSTS, f"[{bare}]" if ":" in bare else bare]


def _url(host: str, port: int) -> str:
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    store: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    allow_remote: bool = False,
) -> None:
    """Serve the viewer of ``store`` until interrupted (the store opened read-only)."""
    if not Path(store).exists():
        raise InputError(
            "no such store; give one with --store PATH (agentgauge demo writes "
            "agentgauge-demo/agentgauge.db)",
            file=str(store),
        )
    Store(store, readonly=True).close()  # an unreadable store fails here, not at a page
    sock = open_socket(host, port, allow_remote=allow_remote)
    url = _url(host, sock.getsockname()[1])
    if not is_loopback(host):
        print(NO_AUTH_WARNING.format(url=url, store=visible(store)), file=sys.stderr)
    shown = visible(store)  # a path is the user's: controls in it are shown, not sent
    print(f"agentgauge viewer of {shown} (read-only) at {url}  (Ctrl-C stops it)", flush=True)
    app = create_app(store, hosts_for(host))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
