"""The ``http:`` adapter against a real aiohttp agent service on 127.0.0.1.

The service (`agentgauge.testing.agent_service.CounterService`) runs its own tools
and replies with the answer, its final state and the calls it made; the harness
grades them like any transcript. Misbehaving services: 500s (retried, then an infra
error), malformed replies (the agent's error, naming the field), slow replies (the
trial's timeout), and a service that is not there (the preflight, exit 2).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.agents import http_agent
from agentgauge.agents.http_agent import HttpAgent, MalformedReply, baggage_header, parse_reply
from agentgauge.agents.provider import ProviderError, ProviderExhausted, RetryPolicy
from agentgauge.agents.resolve import resolve_agent
from agentgauge.errors import AgentUnavailable, InputError, RunStopped
from agentgauge.harness.session import TrialSession
from agentgauge.schema import Task, ToolCallEvent, Trial
from agentgauge.store import Store
from agentgauge.testing.agent_service import CounterService, counter_tasks, run_against
from agentgauge.testing.worlds import COUNTER_TOOLS, CounterEnv

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


def test_graders_read_the_calls_the_service_made(tmp_path: Path) -> None:
    trials = run_against(CounterService(), tmp_path, counter_tasks(3, 5), trials=2)
    assert len(trials) == 4
    for t in trials:
        n = int(t.task_id.split("-")[1])
        assert t.status == "completed" and t.success, t.grades
        assert t.final_state == {"counter": n}  # the service's world, not the local one
        assert t.answer == f"The counter is now {n}."
        assert t.tool_calls == 1 and t.cost_usd == 0.0
        calls = [e for e in t.events if isinstance(e, ToolCallEvent)]
        assert [(c.name, c.arguments) for c in calls] == [("add", {"amount": n})]
        passed = {g.grader: g.passed for g in t.grades}
        assert passed["tool_calls"] is True and passed["trajectory"] is True
        assert passed["state"] is True


def test_without_a_transcript_the_call_graders_fail(tmp_path: Path) -> None:
    trials = run_against(CounterService(transcript=False), tmp_path, counter_tasks(3))
    (t,) = trials
    passed = {g.grader: g.passed for g in t.grades}
    assert passed["state"] is True  # the reported state still counts
    assert passed["tool_calls"] is False and passed["trajectory"] is False
    assert not t.success and t.tool_calls == 0


def test_request_body_and_trace_headers(tmp_path: Path) -> None:
    svc = CounterService()
    trials = {t.trial: t for t in run_against(svc, tmp_path, counter_tasks(3), trials=2)}
    assert len(svc.requests) == 2
    seen_traces = set()
    for req in svc.requests:
        body = req.body
        assert body["protocol"] == "agentgauge.http/1"
        assert body["task_id"] == "add-3" and body["instruction"] == "Please add 3"
        assert body["variant"] == "base" and isinstance(body["seed"], int)
        assert body["policy"].startswith("You keep a counter")
        assert [t["function"]["name"] for t in body["tools"]] == ["get", "add", "transfer_to_human"]
        match = TRACEPARENT.match(req.headers["traceparent"])
        assert match, req.headers["traceparent"]
        trace_id, span_id = match.groups()
        assert int(trace_id, 16) != 0 and int(span_id, 16) != 0
        baggage = dict(kv.split("=", 1) for kv in req.headers["baggage"].split(","))
        assert unquote(baggage["agentgauge.task.id"]) == "add-3"
        trial = trials[int(baggage["agentgauge.trial"])]
        assert body["trial"] == trial.trial
        # The trial records the trace it started, so the service's spans can join it.
        assert trial.metadata["trace_id"] == trace_id
        assert trial.metadata["span_id"] == span_id
        seen_traces.add(trace_id)
    assert len(seen_traces) == 2  # one trace per trial


def test_baggage_percent_encodes_the_task_id() -> None:
    header = baggage_header("a b,c=d;é", 2)
    assert header == "agentgauge.task.id=a%20b%2Cc%3Dd%3B%C3%A9,agentgauge.trial=2"


def stored(folder: Path) -> list[Trial]:
    with Store(folder / "s.db", readonly=True) as db:
        return db.trials("r")


def test_5xx_is_retried_then_an_infra_error(tmp_path: Path) -> None:
    svc = CounterService(mode="error")
    # Stored, then the run is stopped: it measured nothing but the service's failure.
    with pytest.raises(RunStopped, match="the only trial it ran was an infra error"):
        run_against(svc, tmp_path, counter_tasks(3))
    (trial,) = stored(tmp_path)
    assert len(svc.requests) == 3  # the first attempt and FAST_RETRY's two retries
    assert trial.status == "error" and trial.error_kind == "infra"
    assert "gave up after 3 attempts: HTTP 500: internal error" in (trial.error or "")
    # Each attempt started its own trace: a failed attempt's spans are not the trial's.
    assert len({r.headers["traceparent"] for r in svc.requests}) == 3


def test_a_5xx_that_clears_is_recorded_with_its_attempts(tmp_path: Path) -> None:
    svc = CounterService(mode="error", failures=1)
    (trial,) = run_against(svc, tmp_path, counter_tasks(3))
    assert trial.status == "completed" and trial.success
    assert trial.metadata["http_attempts"] == 2
    last = TRACEPARENT.match(svc.requests[-1].headers["traceparent"])
    assert last is not None and trial.metadata["trace_id"] == last.group(1)


@pytest.mark.parametrize(
    ("reply", "named"),
    [
        (b"not json", "reply is not JSON"),
        (b"[1, 2]", "reply must be a JSON object, got a list"),
        (b'{"state": {}}', "reply.answer: required"),
        (b'{"answer": 3}', "reply.answer: must be a string or null, got a number"),
        (b'{"answer": "x", "anwser": "y"}', "reply.anwser: unknown key"),
        (b'{"answer": "x", "state": [1]}', "reply.state: must be an object, got a list"),
        (b'{"answer": "x", "cost_usd": -1}', "reply.cost_usd: must be a number >= 0"),
        (b'{"answer": "x", "confidence": 2}', "reply.confidence: must be a number in [0, 1]"),
        # A number past any float was "OverflowError: int too large to convert to float".
        (
            b'{"answer": "x", "cost_usd": 1' + b"0" * 400 + b"}",
            "reply.cost_usd: must be a number >= 0",
        ),
        (
            b'{"answer": "x", "confidence": 1' + b"0" * 400 + b"}",
            "reply.confidence: must be a number in [0, 1]",
        ),
        (b'{"answer": "x", "transcript": {}}', "reply.transcript: must be a list"),
        # Infinity in a free-form value reached the store's JSON, which cannot hold it.
        (b'{"answer": "x", "state": {"x": [1e999]}}', "reply.state.x[0]: must be a finite"),
        (
            b'{"answer": "x", "transcript": [{"type": "tool_call", "name": "add"},'
            b' {"type": "tool_call", "arguments": {}}]}',
            "reply.transcript[1].name: required field is missing",
        ),
        (b'{"answer": "x", "transcript": [{"type": "shout"}]}', "reply.transcript[0]"),
        (
            b'{"answer": "x", "transcript": [{"type": "model_call", "input_tokens": 5e18},'
            b' {"type": "model_call", "input_tokens": 5e18}]}',
            "reply.transcript: input_tokens add up to more than 2^63",
        ),
        (  # each cost is finite; their sum, the trial's cost, is not (once a traceback)
            b'{"answer": "x", "cost_usd": 1e308, "transcript": [{"type": "model_call",'
            b' "model": "m", "cost_usd": 1e308}]}',
            "reply: cost_usd and the transcript's model_call costs add up to more than the "
            "largest float",
        ),
    ],
)
def test_a_malformed_reply_is_the_agents_error_naming_the_field(
    tmp_path: Path, reply: bytes, named: str
) -> None:
    svc = CounterService(mode="malformed", reply=reply)
    (trial,) = run_against(svc, tmp_path, counter_tasks(3))
    assert len(svc.requests) == 1  # not retried: asking again gets the same bad reply
    assert trial.status == "error" and trial.error_kind == "agent"
    assert trial.error is not None and trial.error.startswith("MalformedReply: ")
    assert named in trial.error


def test_a_slow_service_times_out_as_the_agents_failure(tmp_path: Path) -> None:
    svc = CounterService(mode="slow", delay=30.0)
    (trial,) = run_against(svc, tmp_path, counter_tasks(3), timeout=0.5)
    assert trial.status == "timeout" and trial.error_kind == "agent"
    assert trial.error == "timed out after 0.5s in the agent"
    # The request's trace is kept all the same, so the service's spans can join the trial.
    sent = TRACEPARENT.match(svc.requests[0].headers["traceparent"])
    assert sent is not None and trial.metadata["trace_id"] == sent.group(1)
    assert isinstance(trial.metadata["trace_t0_ns"], int)


def test_a_request_timeout_is_retried_like_a_dropped_connection(tmp_path: Path) -> None:
    svc = CounterService(mode="slow", delay=30.0)
    with pytest.raises(RunStopped, match="the only trial it ran was an infra error"):
        run_against(svc, tmp_path, counter_tasks(3), agent_options={"request_timeout": 0.2})
    (trial,) = stored(tmp_path)
    assert len(svc.requests) == 3
    assert trial.status == "error" and trial.error_kind == "infra"
    assert "request timed out after 0.2 s (request_timeout)" in (trial.error or "")


def test_a_service_down_for_every_trial_stops_the_run_though_all_were_launched(
    tmp_path: Path,
) -> None:
    # 12 trials at the default concurrency of 8: the breaker's first-10 rule trips after
    # the last trial was launched, and the run used to end as if it had measured the
    # agent (exit 0, no "stopped:" line).
    svc = CounterService(mode="error")
    with pytest.raises(RunStopped) as caught:
        run_against(svc, tmp_path, counter_tasks(1, 2, 3), trials=4)
    assert caught.value.reason == (
        "stopped: the first 10 trials were all infra errors; 12 of 12 trials saved"
    )
    assert caught.value.exit_code == 3
    assert len(stored(tmp_path)) == 12 and all(t.is_infra_error for t in stored(tmp_path))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_preflight_refuses_a_service_that_is_not_there() -> None:
    async def go() -> None:
        agent = HttpAgent(f"http://127.0.0.1:{free_port()}/run")
        try:
            with pytest.raises(AgentUnavailable, match=r"no answer from .*could not connect"):
                await agent.preflight()
        finally:
            await agent.aclose()

    asyncio.run(go())


def test_preflight_passes_a_post_only_route_and_refuses_a_404() -> None:
    async def go() -> None:
        svc = CounterService()
        url = await svc.start()
        agent = HttpAgent(url)
        missing = HttpAgent(url.replace("/run", "/nope"))
        try:
            await agent.preflight()  # GET on a POST-only route: 405, so the service is up
            with pytest.raises(AgentUnavailable, match="HTTP 404"):
                await missing.preflight()
        finally:
            await agent.aclose()
            await missing.aclose()
            await svc.stop()

    asyncio.run(go())


def test_preflight_refuses_a_redirect_the_trials_would_not_follow() -> None:
    # The preflight's GET followed a redirect to a POST-only route (405: "up"), and then
    # every trial's POST, which is not redirected, failed as an infra error.
    from aiohttp import web

    async def go() -> None:
        svc = CounterService()
        url = await svc.start()

        async def moved(_: web.Request) -> web.StreamResponse:
            raise web.HTTPFound(url)

        app = web.Application()
        app.router.add_route("*", "/old", moved)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        agent = HttpAgent(f"http://127.0.0.1:{port}/old")
        try:
            with pytest.raises(AgentUnavailable) as caught:
                await agent.preflight()
            assert str(caught.value).endswith(
                f"/old answered HTTP 302 (redirects are not followed; Location: {url}): "
                "give the URL the service answers at"
            )
        finally:
            await agent.aclose()
            await runner.cleanup()
            await svc.stop()

    asyncio.run(go())


def test_cli_run_against_no_service_is_one_line_exit_2(cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(counter_tasks(3)[0].model_dump_json() + "\n")
    url = f"http://127.0.0.1:{free_port()}/run"
    code, _, err = cli(
        "run", str(suite), "--agent", f"http:{url}", "--store", str(tmp_path / "s.db")
    )
    assert code == 2
    assert err.count("\n") == 1 and "no answer from" in err and "Traceback" not in err


def test_spec_spelling() -> None:
    agent = resolve_agent("http:https://agents.example.com/run")
    assert isinstance(agent, HttpAgent) and agent.url == "https://agents.example.com/run"
    assert agent.name == "http:https://agents.example.com/run"
    with pytest.raises(InputError, match="write the agent service as http:http://x/run"):
        resolve_agent("http://x/run")
    with pytest.raises(InputError, match="absolute http:// or https:// URL"):
        resolve_agent("http:ftp://x/run")


def test_header_values_with_control_characters_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InputError, match="header X-Team contains a control character"):
        HttpAgent("http://127.0.0.1:1/run", headers={"X-Team": "a\r\nX-Injected: yes"})
    monkeypatch.setenv("AGENT_KEY", "k\ney")
    with pytest.raises(InputError, match="AGENT_KEY contains a control character"):
        HttpAgent("http://127.0.0.1:1/run", api_key_env="AGENT_KEY")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
replies = st.fixed_dictionaries(
    {},
    optional={
        "answer": json_values,
        "state": json_values,
        "cost_usd": json_values,
        "confidence": json_values,
        "transcript": st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["tool_call", "tool_result", "message", "x"])},
                optional={"name": json_values, "arguments": json_values, "role": json_values},
            ),
            max_size=3,
        )
        | json_values,
    },
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=64), replies.map(lambda r: json.dumps(r).encode())))
def test_hostile_replies_are_refused_by_field_never_a_traceback(body: bytes) -> None:
    try:
        reply = parse_reply(body)
    except MalformedReply as exc:
        assert str(exc).startswith("reply")
    else:
        assert reply["answer"] is None or isinstance(reply["answer"], str)


def test_deeply_nested_reply_is_refused() -> None:
    with pytest.raises(MalformedReply, match="nested too deeply"):
        parse_reply(b'{"answer": "x", "state": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}")


def test_the_documented_example_service_solves_the_counter_suite(cli: Any, tmp_path: Path) -> None:
    """examples/http_agent_service.py, as docs/running-agents.md shows it, in a process
    of its own: every task of examples/counter-suite.yaml passes."""
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(root / "examples" / "http_agent_service.py"), str(port)],
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):  # until it listens (a readiness wait, not a timing check)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        db = tmp_path / "s.db"
        suite = root / "examples" / "counter-suite.yaml"
        url = f"http:http://127.0.0.1:{port}/run"
        code, _, err = cli("run", str(suite), "--agent", url, "--store", str(db), "--run-id", "e")
        assert code == 0, err
    finally:
        proc.terminate()
        proc.wait()
    with Store(db, readonly=True) as store:
        trials = store.trials("e")
    assert len(trials) == 3
    assert all(t.success and t.tool_calls == 1 and t.cost_usd == 0.0 for t in trials)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_but_an_infra_error_naming_it(
    tmp_path: Path, status: int
) -> None:
    # aiohttp followed a 301/302/303 as a GET with no body, and the target's reply
    # ("I never saw a task") was graded as the agent's trial.
    svc = CounterService(mode="malformed", status=status, location="/moved", reply=b"{}")
    with pytest.raises(RunStopped, match="the only trial it ran was an infra error"):
        run_against(svc, tmp_path, counter_tasks(3))
    (trial,) = stored(tmp_path)
    assert len(svc.requests) == 1  # the POST; nothing was sent to /moved
    assert trial.status == "error" and trial.error_kind == "infra"
    assert trial.answer is None
    assert trial.error is not None and trial.error.startswith(f"ProviderError: HTTP {status} from ")
    assert trial.error.endswith("(redirects are not followed; Location: /moved)")


@pytest.mark.parametrize("status", [300, 304])
def test_a_3xx_with_a_json_body_is_not_a_reply(tmp_path: Path, status: int) -> None:
    # A 300 with a well-formed reply was accepted and graded (only >= 400 was refused).
    body = b'{"answer": "The counter is now 3.", "state": {"counter": 3}}'
    svc = CounterService(mode="malformed", status=status, reply=body)
    with pytest.raises(RunStopped, match="the only trial it ran was an infra error"):
        run_against(svc, tmp_path, counter_tasks(3))
    (trial,) = stored(tmp_path)
    assert trial.status == "error" and trial.error_kind == "infra" and trial.answer is None
    assert f"HTTP {status} from " in (trial.error or "")


def test_any_2xx_with_a_reply_is_accepted(tmp_path: Path) -> None:
    body = b'{"answer": "The counter is now 3.", "state": {"counter": 3}}'
    (trial,) = run_against(
        CounterService(mode="malformed", status=201, reply=body), tmp_path, counter_tasks(3)
    )
    assert trial.status == "completed" and trial.answer == "The counter is now 3."


class _MixedEnv(CounterEnv):
    """A counter whose policy and tools depend on the task (``add-N``): the tasks of one
    suite offering different ones, some sharing a tool list, one offering none, two
    sharing one list they change in place (each names its task in it)."""

    ONE: ClassVar[list[dict[str, Any]]] = COUNTER_TOOLS[:1]
    SHARED: ClassVar[list[dict[str, Any]]] = [{"type": "function", "function": {"name": "x"}}]
    KINDS: ClassVar[dict[int, tuple[str, list[dict[str, Any]]]]] = {
        0: ("", []),
        1: ("Odd policy.", ONE),
        2: ("Even policy.", ONE),  # the same list, another policy
        3: ("Even policy.", COUNTER_TOOLS[:2]),  # the same policy, another list
        4: ("Even policy.", SHARED),
        5: ("Even policy.", SHARED),  # the same list object, changed since
    }

    def __init__(self, task: Task, *, variant: str, seed: int) -> None:
        super().__init__(task, variant=variant, seed=seed)
        self._kind = self.KINDS[int(task.id.split("-")[1])]
        if self._kind[1] is self.SHARED:
            self.SHARED[0]["function"]["description"] = f"for {task.id}"

    @property
    def policy(self) -> str:
        return self._kind[0]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._kind[1]


def test_each_request_carries_its_own_tasks_policy_and_tools(tmp_path: Path) -> None:
    # The policy and tool list are encoded once and reused while they stay the same:
    # a task with other ones (or none) must not be sent the last task's.
    svc = CounterService()
    tasks = counter_tasks(*_MixedEnv.KINDS)
    run_against(svc, tmp_path, tasks, trials=3, concurrency=1, env_factory=_MixedEnv)
    assert len(svc.requests) == 3 * len(tasks)
    for req in svc.requests:
        task_id = req.body["task_id"]
        policy, tools = _MixedEnv.KINDS[int(task_id.split("-")[1])]
        assert req.body.get("policy") == (policy or None)
        assert ("policy" in req.body) == bool(policy) and ("tools" in req.body) == bool(tools)
        if tools is _MixedEnv.SHARED:
            assert req.body["tools"] == [
                {"type": "function", "function": {"name": "x", "description": f"for {task_id}"}}
            ]
        else:
            assert req.body.get("tools") == (tools or None)


async def _answer_with(response: web.StreamResponse | bytes) -> TrialSession:
    """Run one trial of ``add-3`` against a service whose every reply is ``response``
    (bytes: sent in chunks, with no Content-Length); the trial's session."""

    async def reply(request: web.Request) -> web.StreamResponse:
        await request.read()
        if isinstance(response, web.StreamResponse):
            return response
        stream = web.StreamResponse(headers={"Content-Type": "application/json"})
        stream.enable_chunked_encoding()
        await stream.prepare(request)
        for start in range(0, len(response), 1000):
            await stream.write(response[start : start + 1000])
        await stream.write_eof()
        return stream

    app = web.Application()
    app.router.add_post("/run", reply)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    (task,) = counter_tasks(3)
    session = TrialSession(task.id, CounterEnv(task), seed=1, trial=0)
    agent = HttpAgent(f"http://127.0.0.1:{port}/run", retry=RetryPolicy(max_retries=0))
    try:
        await agent(session)
    finally:
        await agent.aclose()
        await runner.cleanup()
    return session


def _reply(padding: int) -> bytes:
    return json.dumps({"answer": "The counter is now 3." + " " * padding}).encode()


def _gzipped(body: bytes) -> web.Response:
    return web.Response(
        body=gzip.compress(body),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(lambda: web.Response(body=_reply(0)), id="content-length"),
        pytest.param(lambda: _reply(0), id="chunked"),
        pytest.param(lambda: _gzipped(_reply(0)), id="gzip"),
    ],
)
def test_a_reply_is_read_however_it_is_framed(response: Any) -> None:
    session = asyncio.run(_answer_with(response()))
    assert session.outcome().answer == "The counter is now 3."


@pytest.mark.parametrize(
    ("response", "said"),
    [
        # Content-Length says so before a byte of the body is read.
        (lambda: web.Response(body=_reply(5000)), r"^reply of \d+ bytes is larger than 2000"),
        # No length: read up to the cap, then refused.
        (lambda: _reply(5000), "^reply is larger than 2000 bytes$"),
        # Compressed: its Content-Length is under the cap, what it inflates to is not.
        (lambda: _gzipped(_reply(50_000)), "^reply is larger than 2000 bytes$"),
    ],
    ids=["content-length", "chunked", "gzip"],
)
def test_a_reply_past_the_size_cap_is_refused_however_it_is_framed(
    monkeypatch: pytest.MonkeyPatch, response: Any, said: str
) -> None:
    monkeypatch.setattr(http_agent, "MAX_REPLY_BYTES", 2000)
    with pytest.raises(MalformedReply, match=said):
        asyncio.run(_answer_with(response()))


@pytest.mark.parametrize(
    ("status", "error", "said"),
    [
        (503, ProviderExhausted, "gave up after 1 attempt: HTTP 503: Service Unavailable"),
        (404, ProviderError, "HTTP 404 from http://127.0.0.1:"),
    ],
)
def test_an_error_page_past_the_size_cap_is_judged_by_its_status(
    monkeypatch: pytest.MonkeyPatch, status: int, error: type[Exception], said: str
) -> None:
    # A 5xx whose Content-Length passed the cap was the agent's malformed reply, not
    # the retried infra error its status makes it.
    monkeypatch.setattr(http_agent, "MAX_REPLY_BYTES", 2000)
    page = web.Response(status=status, body=b"x" * 5000, content_type="text/html")
    with pytest.raises(error, match=re.escape(said)):
        asyncio.run(_answer_with(page))


def test_a_reply_that_is_no_json_says_its_content_type_and_how_it_begins() -> None:
    # A proxy's or framework's HTML page under a 200 (a login wall, a default route):
    # "Expecting value at column 1" alone did not say what came back.
    page = web.Response(
        body=b"<!DOCTYPE html>\n<html><title>Sign in\x1b[31m</title>" + b" " * 500,
        content_type="text/html",
    )
    with pytest.raises(MalformedReply) as caught:
        asyncio.run(_answer_with(page))
    said = str(caught.value)
    assert said.startswith("reply is not JSON: invalid JSON: Expecting value"), said
    assert "Content-Type text/html" in said, said
    assert "it begins '<!DOCTYPE html> <html><title>Sign in [31m</title>'" in said, said
    assert "\x1b" not in said and len(said) < 300, said


@pytest.mark.parametrize("status", [200, 204])
def test_an_empty_reply_says_it_is_empty(status: int) -> None:
    # A handler that forgot to write its body: "Expecting value at column 1" read as
    # a JSON mistake in a body that was not there.
    with pytest.raises(MalformedReply) as caught:
        asyncio.run(_answer_with(web.Response(status=status)))
    assert str(caught.value) == (
        "reply is empty: the service answered with no body, where a JSON object with "
        "'answer' is required"
    )
