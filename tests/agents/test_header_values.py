"""An API key or header with a control character is refused before any request.

A CR/LF in ``OPENAI_API_KEY`` would start new header lines (``X-Injected: yes``,
a second ``Host:``). The server here is a real HTTP/1.1 server on 127.0.0.1 that
records the headers of every request it receives, so the tests see what
actually went over the wire.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.graders.judge_client import JudgeClient, JudgeConfig
from agentgauge.testing.openai_server import OpenAIServer, fixed_latency

INJECTED = "sk-test\r\nX-Injected: yes\r\nHost: evil.example"


def _run(server: OpenAIServer, key: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": key}
    env.pop("AGENTGAUGE_PRICES", None)
    agent = ["--agent", "openai:fake-model", "--base-url", server.base_url]
    args = ["run", "builtin:functions", "--trials", "1", *agent, "--store", str(store)]
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_key_with_crlf_is_one_line_exit_2_and_nothing_is_sent(tmp_path: Path) -> None:
    with OpenAIServer(fixed_latency(0.0)) as server:
        proc = _run(server, INJECTED, tmp_path / "s.db")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "agentgauge: error: OPENAI_API_KEY contains a control character (\\r\\n); "
        "header values must be printable"
    ]
    assert server.headers == []  # not one request, so no header was injected anywhere


def test_a_clean_key_reaches_the_server_as_one_header(tmp_path: Path) -> None:
    # The control for the test above: the server does record what a run sends.
    with OpenAIServer(fixed_latency(0.0)) as server:
        proc = _run(server, "sk-clean", tmp_path / "s.db")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert server.headers
    assert {h.get("authorization") for h in server.headers} == {"Bearer sk-clean"}
    assert not any("x-injected" in h for h in server.headers)


@pytest.mark.parametrize(
    ("config", "env_key", "named"),
    [
        ({"headers": {"api-key": "k\nX-Injected: yes"}}, None, "judge header 'api-key'"),
        ({"headers": {"X-Gw": "k\x00"}}, None, "judge header 'X-Gw'"),
        ({}, INJECTED, "OPENAI_API_KEY"),
        ({"api_key_env": "JUDGE_KEY"}, INJECTED, "JUDGE_KEY"),
    ],
)
def test_the_judge_refuses_control_characters_before_any_request(
    monkeypatch: pytest.MonkeyPatch, config: dict[str, object], env_key: str | None, named: str
) -> None:
    if env_key is not None:
        monkeypatch.setenv(str(config.get("api_key_env", "OPENAI_API_KEY")), env_key)
    with (
        OpenAIServer(fixed_latency(0.0)) as server,
        pytest.raises(InputError, match="contains a control character") as err,
    ):
        JudgeClient(JudgeConfig(base_url=server.base_url, model="judge", **config))  # type: ignore[arg-type]
    assert str(err.value).startswith(named)
    assert server.headers == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("127.0.0.1:8000/v1", "the scheme must be http or https"),
        ("ftp://judge.example/v1", "the scheme must be http or https"),
        ("http://127.0.0.1:99999/v1", "does not parse as a URL"),
        ("http:///v1", "names no host"),
    ],
)
def test_the_judge_refuses_an_unusable_base_url_before_any_request(url: str, why: str) -> None:
    """A typo in the judge's base URL is one input error up front, not a failed grade per
    trial after every retry."""
    with pytest.raises(InputError, match=why) as err:
        JudgeClient(JudgeConfig(base_url=url, model="judge"))
    assert "judge base URL" in str(err.value)
