"""The agent is checked once before the first trial: one line, exit 2, no trial run.

On the main branch before this change each of these agents ran every trial into the
same error (a missing program as 3 agent errors, a closed port as infra errors after
minutes of retries) and the run exited 0.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import StatusServer

from agentgauge.agents.openai import OpenAIAgent
from agentgauge.agents.provider import RetryPolicy
from agentgauge.errors import AgentUnavailable, RunStopped
from agentgauge.harness.runner import run
from agentgauge.store import Store
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"


def agentgauge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True, timeout=120
    )


def closed_port() -> int:
    # Bind and close: nothing listens there afterwards (connection refused).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def run_cli(tmp_path: Path, agent: str, *extra: str) -> subprocess.CompletedProcess[str]:
    db = tmp_path / "s.db"
    return agentgauge("run", str(SUITE), "--agent", agent, "--store", str(db), *extra)


def stored(tmp_path: Path) -> int:
    db = tmp_path / "s.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.OperationalError:  # no schema: nothing was ever written
        return 0
    finally:
        conn.close()


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_a_cmd_program_that_does_not_exist(tmp_path: Path) -> None:
    line = one_line(run_cli(tmp_path, f"cmd:{tmp_path}/no-such-agent --flag"))
    assert "cannot start" in line and "no-such-agent" in line and "No such file" in line
    assert stored(tmp_path) == 0 and not (tmp_path / "s.db").exists()


def test_a_cmd_program_that_exits_at_once(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import sys\nsys.stderr.write('boot failed\\nModuleNotFoundError: x\\n')\n"
                      "sys.exit(3)\n")  # fmt: skip
    line = one_line(run_cli(tmp_path, f"cmd:{sys.executable} {script}"))
    assert "exited with code 3 before it was sent anything" in line
    assert line.endswith("its stderr ends: ModuleNotFoundError: x")
    assert stored(tmp_path) == 0


def test_a_python_spec_that_does_not_import(tmp_path: Path) -> None:
    line = one_line(run_cli(tmp_path, "no_such_package_xyz.agents:solve"))
    assert "cannot import 'no_such_package_xyz.agents'" in line


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (404, "answered HTTP 404 (no such route): no chat-completions route there"),
        (501, "answered HTTP 501 (no such route)"),
        (401, "refused the request (HTTP 401: no such route); no API key was sent"),
    ],
)
def test_an_endpoint_without_a_chat_route_or_key(tmp_path: Path, status: int, words: str) -> None:
    with StatusServer(status, "no such route") as server:
        url = f"http://127.0.0.1:{server.port}/v1"
        line = one_line(run_cli(tmp_path, "openai:m", "--base-url", url))
        assert server.hits == 1  # the one preflight request, no trial
    assert words in line and f"{url}/chat/completions" in line
    assert stored(tmp_path) == 0


def test_an_endpoint_that_is_not_listening(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    line = one_line(run_cli(tmp_path, "openai:m", "--base-url", url))
    assert f"openai:m: no answer from {url}/chat/completions: could not connect" in line
    assert not (tmp_path / "s.db").exists()  # no empty store left behind


def test_a_failed_check_leaves_an_existing_store_without_a_new_run(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: Reply(body=completion("Done."))) as server:
        first = run_cli(tmp_path, "openai:m", "--base-url", server.base_url, "--run-id", "ok")
    assert first.returncode == 0, first.stderr
    url = f"http://127.0.0.1:{closed_port()}/v1"
    one_line(run_cli(tmp_path, "openai:m", "--base-url", url, "--run-id", "new"))
    conn = sqlite3.connect(tmp_path / "s.db")
    try:
        assert [r[0] for r in conn.execute("SELECT run_id FROM runs")] == ["ok"]
    finally:
        conn.close()
    # Resuming the finished run needs no endpoint: nothing is left to run.
    again = run_cli(tmp_path, "openai:m", "--base-url", url, "--run-id", "ok")
    assert again.returncode == 0, again.stderr


def test_a_server_that_answers_runs_and_is_sent_an_empty_conversation(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: Reply(body=completion("Done."))) as server:
        out = run_cli(tmp_path, "openai:m", "--base-url", server.base_url)
    assert out.returncode == 0, out.stderr
    # The preflight is answered 400 before any model runs and not passed to the model.
    assert len(server.requests) >= 3 and all(r["messages"] for r in server.requests)


def test_no_preflight_runs_the_trials_into_their_errors(tmp_path: Path) -> None:
    agent = OpenAIAgent(
        "m", base_url=f"http://127.0.0.1:{closed_port()}/v1", retry=RetryPolicy(max_retries=0)
    )
    with pytest.raises(AgentUnavailable):
        run(SUITE, agent, store=tmp_path / "a.db", progress=False)
    # Every trial an infra error: stored, and the run stopped as the breaker's (exit 3).
    with pytest.raises(RunStopped, match="all 3 trials were infra errors") as caught:
        run(SUITE, agent, store=tmp_path / "b.db", progress=False, preflight=False)
    with Store(tmp_path / "b.db", readonly=True) as s:
        trials = s.trials(caught.value.run_id, events=False)
    assert len(trials) == 3 and all(t.is_infra_error for t in trials)
