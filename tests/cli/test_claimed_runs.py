"""A run that a live session is writing: `agentgauge runs` shows who writes it, and the
commands that change a run (`grade`, `grade --activate-version`, `runs --mark` and
`--unmark`) refuse it with one line and exit 2, leaving the store as it was; a claim
left by a session that died does not stop them. `grade` claims the run while it
re-grades, so a resume typed meanwhile is refused, naming it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import claim_from_elsewhere, stored_claims

from agentgauge.harness.runner import run
from agentgauge.store import Store
from agentgauge.store.claims import STALE_AFTER
from agentgauge.testing.worlds import counting_agent
from agentgauge.viewer import queries

ROOT = Path(__file__).resolve().parents[2]
COUNTER = ROOT / "examples" / "counter-suite.yaml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "250"}

# A session that claims run ``r`` as `agentgauge run` does, keeps the claim fresh, says
# "held" and waits to be killed.
HOLD = """
import sqlite3, sys, time
from agentgauge.store import claims

conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
token, _ = claims.claim(conn, "r")
conn.execute("COMMIT")
claims.Heartbeat(sys.argv[1], "r", token)
print("held", flush=True)
time.sleep(600)
"""

# `agentgauge grade`, its first grading waiting for the file ``go`` (after saying so).
SLOW_GRADE = """
import runpy, sys, time
from pathlib import Path

import agentgauge.graders.regrade
from agentgauge.store import claims

claims.HEARTBEAT_EVERY = 0.05  # to see it beat while the grading waits

regrade = sys.modules["agentgauge.graders.regrade"]  # the package names a function so
graded = regrade._grade

def waiting(*args):
    Path("grading").touch()
    while not Path("go").exists():
        time.sleep(0.01)
    return graded(*args)

regrade._grade = waiting
sys.argv = ["agentgauge", "grade", "s.db:r", "--json"]
runpy.run_module("agentgauge", run_name="__main__")
"""


def _cli(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=where,
        timeout=120,
    )


def _state(db: Path) -> tuple[Any, ...]:
    """Everything in the store but the claims' heartbeats."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return tuple(
            conn.execute(
                "SELECT key, CASE WHEN key LIKE 'claim:%' THEN json_remove(value, '$.heartbeat')"
                " ELSE value END FROM meta ORDER BY key"
                if name == "meta"
                else f"SELECT * FROM {name} ORDER BY 1"
            ).fetchall()
            for name in sorted(tables)
        )
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A run ``r`` of three trials with its tasks, and an inactive grade version 2."""
    db = tmp_path / "s.db"
    run(str(COUNTER), counting_agent, store=db, run_id="r", progress=False)
    done = _cli(tmp_path, "grade", "s.db:r")
    assert done.returncode == 0, done.stderr
    return db


@contextlib.contextmanager
def _holding(db: Path) -> Iterator[subprocess.Popen[str]]:
    """A live process holding run ``r``'s claim."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def _refused(done: subprocess.CompletedProcess[str], pid: int, command: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    host = socket.gethostname()
    assert line.startswith(
        f"agentgauge: error: run 'r' is being written by another session ({command}, "
        f"pid {pid} on host {host}, since "
    ), line
    assert line.endswith(
        f"wait for it to end, or stop it (Ctrl-C in its terminal, or kill {pid} on {host}), "
        "then run this command again"
    ), line
    assert done.stdout == ""


def test_runs_shows_the_session_writing_a_run(store: Path) -> None:
    with _holding(store) as holder:
        _shown(store, holder)


def _shown(store: Path, holder: subprocess.Popen[str]) -> None:
    [claim] = stored_claims(store)
    listed = _cli(store.parent, "runs", "--store", "s.db", "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["runs"]
    writing = entry["writing"]
    assert writing["command"] == "agentgauge run"
    assert (writing["pid"], writing["host"]) == (holder.pid, socket.gethostname())
    assert writing["since"] == claim["since"]
    assert 0 <= writing["heartbeat_age_s"] < STALE_AFTER
    assert writing["heartbeat"].endswith("+00:00")

    # The viewer's list of runs and its run header carry the same field.
    with Store(store, readonly=True) as db:
        [row] = queries.runs_page(db).rows
        header = queries.run_header(db, "r")
    assert row["writing"]["pid"] == header["writing"]["pid"] == holder.pid

    table = _cli(store.parent, "runs", "--store", "s.db")
    assert table.returncode == 0, table.stderr
    assert "writing" in table.stdout
    assert f"agentgauge run, pid {holder.pid} on {socket.gethostname()}" in table.stdout

    # Killed outright: its claim is left behind, stale, and nobody is writing the run.
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert [c["pid"] for c in stored_claims(store)] == [holder.pid]
    listed = _cli(store.parent, "runs", "--store", "s.db", "--json")
    assert json.loads(listed.stdout)["runs"][0]["writing"] is None
    table = _cli(store.parent, "runs", "--store", "s.db")
    assert "writing" not in table.stdout and str(holder.pid) not in table.stdout


def test_commands_that_change_a_run_refuse_it_while_a_live_session_writes_it(
    store: Path,
) -> None:
    where = store.parent
    assert _cli(where, "runs", "--store", "s.db", "--mark", "r", "previous").returncode == 0
    with _holding(store) as holder:
        _refusing(store, holder)


def _refusing(store: Path, holder: subprocess.Popen[str]) -> None:
    where = store.parent
    before = _state(store)
    for args in (
        ("grade", "s.db:r"),
        ("grade", "s.db:r", "--activate"),
        ("grade", "r", "--store", "s.db", "--activate-version", "2"),
        ("runs", "--store", "s.db", "--mark", "r", "human"),
        ("runs", "--store", "s.db", "--unmark", "r"),
    ):
        _refused(_cli(where, *args), holder.pid, "agentgauge run")
        assert _state(store) == before, args
    # Reading is not writing: the versions are listed as before.
    assert _cli(where, "grade", "s.db:r", "--list").returncode == 0

    # The session dies (kill -9): its claim, left behind, stops nobody.
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert _cli(where, "grade", "s.db:r", "--activate-version", "2").returncode == 0
    assert _cli(where, "runs", "--store", "s.db", "--unmark", "r").returncode == 0
    graded = _cli(where, "grade", "s.db:r", "--json")
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["version"] == 3
    # The grade took the stale claim over and gave it up as it ended.
    assert stored_claims(store) == []


def test_a_session_on_another_host_holds_the_run_while_its_heartbeat_is_fresh(
    store: Path,
) -> None:
    where = store.parent
    claim_from_elsewhere(store, time.time() - 5)
    before = _state(store)
    refused = _cli(where, "runs", "--store", "s.db", "--mark", "r", "previous")
    assert refused.returncode == 2
    assert "(agentgauge run, pid 1 on host other-host, since 2026-01-02" in refused.stderr
    assert "kill 1 on other-host" in refused.stderr
    assert _state(store) == before
    listed = json.loads(_cli(where, "runs", "--store", "s.db", "--json").stdout)
    assert listed["runs"][0]["writing"]["host"] == "other-host"

    # Silent for longer than a claim lives: taken to have died.
    claim_from_elsewhere(store, time.time() - STALE_AFTER - 1)
    listed = json.loads(_cli(where, "runs", "--store", "s.db", "--json").stdout)
    assert listed["runs"][0]["writing"] is None
    assert _cli(where, "runs", "--store", "s.db", "--mark", "r", "previous").returncode == 0
    assert _cli(where, "grade", "s.db:r").returncode == 0


def test_grade_claims_the_run_while_it_regrades(store: Path) -> None:
    where = store.parent
    grading = subprocess.Popen(
        [sys.executable, "-c", SLOW_GRADE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=where,
    )
    try:
        for _ in range(6000):
            if (where / "grading").exists() or grading.poll() is not None:
                break
            time.sleep(0.01)
        assert (where / "grading").exists(), grading.communicate()
        listed = json.loads(_cli(where, "runs", "--store", "s.db", "--json").stdout)
        writing = listed["runs"][0]["writing"]
        assert (writing["command"], writing["pid"]) == ("agentgauge grade", grading.pid)
        # Its claim is kept fresh while it grades: the store's write lock is not held
        # then, so the heartbeat lands (it could not before, and the claim went stale).
        [first] = stored_claims(store)
        for _ in range(6000):
            if stored_claims(store)[0]["heartbeat"] != first["heartbeat"]:
                break
            time.sleep(0.01)
        assert stored_claims(store)[0]["heartbeat"] > first["heartbeat"]

        # A resume typed meanwhile is refused at once, naming the re-grade.
        resume = _cli(
            where,
            *("run", str(COUNTER), "--agent", "agentgauge.testing.worlds:counting_agent"),
            *("--store", "s.db", "--run-id", "r", "--trials", "2", "--no-progress"),
        )
        assert resume.returncode == 2, resume.stderr
        assert (
            f"run 'r' is being written by another session (agentgauge grade, pid "
            f"{grading.pid} on host {socket.gethostname()}, since "
        ) in resume.stderr
        marked = _cli(where, "runs", "--store", "s.db", "--mark", "r", "previous")
        _refused(marked, grading.pid, "agentgauge grade")
    finally:
        (where / "go").touch()
        out, err = grading.communicate(timeout=120)
    assert grading.returncode == 0, err
    assert json.loads(out)["version"] == 3
    assert stored_claims(store) == []  # given up as it ended
    listed = json.loads(_cli(where, "runs", "--store", "s.db", "--json").stdout)
    assert listed["runs"][0]["n_trials"] == 3 and listed["runs"][0]["writing"] is None
