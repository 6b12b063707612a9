"""No path outside the store is ever served, and the viewer stays on loopback.

Requests go through `http.client`, which sends the path byte for byte (a browser or
``urllib`` would normalise ``..`` and decode ``%2e`` before the server saw them).
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from viewer_support import Served

_PATHS = (
    "/../etc/passwd",
    "/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/%2E%2E/%2E%2E/etc/passwd",
    "/etc/passwd",
    "//etc/passwd",
    "/static/../../etc/passwd",
    "/static/../../../../../../etc/passwd",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/static/..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/static/%252e%252e/%252e%252e/etc/passwd",
    "/static/..%252f..%252fetc%252fpasswd",
    "/static/..\\..\\..\\etc\\passwd",
    "/static/../app.py",
    "/static/%2e%2e/app.py",
    "/static/../templates/base.html.j2",
    "/static/viewer.css%00.py",
    "/assets/../../../../etc/passwd",
    "/assets/plotly.min.js/../../../../etc/passwd",
    "/assets/%2e%2e/%2e%2e/etc/passwd",
    "/runs/..%2f..%2fetc%2fpasswd",
    "/runs/..%2f..%2fetc%2fpasswd/tasks",
    "/runs/..%2f..%2fetc%2fpasswd/trials/1",
    "/runs/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/runs/%252e%252e%252fetc%252fpasswd",
    "/runs//etc/passwd",
    "/runs/retail-careful/trials/..%2f..%2fetc%2fpasswd",
    "/runs/retail-careful/trials/1%20OR%201=1",
)


def _get(served: Served, path: str, host: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(served.host, served.port, timeout=30)
    try:
        conn.request("GET", path, headers={} if host is None else {"Host": host})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", _PATHS)
def test_paths_outside_the_store_get_404(served: Served, path: str, store_path: Path) -> None:
    status, body = _get(served, path)
    assert status == 404, (path, status, body[:200])
    assert b"root:" not in body  # /etc/passwd
    assert b"SQLite format" not in body  # the store file itself
    assert b"import " not in body and b"{% " not in body  # the package's sources
    # The page says what is missing and nothing of what was asked for.
    assert b"passwd" not in body


def test_the_assets_that_exist_are_served(served: Served) -> None:
    assets = (("/static/viewer.css", b".timeline"), ("/assets/plotly.min.js", b"plotly"))
    for path, marker in assets:
        status, body = _get(served, path)
        assert status == 200 and marker in body[:200_000]


@pytest.mark.parametrize("host", ["attacker.example", "127.0.0.1.nip.io", "0.0.0.0", "[::2]"])
def test_a_page_of_another_site_cannot_read_the_viewer(served: Served, host: str) -> None:
    # DNS rebinding: a page at attacker.example:8765 whose name then resolves to
    # 127.0.0.1 reaches the viewer as its own origin, with "Host: attacker.example".
    # Every page, transcripts and JSON included, answered it.
    for path in ("/?format=json", "/runs/retail-careful", "/static/viewer.css"):
        status, body = _get(served, path, f"{host}:{served.port}")
        assert status == 400, (host, path, status)
        assert b"retail-careful" not in body and b".timeline" not in body


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LocalHost", "[::1]"])
def test_this_machines_own_names_are_answered(served: Served, host: str) -> None:
    assert _get(served, "/?format=json", f"{host}:{served.port}")[0] == 200
    assert _get(served, "/?format=json", host)[0] == 200  # no port: 80 behind a proxy


def test_the_host_it_was_told_to_serve_on_is_answered(store_path: Path) -> None:
    # `--host 127.0.0.2` (another loopback address): the browser sends that name.
    proc = _view("--store", str(store_path), "--host", "127.0.0.2", "--port", "0")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = int(line.split("http://127.0.0.2:")[1].split("/")[0])
        own = Served("", "127.0.0.2", port, None)
        assert _get(own, "/", f"127.0.0.2:{port}")[0] == 200
        assert _get(own, "/", f"localhost:{port}")[0] == 200
        assert _get(own, "/", f"attacker.example:{port}")[0] == 400
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _view(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentgauge", "view", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_binding_beyond_loopback_is_refused_without_the_flag(store_path: Path, host: str) -> None:
    proc = _view("--store", str(store_path), "--host", host, "--port", "0")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "not a loopback address" in err and "--allow-remote" in err
    assert out == ""


def test_allow_remote_binds_and_warns(store_path: Path) -> None:
    proc = _view("--store", str(store_path), "--host", "0.0.0.0", "--port", "0", "--allow-remote")
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert "read-only" in line and "http://0.0.0.0:" in line
        warning = proc.stderr.readline()
        assert "no authentication" in warning
        port = int(line.split("http://0.0.0.0:")[1].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_missing_store_is_one_clear_error(tmp_path: Path) -> None:
    proc = _view("--store", str(tmp_path / "none.db"), "--port", "0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "no such store" in err and "none.db" in err
    assert "Traceback" not in err


def test_the_startup_line_shows_a_control_in_the_store_path(
    store_path: Path, tmp_path: Path
) -> None:
    # The store's path was printed as it is: an ESC in a folder's name reached the
    # terminal, as it never does from the commands (agentgauge.display.visible).
    odd = tmp_path / "a\x1b[31mb.db"
    shutil.copyfile(store_path, odd)
    proc = _view("--store", str(odd), "--port", "0")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "\x1b" not in line and "a\\x1b[31mb.db (read-only)" in line
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_address_that_cannot_be_bound_names_the_option_to_change(store_path: Path) -> None:
    # A host name that does not resolve was blamed on the port ("port: cannot listen on
    # nonexistent.invalid:8765: ..."), and the options were named without their dashes.
    proc = _view("--store", str(store_path), "--host", "nonexistent.invalid", "--allow-remote")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("agentgauge: error: --host: cannot listen on nonexistent.invalid:8765: ")
    # An address this machine does not have (TEST-NET-1, RFC 5737) is the host's too.
    proc = _view("--store", str(store_path), "--host", "192.0.2.1", "--allow-remote")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.startswith("agentgauge: error: --host: cannot listen on 192.0.2.1:8765: ")
    # A port in use is the port's.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _view("--store", str(store_path), "--port", str(port))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip() == (
        f"agentgauge: error: --port: cannot listen on 127.0.0.1:{port}: Address already in "
        "use (choose another --port; 0 picks a free one)"
    )
    # Refused beyond loopback: the option, once.
    proc = _view("--store", str(store_path), "--host", "0.0.0.0")
    _, err = proc.communicate(timeout=60)
    assert err.startswith("agentgauge: error: --host: 0.0.0.0 is not a loopback address;")
