"""`agentgauge collect`: the real OpenTelemetry SDK exporting over OTLP/HTTP to the
receiver, run as the command a user runs, and the protocol's answers to bad requests."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from google.rpc import status_pb2
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from tests.importers.otlp_docs import AGENT_ROOT, TRACE, request, span

from agentgauge.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Collector:
    """``agentgauge collect --port 0`` in a subprocess; the port read from its first line."""

    def __init__(self, db: Path, *args: str, port: int = 0, wait: bool = True) -> None:
        self.db = db
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentgauge",
                "collect",
                "--port",
                str(port),
                "--store",
                str(db),
                "--run-id",
                "live",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        self.url = ""
        if wait:
            self.listening()

    def listening(self) -> None:
        """Wait for the line that says the receiver listens, and take its URL."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line + self.proc.stderr.read()
        self.url = line.split()[2]

    def kill(self) -> None:
        """End the receiver if a test left it running (a failed assertion before `stop`)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err

    def post(self, body: bytes, content_type: str, **headers: str) -> tuple[int, bytes]:
        req = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": content_type, **headers}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


def _agent_trace(
    tracer: trace.Tracer, task: str, success: bool | None, *, end: bool = True
) -> None:
    root = tracer.start_span("invoke_agent bot")
    root.set_attributes(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "bot",
            "agentgauge.task.id": task,
        }
    )
    if success is not None:
        root.set_attribute("agentgauge.outcome.success", success)
    ctx = trace.set_span_in_context(root)
    with tracer.start_as_current_span("chat m", context=ctx) as chat:
        # The task on a child too, so that a trace whose root never ends still names it.
        chat.set_attribute("agentgauge.task.id", task)
        chat.set_attributes(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.usage.input_tokens": 3,
                "gen_ai.usage.output_tokens": 2,
            }
        )
    with tracer.start_as_current_span("execute_tool add", context=ctx) as tool:
        tool.set_attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "add",
                "gen_ai.tool.call.arguments": '{"n": 1}',
            }
        )
    if end:
        root.end()


def test_sdk_exporter_to_collect_stores_trials_and_open_traces_at_shutdown(
    collector: Collector,
) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "bot"}))
    exporter = OTLPSpanExporter(endpoint=collector.url, compression=Compression.Gzip)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    _agent_trace(tracer, "a", True)
    _agent_trace(tracer, "a", False)
    _agent_trace(tracer, "b", True, end=False)  # the agent never finished
    assert provider.force_flush(30_000)
    code, out, err = collector.stop()
    provider.shutdown()
    assert code == 0, err
    assert "stored 3 trials from 8 spans in run live" in out  # 3 + 3 + 2 spans
    assert "1 open trace stored as an incomplete trial" in err
    with Store(collector.db) as db:
        trials = sorted(db.trials("live"), key=lambda t: (t.task_id, t.trial))
    assert [(t.task_id, t.trial, t.success) for t in trials] == [
        ("a", 0, True),
        ("a", 1, False),
        ("b", 0, False),
    ]
    done = trials[0]
    assert (done.agent, done.model, done.input_tokens, done.tool_calls) == ("bot", "m", 3, 1)
    assert [e.type for e in done.events] == ["model_call", "tool_call", "tool_result"]
    open_trace = trials[2]
    assert (open_trace.status, open_trace.error_kind) == ("error", "infra")
    assert open_trace.metadata["incomplete"] is True
    # Its root never came: the run time is unknown, not the duration of a child span.
    assert open_trace.latency_s is None


def test_a_span_that_comes_after_its_root_joins_the_stored_trial(collector: Collector) -> None:
    # A batch exporter can send a child span after the root that closed the trace (the
    # child ended later, or sat in another batch): it joins the trial already stored,
    # which the receiver says, instead of becoming a second, incomplete trial.
    root = span(
        "00000000000000a1",
        "invoke_agent bot",
        {
            "gen_ai.operation.name": "invoke_agent",
            "agentgauge.task.id": "late",
            "agentgauge.outcome.success": True,
        },
    )
    tool = span(
        "00000000000000c1",
        "execute_tool add",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add"},
        parent="00000000000000a1",
        start=1_200_000_000,
        end=1_300_000_000,
    )
    for doc in (request(root), request(tool), request(tool)):  # the late one, then again
        status, _ = collector.post(json.dumps(doc).encode(), "application/json")
        assert status == 200
    code, out, err = collector.stop()
    assert code == 0, err
    # The tool span again is a repeat, as a span of an open trace is: not counted twice.
    assert "stored 1 trial from 2 spans in run live" in out, out
    assert "1 span came again, the same as before" in err
    assert "incomplete" not in err
    # The run has no stored tasks (no --suite): the outcome came from the trace, and
    # `agentgauge grade` would refuse the run ("has no stored tasks"), so no command.
    assert out.splitlines()[1:] == [
        "added the spans of 1 trace to trials already stored, by run: live (1)",
        "  live: nothing to re-grade (no stored tasks: its outcomes came from its traces); "
        "the added calls count in its calls, tokens and cost already",
    ]
    assert "agentgauge grade" not in out
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
    # Received twice, added once.
    assert [e.type for e in trial.events] == ["tool_call", "tool_result"]
    assert trial.tool_calls == 1 and trial.success is True


def test_a_late_span_of_a_suite_run_prints_a_re_grade_that_works(cli: Any, tmp_path: Path) -> None:
    """With ``--suite`` the run keeps its tasks: the late span's call counts once the
    run is re-graded, with the command the summary prints."""
    db = tmp_path / "s.db"
    collector = Collector(db, "--suite", str(FIXTURES / "otel" / "suite.yaml"))
    try:
        root = span(
            "00000000000000a1",
            "invoke_agent bot",
            {"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": "capital-france"},
        )
        tool = span(
            "00000000000000c1",
            "execute_tool lookup",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
            parent="00000000000000a1",
        )
        for doc in (request(root), request(tool)):
            assert collector.post(json.dumps(doc).encode(), "application/json") == (200, b"{}")
        code, out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0, err
    command = f"agentgauge grade {db}:live --activate"
    assert out.splitlines()[1:] == [
        "added the spans of 1 trace to trials already stored, by run: live (1); their "
        "grades predate those spans",
        f"  re-grade to count them: {command}",
    ]
    code, _, err = cli(*command.split()[1:])
    assert code == 0, err


def test_an_outcomes_file_decides_live_traces_and_the_run_names_it(tmp_path: Path) -> None:
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"trace_id": TRACE, "success": True, "trial": 2}) + "\n")
    collector = Collector(tmp_path / "live.db", "--outcomes", str(outcomes))
    root = span(
        "00000000000000a1",
        "invoke_agent bot",
        {"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": "decided"},
    )
    assert collector.post(json.dumps(request(root)).encode(), "application/json")[0] == 200
    code, _, err = collector.stop()
    assert code == 0, err
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
        run = db.require_run("live")
    assert (trial.task_id, trial.trial, trial.success) == ("decided", 2, True)
    assert run.config["outcomes"] == {
        "file": str(outcomes),
        "sha256": hashlib.sha256(outcomes.read_bytes()).hexdigest(),
        "rows": 1,
    }


def _lines(path: Path) -> list[bytes]:
    return [line.encode() for line in path.read_text().splitlines()]


def test_openinference_spans_as_gzip_json(collector: Collector) -> None:
    for line in _lines(FIXTURES / "openinference" / "openai.jsonl"):
        status, body = collector.post(
            gzip.compress(line), "application/json", **{"Content-Encoding": "gzip"}
        )
        assert (status, json.loads(body)) == (200, {})
    code, out, _ = collector.stop()
    assert code == 0 and "stored 2 trials" in out
    with Store(collector.db) as db:
        trials = db.trials("live")
    assert {t.metadata["dialect"] for t in trials} == {"openinference"}
    assert sorted(t.success for t in trials) == [False, True]


def test_bad_requests_get_the_protocols_answers_and_change_nothing(collector: Collector) -> None:
    ok = request(
        span("00f067aa0ba902b7", "r", {"agentgauge.task.id": "t", "agentgauge.outcome.score": 1.0})
    )
    status, _ = collector.post(json.dumps(ok).encode(), "application/json")
    assert status == 200

    status, body = collector.post(b"hello", "text/plain")
    assert status == 415 and "unsupported Content-Type 'text/plain'" in json.loads(body)["message"]

    status, body = collector.post(b"\x0a\xff\xff\xff", "application/x-protobuf")
    assert status == 400
    answer = status_pb2.Status.FromString(body)  # a google.rpc.Status, encoded as the request
    assert answer.code == 3 and answer.message.startswith("request: not a valid protobuf")

    bad = request(span("00f067aa0ba902b7", "r", {}, trace="xyz"))
    status, body = collector.post(json.dumps(bad).encode(), "application/json")
    assert status == 400
    assert json.loads(body)["message"] == (
        "request: resourceSpans[0].scopeSpans[0].spans[0].traceId: expected 32 hex digits, "
        "got 'xyz'"
    )

    bomb = gzip.compress(b" " * (40 * 1024 * 1024))  # 40 MiB of spaces in 40 KB
    status, _ = collector.post(bomb, "application/json", **{"Content-Encoding": "gzip"})
    assert status == 413

    status, _ = collector.post(b"{}", "application/json", **{"Content-Encoding": "compress"})
    assert status == 415

    nameless = request(
        span(
            "11f067aa0ba902b7",
            "r",
            {"agentgauge.outcome.score": 1.0},
            trace="1af7651916cd43dd8448eb211c80319c",
        )
    )
    status, body = collector.post(json.dumps(nameless).encode(), "application/json")
    partial = json.loads(body)["partialSuccess"]
    assert status == 200 and partial["rejectedSpans"] == "1"
    assert "names no task" in partial["errorMessage"]

    code, out, err = collector.stop()
    assert code == 0 and "stored 1 trial from 1 span" in out
    assert "rejected:" in err and "names no task" in err
    with Store(collector.db) as db:
        assert [t.task_id for t in db.trials("live")] == ["t"]


def test_collect_into_a_run_made_elsewhere_is_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "s.db"
    assert (
        cli(
            "import",
            "openinference",
            str(FIXTURES / "openinference" / "openai.jsonl"),
            "--store",
            str(db),
            "--run-id",
            "imp",
        )[0]
        == 0
    )
    code, _, err = cli("collect", "--port", "0", "--store", str(db), "--run-id", "imp")
    assert code == 2 and "was not made by collect" in err


def test_a_port_in_use_is_one_line_and_no_run(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = tmp_path / "s.db"
        code, _, err = cli("collect", "--port", str(port), "--store", str(db), "--run-id", "x")
    assert code == 2 and f"--port: cannot listen on 127.0.0.1:{port}" in err
    assert not db.exists()  # no empty store left behind
    existing = tmp_path / "existing.db"
    with Store(existing) as store:
        pass
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = cli("collect", "--port", str(port), "--store", str(existing))
    assert code == 2 and existing.exists()  # a store the user had is kept
    with Store(existing) as store:
        assert store.list_runs() == []


def test_a_trace_whose_task_the_suite_lacks_is_rejected_by_name(tmp_path: Path) -> None:
    c = Collector(tmp_path / "s.db", "--suite", str(FIXTURES / "otel" / "suite.yaml"))
    try:
        doc = request(span("00f067aa0ba902b7", "r", {"agentgauge.task.id": "nope"}))
        status, body = c.post(json.dumps(doc).encode(), "application/json")
        partial = json.loads(body)["partialSuccess"]
        assert status == 200 and partial["rejectedSpans"] == "1"
        assert "the suite has no task 'nope' to grade it by" in partial["errorMessage"]
        assert c.stop()[0] == 0
    finally:
        if c.proc.poll() is None:
            c.proc.kill()


def test_an_evaluators_verdict_is_the_outcome_of_a_live_trace(tmp_path: Path) -> None:
    # The agent's spans carry no outcome; an online evaluator's gen_ai.evaluation.result
    # on the agent span says pass or fail, and `--outcome-evaluation` makes it the outcome.
    collector = Collector(tmp_path / "live.db", "--outcome-evaluation", "task_completion")
    provider = TracerProvider(resource=Resource.create({"service.name": "bot"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=collector.url)))
    tracer = provider.get_tracer("test")
    for task, label in (("a", "pass"), ("b", "fail")):
        with tracer.start_as_current_span("invoke_agent bot") as root:
            root.set_attributes(
                {"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": task}
            )
            root.add_event(
                "gen_ai.evaluation.result",
                {
                    "gen_ai.evaluation.name": "task_completion",
                    "gen_ai.evaluation.score.label": label,
                },
            )
    assert provider.force_flush(30_000)
    code, _, err = collector.stop()
    provider.shutdown()
    assert code == 0, err
    with Store(collector.db) as db:
        trials = sorted(db.trials("live"), key=lambda t: t.task_id)
    assert [(t.task_id, t.success) for t in trials] == [("a", True), ("b", False)]
    assert [[(g.grader, g.passed) for g in t.grades] for t in trials] == [
        [("task_completion", True)],
        [("task_completion", False)],
    ]


def _stalled_client(url: str) -> socket.socket:
    """A client that sent a request's headers and the first bytes of its body, then
    waits: its handler is under way, reading a body that does not come."""
    where = urllib.parse.urlsplit(url)
    s = socket.create_connection((where.hostname, where.port))
    s.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 1000\r\n\r\n{"resou'
    )
    return s


#: A chat span whose root never comes: an open trace, accepted with a 200.
_OPEN_CHILD = span(
    "00000000000000b1",
    "chat m",
    {"gen_ai.operation.name": "chat", "agentgauge.task.id": "open"},
    parent="00000000000000a1",
)


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_stores_open_traces_first_and_does_not_wait_on_a_stalled_client(
    collector: Collector, presses: int
) -> None:
    # aiohttp waits a minute for requests under way; a client that stalls mid-body held
    # the exit that long, and a second Ctrl-C then quit before the open traces were
    # written: spans answered 200 were lost.
    assert collector.post(json.dumps(request(_OPEN_CHILD)).encode(), "application/json")[0] == 200
    with _stalled_client(collector.url):
        time.sleep(0.5)  # the stalled request's handler is under way
        began = time.monotonic()
        collector.proc.send_signal(signal.SIGINT)
        if presses == 2:
            time.sleep(0.2)
            collector.proc.send_signal(signal.SIGINT)
        out, err = collector.proc.communicate(timeout=30)
        took = time.monotonic() - began
    assert collector.proc.returncode == 0, err
    assert took < 5, f"{took:.1f} s"
    assert "1 open trace stored as an incomplete trial" in err
    assert "1 request under way was cut off unanswered" in err, err
    assert "stored 1 trial from 1 span" in out
    assert "Traceback" not in err
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
    assert (trial.task_id, trial.status, trial.metadata["incomplete"]) == ("open", "error", True)


def test_a_request_that_completes_after_the_open_traces_were_written_gets_503(
    tmp_path: Path,
) -> None:
    from agentgauge.collect import Receiver, TraceBuffer
    from agentgauge.schema import Run
    from agentgauge.store import TrialWriter, utc_now

    async def scenario() -> tuple[int, str, int]:
        with Store(tmp_path / "s.db") as db:
            db.create_run(Run(run_id="live", created_at=utc_now()))
            receiver = Receiver(TrialWriter(db, "live"), TraceBuffer(), log=lambda _: None)
            server = TestServer(receiver.app())
            async with TestClient(server) as client:
                first = await client.post("/v1/traces", json=request(_OPEN_CHILD))
                assert first.status == 200
                await receiver.shutdown()
                late = await client.post("/v1/traces", json=request(AGENT_ROOT))
                said = await late.text()
            return late.status, said, len(db.trials("live"))

    status, said, stored = asyncio.run(scenario())
    # Not a 200 for spans nobody will store: 503, which OTLP exporters retry.
    assert status == 503 and "stopping" in said
    assert stored == 1  # the open trace, written at shutdown


def test_a_changed_copy_of_a_stored_span_is_rejected_as_while_its_trace_was_open(
    collector: Collector,
) -> None:
    # The trace is stored when its root comes; a late child joins it. A changed copy of
    # either was answered 200 and dropped unseen; the same copy is a retry, no news.
    child = span(
        "00000000000000c1",
        "execute_tool add",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add"},
        parent="00000000000000a1",
        start=1_200_000_000,
        end=1_300_000_000,
    )
    changed_root = {**AGENT_ROOT, "name": "invoke_agent other"}
    changed_child = {**child, "endTimeUnixNano": "1900000000"}
    answers = []
    for doc in (
        request(AGENT_ROOT),
        request(child),
        request(AGENT_ROOT, child),  # the same again: a retry
        request(changed_root),
        request(changed_child),
    ):
        status, body = collector.post(json.dumps(doc).encode(), "application/json")
        assert status == 200
        answers.append(json.loads(body).get("partialSuccess", {}))
    assert answers[:3] == [{}, {}, {}]
    for answer, which in zip(answers[3:], ("00000000000000a1", "00000000000000c1"), strict=True):
        assert answer["rejectedSpans"] == "1"
        message = answer["errorMessage"]
        assert f"span {which} of trace {TRACE}" in message and "other content" in message
    code, _, err = collector.stop()
    assert code == 0, err
    assert err.count("rejected: span ") == 2
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
    assert [e.type for e in trial.events] == ["tool_call", "tool_result"]
    assert trial.events[1].t == pytest.approx(0.3)  # the first copy's end, kept
