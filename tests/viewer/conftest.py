"""A small real store and the real viewer serving it over HTTP on 127.0.0.1.

Two stores, built once per session: one by the harness (two reference agents on a
few built-in retail tasks, with a fault variant so the variant filter has something
to do), and one of trials whose every string is hostile, imported with
``agentgauge import jsonl`` (`XSS_RUN`). The viewer runs in uvicorn in a thread, on a
free port, as ``agentgauge view`` runs it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import tests.browser as browser_helper
from tests.browser import END_SCRIPT, IMG, JS_LINK, PAYLOADS, SCRIPT

ROOT = Path(__file__).resolve().parents[2]

# The shared browser helper, also by a flat name for the test modules here.
sys.modules["agentgauge_browser"] = browser_helper
try:
    from selenium.webdriver.common.by import By
except ImportError:  # `browser()` skips the tests that need it, with the reason
    By = None

# This module's names (the payloads, `Served`) for the test modules, which cannot import
# a conftest by name.
sys.modules["viewer_support"] = sys.modules[__name__]

HOSTILE = " ".join(PAYLOADS)
XSS_RUN = f"run {SCRIPT}"
XSS_TASK = f"task {IMG}"
XSS_AGENT = f"agent {JS_LINK}"


def hostile_jsonl(path: Path) -> Path:
    """Trials whose messages, tool arguments and results, task ids, agent names and
    grader evidence all carry the payloads; one task passes once and fails once."""
    events: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": f"please {HOSTILE}", "t": 0.0},
        {"type": "model_call", "model": f"model {SCRIPT}", "t": 0.1, "latency_s": 0.4},
        {
            "type": "tool_call",
            "name": f"lookup{IMG}",
            "arguments": {"q": HOSTILE, "url": "javascript:alert(1)"},
            "call_id": "c1",
            "t": 0.5,
        },
        {
            "type": "tool_result",
            "name": "lookup",
            "content": END_SCRIPT,
            "is_error": True,
            "t": 0.7,
        },
        {"type": "message", "role": "assistant", "content": f"done {JS_LINK}", "t": 1.0},
    ]
    rows = []
    for task, trial, ok in ((XSS_TASK, 0, True), (XSS_TASK, 1, False), ("plain", 0, False)):
        rows.append(
            {
                "task_id": task,
                "trial": trial,
                "agent": XSS_AGENT,
                "model": f"model {END_SCRIPT}",
                "family": f"family {SCRIPT}",
                "success": ok,
                "cost_usd": 0.01,
                "events": events,
                "grades": [
                    {
                        "grader": f"judge {SCRIPT}",
                        "passed": ok,
                        "score": 1.0 if ok else 0.0,
                        "evidence": {"reason": f"because {HOSTILE}", "quotes": [END_SCRIPT]},
                    }
                ],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _build(db: Path) -> None:
    from agentgauge.harness.runner import run
    from agentgauge.store import Store
    from agentgauge.suite import load_suite

    retail = load_suite("builtin:retail")
    retail = dataclasses.replace(retail, tasks=retail.tasks[:6])
    with Store(db) as store:
        for agent in ("careful", "hasty"):
            run(
                retail,
                f"builtin:{agent}",
                trials=3,
                variants=["base", "fault:tool_error"],
                store=store,
                run_id=f"retail-{agent}",
                seed=0,
                progress=False,
            )


def _build_hostile(db: Path, tmp: Path) -> None:
    """The hostile trials imported twice, as `XSS_RUN` and as ``other`` (to diff)."""
    source = hostile_jsonl(tmp / "hostile.jsonl")
    for run_id in (XSS_RUN, "other"):
        # The real importer through the real command, as a user would add these trials.
        cmd = [sys.executable, "-m", "agentgauge", "import", "jsonl", str(source)]
        done = subprocess.run(
            [*cmd, "--store", str(db), "--run-id", run_id], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="session")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two reference agents on six retail tasks, 3 trials each, base and a fault variant."""
    db = tmp_path_factory.mktemp("viewer-store") / "agentgauge.db"
    _build(db)
    return db


@pytest.fixture(scope="session")
def hostile_store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("viewer-hostile")
    db = folder / "agentgauge.db"
    _build_hostile(db, folder)
    return db


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclasses.dataclass
class Served:
    """A viewer serving a store: its address and the app (to read its caches)."""

    url: str
    host: str
    port: int
    app: Any


@contextmanager
def serving(store: Path) -> Iterator[Served]:
    """The viewer of ``store``, in uvicorn in a thread (as ``agentgauge view`` runs it)."""
    import uvicorn

    from agentgauge.viewer.app import create_app
    from agentgauge.viewer.serve import open_socket

    sock = open_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = create_app(store)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the viewer did not start")
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", "127.0.0.1", port, app)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="session")
def served(store_path: Path) -> Iterator[Served]:
    with serving(store_path) as s:
        yield s


@pytest.fixture(scope="session")
def served_hostile(hostile_store_path: Path) -> Iterator[Served]:
    with serving(hostile_store_path) as s:
        yield s
