"""Shared fixtures. Reference data lives in ../shared/data beside the project."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

#: ``cli("metrics", "trials.jsonl", "--json")`` -> (exit code, stdout, stderr).
Cli = Callable[..., tuple[int, str, str]]

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The reference data folder; tests needing it are skipped, with the reason, if absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The real console entry point in this process: argv in; exit code, stdout and
    stderr out."""
    from agentgauge.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "argv", ["agentgauge", *args])
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, out.getvalue(), err.getvalue()

    return run


def stored_trials(db: Path) -> int:
    """How many trials a store another process is writing holds now (0 before its
    file or its schema exists): for tests that interrupt a run part-way."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.OperationalError:  # schema not created yet
        return 0
    finally:
        conn.close()


def metrics_json(cli: Cli, source: str, *extra: str) -> dict[str, Any]:
    """``agentgauge metrics SOURCE --json --k 1,2`` through `cli`, which must succeed."""
    code, out, err = cli("metrics", source, "--json", "--k", "1,2", *extra)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


class StatusServer:
    """A real aiohttp server on 127.0.0.1 that answers every request with one status
    (``path``: only ``POST path``; any other route is aiohttp's own 404, as a server
    without it answers)."""

    def __init__(self, status: int, message: str, *, path: str | None = None) -> None:
        self.status, self.message, self.path = status, message, path
        self.hits = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        return web.json_response({"error": {"message": self.message}}, status=self.status)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        if self.path is None:
            app.router.add_route("*", "/{tail:.*}", self._handle)
        else:
            app.router.add_post(self.path, self._handle)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = self._runner.addresses[0][1]
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> StatusServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def stored_claims(db: Path) -> list[dict[str, Any]]:
    """The run claims held in store ``db`` (its ``claim:RUN`` meta rows), as stored."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute("SELECT value FROM meta WHERE key LIKE 'claim:%'").fetchall()
    finally:
        conn.close()
    return [json.loads(value) for (value,) in rows]


def claim_from_elsewhere(
    db: Path, heartbeat: float, *, command: str | None = "agentgauge run"
) -> None:
    """Store a claim on run ``r`` by a session on another host (pid 1) whose last
    heartbeat was at ``heartbeat`` (``time.time()`` seconds): fresh or stale as the test
    needs. ``command=None`` leaves out the command, as claims written before it was
    recorded did."""
    claim: dict[str, Any] = {
        "token": "theirs",
        "pid": 1,
        "host": "other-host",
        "since": "2026-01-02T03:04:05+00:00",
        "heartbeat": heartbeat,
    }
    if command is not None:
        claim["command"] = command
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('claim:r', ?)", (json.dumps(claim),))


def dump_store(db: Path) -> list[str]:
    """Every table of store ``db`` as SQL statements: equal dumps, an unchanged store."""
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
