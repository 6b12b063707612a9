"""A run that a live session is writing, in the viewer: the runs list and the run's page
say who writes it (as ``agentgauge runs`` does), so a user watching it in the browser
knows its numbers will move; the session's strings are shown as text. A claim left by a
session that died is not shown: nobody writes that run."""

from __future__ import annotations

import html
import json
import sqlite3
import time
import urllib.request
from pathlib import Path

from agentgauge_browser import SCRIPT
from viewer_support import Served, serving

from agentgauge.harness.runner import run
from agentgauge.store.claims import STALE_AFTER
from agentgauge.testing.worlds import counting_agent

ROOT = Path(__file__).resolve().parents[2]
COUNTER = ROOT / "examples" / "counter-suite.yaml"
HOST = f"host {SCRIPT}"


def _claim(db: Path, heartbeat: float) -> None:
    """Run ``r`` claimed by ``agentgauge run`` on another host (whose heartbeat alone says
    whether it lives), its host name hostile."""
    claim = {
        "token": "theirs",
        "pid": 4242,
        "host": HOST,
        "since": "2026-01-02T03:04:05+00:00",
        "heartbeat": heartbeat,
        "command": "agentgauge run",
    }
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('claim:r', ?)", (json.dumps(claim),))


def _page(served: Served, path: str) -> str:
    with urllib.request.urlopen(served.url + path, timeout=60) as r:
        body: str = r.read().decode()
    return body


def _json(served: Served, path: str) -> dict[str, object]:
    with urllib.request.urlopen(f"{served.url}{path}?format=json", timeout=60) as r:
        data: dict[str, object] = json.load(r)
    return data


def test_the_runs_list_and_the_run_page_say_a_live_session_is_writing_the_run(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    run(str(COUNTER), counting_agent, store=db, run_id="r", progress=False)
    _claim(db, time.time())
    who = f"agentgauge run, pid 4242 on {html.escape(HOST)}, since 2026-01-02T03:04:05+00:00"
    with serving(db) as served:
        listed = _page(served, "/")
        assert "<th>writing</th>" in listed
        assert who in listed
        page = _page(served, "/runs/r")
        assert 'id="writing"' in page and who in page
        assert "will change" in page
        tasks = _page(served, "/runs/r/tasks")
        assert 'id="writing"' in tasks and who in tasks
        diff = _page(served, "/diff?a=r&b=r")
        assert 'id="writing-a"' in diff and 'id="writing-b"' in diff and who in diff
        for body in (listed, page, tasks, diff):
            assert SCRIPT not in body  # escaped, never markup
        # The JSON twins carry the same claim.
        [row] = _json(served, "/")["runs"]  # type: ignore[misc]
        assert row["writing"]["host"] == HOST
        assert _json(served, "/runs/r")["run"]["writing"]["pid"] == 4242  # type: ignore[index]

        # Silent for longer than a claim lives: its session died, nobody writes the run.
        _claim(db, time.time() - STALE_AFTER - 1)
        listed = _page(served, "/")
        page = _page(served, "/runs/r")
        assert "<th>writing</th>" not in listed and "4242" not in listed
        assert 'id="writing"' not in page and "4242" not in page
        assert 'id="writing"' not in _page(served, "/runs/r/tasks")
        assert 'id="writing-a"' not in _page(served, "/diff?a=r&b=r")
