"""The openai: adapter end to end against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.openai import OpenAIAgent
from agentgauge.agents.provider import RetryPolicy
from agentgauge.errors import RunStopped
from agentgauge.harness.runner import run
from agentgauge.schema import ModelCallEvent, Task, Trial
from agentgauge.store import Store
from agentgauge.testing.openai_server import (
    OpenAIServer,
    Reply,
    Responder,
    completion,
    error_body,
    tool_call,
)
from agentgauge.testing.worlds import make_counter_env

FAST = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)


def tasks() -> list[Task]:
    return [
        Task(
            id=f"t{i}",
            instruction=f"task t{i}: please add {i + 1}",
            expectations={"final_state": {"counter": i + 1}},
        )
        for i in range(3)
    ]


class Scripted:
    """Plays a model that adds the instruction's number, then reports; task t0's first
    request meets a 429 then a 500, task t2's first request is slower than the timeout."""

    def __init__(self, slow_task: str | None = "t2", model: str = "fake-model") -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.slow_task = slow_task
        self.model = model

    def __call__(self, req: dict[str, Any]) -> Reply:
        msgs = req["messages"]
        instruction = msgs[1]["content"]
        task = instruction.split()[1].rstrip(":")
        with self.lock:
            key = json.dumps(msgs, sort_keys=True)
            self.seen[key] += 1
            n = self.seen[key]
        if len(msgs) == 2:
            if task == "t0" and n == 1:
                return Reply(
                    429, error_body("slow down", "rate_limit"), headers={"Retry-After": "0"}
                )
            if task == "t0" and n == 2:
                return Reply(500, error_body("oops"))
            if task == self.slow_task:
                return Reply(body=completion("late"), delay_s=5.0)
            amount = int(instruction.split()[-1])
            return Reply(
                body=completion(
                    tool_calls=[tool_call("add", {"amount": amount})],
                    model=self.model,
                    prompt_tokens=100,
                    completion_tokens=20,
                )
            )
        assert msgs[-1]["role"] == "tool"
        return Reply(
            body=completion("Done.", model=self.model, prompt_tokens=130, completion_tokens=5)
        )


def go(
    server: OpenAIServer, tmp_path: Path, *, timeout: float | None = 1.0, **options: Any
) -> list[Trial]:
    options.setdefault("retry", FAST)
    run(
        tasks(),
        "openai:fake-model",
        store=tmp_path / "s.db",
        run_id="r",
        env_factory=make_counter_env,
        timeout=timeout,
        concurrency=3,
        progress=False,
        agent_options={"base_url": server.base_url, **options},
    )
    return stored(tmp_path)


def go_stopped(server: OpenAIServer, tmp_path: Path, **options: Any) -> list[Trial]:
    """Every trial an infra error: each is stored, then the circuit breaker stops the
    run (exit 3) though every trial had run."""
    with pytest.raises(RunStopped, match="all 3 trials were infra errors; 3 of 3 trials saved"):
        go(server, tmp_path, **options)
    return stored(tmp_path)


def stored(tmp_path: Path) -> list[Trial]:
    with Store(tmp_path / "s.db") as db:
        return sorted(db.trials("r"), key=lambda t: t.task_id)


def test_tool_loop_usage_cost_retries_and_a_slow_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-test")
    script = Scripted()
    with OpenAIServer(script) as server:
        t0, t1, t2 = go(
            server,
            tmp_path,
            api_key_env="MY_KEY",
            prices={"fake-model": {"input": 1.0, "output": 2.0}},
        )
    # The run completed: every task has its trial.
    assert [t.task_id for t in (t0, t1, t2)] == ["t0", "t1", "t2"]
    # t0 succeeded after a 429 and a 500: the server saw the first request three times.
    first_t0 = next(k for k in script.seen if "task t0" in k and k.count('"role"') == 2)
    assert script.seen[first_t0] == 3
    assert t0.success and t0.status == "completed"
    calls = [e for e in t0.events if isinstance(e, ModelCallEvent)]
    assert [c.attempts for c in calls] == [3, 1]
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(100, 20), (130, 5)]
    # cost = (100*1 + 20*2)/1e6 + (130*1 + 5*2)/1e6 = 140e-6 + 140e-6
    assert t0.cost_usd == pytest.approx(280e-6)
    assert (t0.input_tokens, t0.output_tokens, t0.model_calls) == (230, 25, 2)
    assert t1.success and t1.model_calls == 2 and t1.answer == "Done."
    assert [e.type for e in t1.events] == [
        "message",
        "model_call",
        "tool_call",
        "tool_result",
        "model_call",
        "message",
    ]
    # t2's first response came after the trial's 1 s timeout: the provider's fault.
    assert t2.status == "timeout" and t2.error_kind == "infra" and t2.is_infra_error
    # What the adapter sent: policy as system, tools offered, tool result sent back, key.
    second = next(r for r in server.requests if len(r["messages"]) == 4)
    assert second["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in second["tools"]] == ["get", "add", "transfer_to_human"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "add"
    assert second["messages"][3]["role"] == "tool"
    assert json.loads(second["messages"][3]["content"])["counter"] >= 1
    assert all(h.get("authorization") == "Bearer sk-test" for h in server.headers)


def test_unknown_price_is_recorded_as_missing_not_zero(tmp_path: Path) -> None:
    with OpenAIServer(Scripted(slow_task=None, model="mystery-model-7")) as server:
        trials = go(server, tmp_path)
    assert all(t.success for t in trials)
    assert all(t.cost_usd is None and t.input_tokens == 230 for t in trials)


def test_a_call_with_an_attempt_timed_out_after_it_was_sent_has_an_unknown_cost(
    tmp_path: Path,
) -> None:
    # Each trial's first request is answered after the 0.3 s request timeout: the retry
    # is answered in time. The provider may have billed the first attempt too; the
    # trial counted only the answer's cost, (100·1 + 20·2)/1e6 + (130·1 + 5·2)/1e6.
    late: set[str] = set()
    lock = threading.Lock()

    def responder(req: dict[str, Any]) -> Reply:
        msgs = req["messages"]
        if len(msgs) > 2:
            return Reply(body=completion("Done.", prompt_tokens=130, completion_tokens=5))
        with lock:
            first = msgs[1]["content"] not in late
            late.add(msgs[1]["content"])
        if first:
            return Reply(body=completion("late"), delay_s=1.0)
        call = tool_call("add", {"amount": int(msgs[1]["content"].split()[-1])})
        return Reply(body=completion(tool_calls=[call], prompt_tokens=100, completion_tokens=20))

    with OpenAIServer(responder) as server:
        trials = go(
            server,
            tmp_path,
            timeout=None,
            request_timeout=0.3,
            prices={"fake-model": {"input": 1.0, "output": 2.0}},
        )
    for t in trials:
        assert t.status == "completed" and t.success, t.error
        first, second = (e for e in t.events if isinstance(e, ModelCallEvent))
        assert (first.attempts, first.cost_usd, first.input_tokens) == (2, None, None)
        assert first.price_source == (
            "unknown: an attempt before the one that answered was sent and its reply not "
            "read (request timed out after 0.3 s (request_timeout)); what the endpoint "
            "billed for it is unknown"
        )
        assert second.cost_usd == pytest.approx(140e-6)  # answered at once: priced
        assert t.cost_usd is None and t.input_tokens is None


def test_a_call_whose_every_attempt_timed_out_is_on_the_record_at_an_unknown_cost(
    tmp_path: Path,
) -> None:
    # Retries spent on timeouts: an infra error, as before, but not a free one.
    with OpenAIServer(lambda req: Reply(body=completion("late"), delay_s=1.0)) as server:
        trials = go_stopped(
            server,
            tmp_path,
            timeout=None,
            request_timeout=0.2,
            retry=RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.01),
        )
    for t in trials:
        assert t.is_infra_error and t.error is not None and "timed out" in t.error
        (call,) = (e for e in t.events if isinstance(e, ModelCallEvent))
        assert (call.attempts, call.cost_usd) == (2, None)
        assert call.price_source is not None
        assert call.price_source.startswith("unknown: a request was sent and its reply not read")
        assert t.cost_usd is None


def test_an_endpoint_that_always_fails_gives_infra_errors(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: Reply(500, error_body("down"))) as server:
        trials = go_stopped(server, tmp_path)
        requests = len(server.requests)
    assert requests == 3 * (FAST.max_retries + 1)  # bounded retries for each trial
    for t in trials:
        assert t.status == "error" and t.error_kind == "infra" and t.is_infra_error
        assert t.error == "ProviderExhausted: gave up after 4 attempts: HTTP 500: down"


def test_client_errors_are_not_retried_and_are_infra(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: Reply(401, error_body("bad key", "auth"))) as server:
        trials = go_stopped(server, tmp_path)
        assert len(server.requests) == 3
    assert all(t.error == "ProviderError: HTTP 401: bad key" and t.is_infra_error for t in trials)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (tool_call("add", '{"amount": 1'), "arguments of 'add' are not valid JSON"),
        (tool_call("add", "[1, 2]"), "arguments of 'add' are not a JSON object"),
        (tool_call("delete_everything", {}), "call to unknown tool 'delete_everything'"),
    ],
)
def test_malformed_tool_calls_are_the_agents_error(
    tmp_path: Path, call: dict[str, Any], message: str
) -> None:
    with OpenAIServer(lambda req: Reply(body=completion(tool_calls=[call]))) as server:
        trials = go(server, tmp_path)
    for t in trials:
        assert t.status == "error" and t.error_kind == "agent"
        assert t.error is not None and t.error.startswith("MalformedToolCall: " + message)
        assert t.model_calls == 1  # the call that produced it is on the record


def _fn(**function: Any) -> list[dict[str, Any]]:
    return [{"id": "c1", "type": "function", "function": function}]


@pytest.mark.parametrize(
    ("tool_calls", "content", "field"),
    [
        (5, None, "tool_calls is a number, not a list"),
        ("add", None, "tool_calls is a string, not a list"),
        ([5], None, "tool_calls[0] is a number, not an object"),
        ([{"function": "add"}], None, "tool_calls[0].function is a string, not an object"),
        (_fn(arguments="{}"), None, "tool_calls[0].function.name is missing, not a string"),
        (_fn(name=7), None, "tool_calls[0].function.name is a number, not a string"),
        (_fn(name="add", arguments=[1]), None, "tool_calls[0].function.arguments is a list"),
        ([{"id": 3, "function": {"name": "add"}}], None, "tool_calls[0].id is a number"),
        (None, 12345, "content is a number, not a string or null"),
    ],
)
def test_a_reply_not_in_the_chat_completions_shape_is_a_provider_error(
    tmp_path: Path, tool_calls: Any, content: Any, field: str
) -> None:
    # Once a bare TypeError ('int' object is not iterable) or, for "add", the tool calls
    # a, d, d, blamed on the agent; a malformed response is the provider's (infra).
    body = completion("Done.")
    body["choices"][0]["message"].update(content=content, tool_calls=tool_calls)
    with OpenAIServer(lambda req: Reply(body=body)) as server:
        trials = go_stopped(server, tmp_path)
    for t in trials:
        assert (t.status, t.error_kind) == ("error", "infra"), t.error
        assert t.error is not None and t.error.startswith(
            "ProviderError: malformed chat-completions response: choices[0].message." + field
        )


def test_tool_call_arguments_sent_as_an_object_are_taken_as_they_are(tmp_path: Path) -> None:
    def responder(req: dict[str, Any]) -> Reply:
        if len(req["messages"]) > 2:
            return Reply(body=completion("Done."))
        amount = int(req["messages"][1]["content"].split()[-1])
        call = {"id": "c1", "type": "function"}
        call["function"] = {"name": "add", "arguments": {"amount": amount}}  # type: ignore[assignment]
        return Reply(body=completion(tool_calls=[call]))

    with OpenAIServer(responder) as server:
        trials = go(server, tmp_path)
    assert all(t.status == "completed" and t.success for t in trials)


def _id_problem(messages: list[dict[str, Any]]) -> str | None:
    """What OpenAI's API refuses in a conversation's tool-call ids (HTTP 400): a tool
    call or a tool message whose id is not a string, or a tool message answering no
    call of the assistant turn before it."""
    open_ids: set[str] = set()
    for k, msg in enumerate(messages):
        if msg["role"] == "assistant":
            open_ids = set()
            for i, call in enumerate(msg.get("tool_calls") or []):
                if not isinstance(call.get("id"), str) or not call["id"]:
                    return f"messages[{k}].tool_calls[{i}].id: expected a string"
                open_ids.add(call["id"])
        elif msg["role"] == "tool":
            if not isinstance(msg.get("tool_call_id"), str):
                return f"Invalid type for 'messages[{k}].tool_call_id': expected a string"
            if msg["tool_call_id"] not in open_ids:
                return f"messages[{k}].tool_call_id answers no tool call"
    return None


@pytest.mark.parametrize("given", ["absent", None, ""])
def test_tool_calls_without_an_id_get_one_the_tool_message_answers(
    tmp_path: Path, given: str | None
) -> None:
    # Some local servers send tool calls with no id: the adapter sent the tool's result
    # back with "tool_call_id": null, which OpenAI's API refuses (HTTP 400), so a
    # trial on such a model, routed to a strict server, ended as an infra error.
    def responder(req: dict[str, Any]) -> Reply:
        msgs = req["messages"]
        problem = _id_problem(msgs)
        if problem is not None:
            return Reply(400, error_body(problem, "invalid_request_error"))
        if msgs[-1]["role"] == "tool":
            return Reply(body=completion("Done."))
        amount = int(msgs[1]["content"].split()[-1])
        calls = [tool_call("add", {"amount": amount}), tool_call("get", {})]
        for call in calls:
            if given == "absent":
                del call["id"]
            else:
                call["id"] = given
        return Reply(body=completion(tool_calls=calls))

    with OpenAIServer(responder) as server:
        trials = go(server, tmp_path)
    assert all(t.status == "completed" and t.success for t in trials), trials[0].error
    last = next(r for r in server.requests if r["messages"][-1]["role"] == "tool")["messages"]
    ids = [c["id"] for c in last[2]["tool_calls"]]
    assert ids == ["call_agentgauge_1", "call_agentgauge_2"]  # numbered in the trial
    assert [m["tool_call_id"] for m in last[3:]] == ids


def test_feedback_mode_returns_the_error_to_the_model(tmp_path: Path) -> None:
    def responder(req: dict[str, Any]) -> Reply:
        msgs = req["messages"]
        if len(msgs) == 2:
            return Reply(body=completion(tool_calls=[tool_call("add", "{oops")]))
        if len(msgs) == 4:
            assert msgs[3]["content"].startswith("Error: arguments of 'add' are not valid JSON")
            amount = int(msgs[1]["content"].split()[-1])
            return Reply(body=completion(tool_calls=[tool_call("add", {"amount": amount})]))
        return Reply(body=completion("Done."))

    with OpenAIServer(responder) as server:
        trials = go(server, tmp_path, on_malformed="feedback")
    assert all(t.success and t.model_calls == 3 for t in trials)


def test_request_bodies_splice_the_tool_list_json_made_once_per_list() -> None:
    agent = OpenAIAgent("m-1", base_url="http://127.0.0.1:9/v1", params={"temperature": 0.2})
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    messages = [{"role": "user", "content": 'say "hi" — ünïcode'}]
    first = json.loads(agent._body(messages, tools))
    assert first == {"model": "m-1", "temperature": 0.2, "messages": messages, "tools": tools}
    made = agent._tools_json
    messages.append({"role": "assistant", "content": "hi"})
    second = json.loads(agent._body(messages, tools))
    assert second["messages"] == messages and agent._tools_json is made  # reused
    other = [{"type": "function", "function": {"name": "sub", "parameters": {}}}]
    assert json.loads(agent._body(messages, other))["tools"] == other  # another list: new JSON
    assert "tools" not in json.loads(agent._body(messages, []))


def test_a_tool_list_changed_in_place_is_sent_as_it_now_is() -> None:
    agent = OpenAIAgent("m-1", base_url="http://127.0.0.1:9/v1")
    tools = [{"type": "function", "function": {"name": "add", "description": "old"}}]
    assert json.loads(agent._body([], tools))["tools"][0]["function"]["description"] == "old"
    tools[0]["function"]["description"] = "new"  # the same list object, the same length
    assert json.loads(agent._body([], tools))["tools"][0]["function"]["description"] == "new"


def loops_forever(req: dict[str, Any]) -> Reply:
    """A model that reads the counter again and again, never answering."""
    return Reply(body=completion(tool_calls=[tool_call("get", {})]))


def test_the_model_call_limit_is_the_agents_error_and_says_how_to_raise_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "default").mkdir()
    (tmp_path / "raised").mkdir()
    with OpenAIServer(loops_forever) as server:
        default = go(server, tmp_path / "default", timeout=None)
        raised = go(server, tmp_path / "raised", max_turns=7)
        (tmp_path / "one").mkdir()
        one = go(server, tmp_path / "one", max_turns=1)
    for trials, n, calls in ((default, 50, "calls"), (raised, 7, "calls"), (one, 1, "call")):
        for t in trials:
            assert (t.status, t.error_kind, t.model_calls) == ("error", "agent", n)
            assert t.error == (
                f"AgentError: no end to the conversation after {n} model {calls} (the openai: "
                "adapter's limit; raise it with --max-turns N, or agent_options="
                "{'max_turns': N} from Python)"
            )


def test_max_turns_from_the_command_line(cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    world = {"environment": "agentgauge.testing.worlds:make_counter_env"}
    suite.write_text("".join(t.model_copy(update=world).model_dump_json() + "\n" for t in tasks()))
    db = str(tmp_path / "s.db")
    with OpenAIServer(loops_forever) as server:
        code, out, err = cli(
            "run", str(suite), "--agent", "openai:fake-model", "--base-url", server.base_url,
            "--max-turns", "3", "--store", db, "--run-id", "r", "--no-progress",
        )  # fmt: skip
    assert code == 0, err
    assert "no end to the conversation after 3 model calls" in out
    with Store(db) as store:
        assert {t.model_calls for t in store.trials("r")} == {3}
    # for another kind of agent the option means nothing: refused, one line
    code, _, err = cli("run", str(suite), "--agent", "cmd:true", "--max-turns", "3", "--store", db)
    one_line = " ".join(err.split())
    assert code == 2 and "error: --max-turns: applies to openai: agents, not cmd:true" in one_line
    code, _, err = cli("run", str(suite), "--agent", "openai:m", "--max-turns", "0", "--store", db)
    assert code == 2 and "--max-turns" in err


def _finishing(finish: str, content: str | None, *, tool_args: str | None = None) -> Responder:
    """A model whose first reply ends with ``finish`` (``content``, or an ``add`` call
    whose arguments are ``tool_args``), and which would add and say Done afterwards."""

    def responder(req: dict[str, Any]) -> Reply:
        msgs = req["messages"]
        if len(msgs) > 2:
            return Reply(body=completion("Done."))
        calls = None if tool_args is None else [tool_call("add", tool_args)]
        body = completion(content, tool_calls=calls)
        body["choices"][0]["finish_reason"] = finish
        return Reply(body=body)

    return responder


@pytest.mark.parametrize(
    ("finish", "content", "tool_args", "said"),
    [
        ("length", "I will add the amo", None, "the model's reply was cut off at its token limit"),
        ("length", "", None, "the model's reply was cut off at its token limit"),
        ("length", None, '{"amou', "the model's reply was cut off at its token limit"),
        ("content_filter", None, None, "the provider's content filter withheld"),
        ("content_filter", "Sorry, I", None, "the provider's content filter withheld"),
    ],
)
def test_a_reply_cut_off_or_filtered_is_the_agents_error_saying_so(
    tmp_path: Path, finish: str, content: str | None, tool_args: str | None, said: str
) -> None:
    # Once a fragment ("I will add the amo") was said to the user and stored as the
    # answer of a completed trial, a blank was read as the model choosing to stop
    # (control act -> stop), and a cut-off tool call was "not valid JSON": no word of
    # the finish_reason anywhere.
    with OpenAIServer(_finishing(finish, content, tool_args=tool_args)) as server:
        trials = go(server, tmp_path)
    for t in trials:
        assert (t.status, t.error_kind, t.model_calls) == ("error", "agent", 1), t.error
        assert t.error is not None and t.error.startswith(f"IncompleteReply: {said}")
        assert t.error.endswith(f"; finish_reason {finish!r}")
        assert not any(e.type == "message" and e.role == "assistant" for e in t.events)
        assert t.cost_usd is None and t.input_tokens == 10  # the call is on the record


def test_a_refusal_is_what_the_model_said(tmp_path: Path) -> None:
    # OpenAI puts a refusal in message.refusal with content null; it was dropped, and
    # the trial read as the model ending its turn with nothing to say.
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    with OpenAIServer(lambda req: Reply(body=body)) as server:
        trials = go(server, tmp_path)
    for t in trials:
        assert t.status == "completed" and t.answer == "I can't help with that."
        said = [e for e in t.events if e.type == "message" and e.role == "assistant"]
        assert [e.content for e in said] == ["I can't help with that."]


@pytest.mark.parametrize(
    "body",
    [
        {  # OpenAI
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, "
                "your messages resulted in 130512 tokens. Please reduce the length.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        {  # llama.cpp server
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
        {  # vLLM (older releases: the error at the top level)
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you "
            "requested 4200 tokens.",
            "type": "BadRequestError",
            "code": 400,
        },
    ],
)
def test_a_conversation_past_the_context_window_is_the_agents_error(
    tmp_path: Path, body: dict[str, Any]
) -> None:
    # Was a ProviderError, an infra error: --exclude-infra-errors dropped the trials
    # whose agent outgrew its model, and the circuit breaker stopped the run.
    def responder(req: dict[str, Any]) -> Reply:
        if len(req["messages"]) == 2:
            return Reply(body=completion(tool_calls=[tool_call("get", {})]))
        return Reply(400, body)

    with OpenAIServer(responder) as server:
        trials = go(server, tmp_path)
    for t in trials:
        assert (t.status, t.error_kind, t.model_calls) == ("error", "agent", 1), t.error
        assert t.error is not None and t.error.startswith(
            "ContextLengthExceeded: the conversation no longer fits the model's context "
            "window (HTTP 400: "
        )
    # a client error of another kind stays the provider's
    with OpenAIServer(lambda req: Reply(400, error_body("model 'x' does not exist"))) as server:
        (tmp_path / "other").mkdir()
        other = go_stopped(server, tmp_path / "other")
    assert all(t.error == "ProviderError: HTTP 400: model 'x' does not exist" for t in other)
