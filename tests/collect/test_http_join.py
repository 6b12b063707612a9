"""End to end: ``--agent http:`` against a service that runs its own tools and exports
its spans to ``agentgauge collect``; the tool-call and trajectory graders see those calls.

Three real parts: the agent service (aiohttp, `agentgauge.testing.agent_service`) with
the OpenTelemetry SDK's OTLP/HTTP exporter, ``agentgauge collect`` in a process of its
own, and the harness. The service's reply names no tool call; its spans do. The
service flushes its spans before it replies, so they reach the receiver before the
harness has written the trial: the receiver holds them and attaches them once the
trial is there.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import RunStopped
from agentgauge.schema import ToolCallEvent, ToolResultEvent
from agentgauge.store import Store
from agentgauge.testing.agent_service import CounterService, counter_tasks, run_against

pytest.importorskip("opentelemetry.sdk.trace", reason="the OpenTelemetry SDK (a dev dependency)")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``agentgauge collect`` into its own run of the store the harness writes to."""
    store = str(tmp_path / "s.db")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "collect",
            "--port",
            "0",
            "--store",
            store,
            "--run-id",
            "spans",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line
    yield proc, line.split()[2]
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_graders_see_the_tool_calls_the_service_exported(
    cli: Any, tmp_path: Path, collector: tuple[subprocess.Popen[str], str]
) -> None:
    proc, url = collector
    provider = TracerProvider(resource=Resource.create({"service.name": "counter-service"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url)))
    service = CounterService(transcript=False, tracer_provider=provider)
    trials = run_against(service, tmp_path, counter_tasks(3, 5), trials=2)
    provider.shutdown()
    # Graded as replied: the state is right, but the reply named no call (the spans may
    # have joined already; grades change only with a re-grade).
    for t in trials:
        passed = {g.grader: g.passed for g in t.grades}
        assert passed["state"] is True and passed["tool_calls"] is False and not t.success

    proc.send_signal(signal.SIGINT)  # a last look for held traces, then it stops
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stored 0 trials" in out  # the spans joined their trials; none became one
    # ...and it says so, with the command that counts them.
    assert "added the spans of 4 traces to trials already stored, by run: r (4)" in out, out
    assert f"re-grade to count them: agentgauge grade {tmp_path / 's.db'}:r --activate" in out

    with Store(tmp_path / "s.db", readonly=True) as db:
        joined = db.trials("r")
    for t in joined:
        n = int(t.task_id.split("-")[1])
        calls = [e for e in t.events if isinstance(e, ToolCallEvent)]
        results = [e for e in t.events if isinstance(e, ToolResultEvent)]
        assert [(c.name, c.arguments) for c in calls] == [("add", {"amount": n})]
        assert [r.content for r in results] in ([{"counter": n}], ['{"counter": ' + f"{n}}}"])
        assert t.tool_calls == 1 and t.metadata["trace_events"] == 2

    code, _, err = cli("grade", f"{tmp_path / 's.db'}:r", "--activate")
    assert code == 0, err
    with Store(tmp_path / "s.db", readonly=True) as db:
        graded = db.trials("r")
    assert len(graded) == 4
    for t in graded:
        passed = {g.grader: g.passed for g in t.grades}
        assert passed["tool_calls"] is True and passed["trajectory"] is True, t.grades
        assert passed["state"] is True and t.success


def test_the_services_spans_fall_where_they_happened_before_its_reply(
    tmp_path: Path, collector: tuple[subprocess.Popen[str], str]
) -> None:
    """A service that works for a while, then calls its tool, then replies: the tool's
    spans join the trial timed from the trial's start (the ``http:`` adapter keeps it,
    ``trace_t0_ns``), and sit before the reply in the transcript. They were timed from
    the first span (``t`` 0.00) and put after the reply."""
    proc, url = collector
    provider = TracerProvider(resource=Resource.create({"service.name": "counter-service"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url)))
    service = CounterService(mode="slow", delay=1.0, transcript=False, tracer_provider=provider)
    (trial,) = run_against(service, tmp_path, counter_tasks(3))
    provider.shutdown()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

    with Store(tmp_path / "s.db", readonly=True) as db:
        (joined,) = db.trials("r")
    assert isinstance(trial.metadata["trace_t0_ns"], int)
    kinds = [(e.type, getattr(e, "role", None)) for e in joined.events]
    assert kinds == [
        ("message", "user"),
        ("tool_call", None),
        ("tool_result", None),
        ("message", "assistant"),
    ], kinds
    call, answer = joined.events[1], joined.events[3]
    assert call.t is not None and answer.t is not None
    assert 0.9 <= call.t <= answer.t  # after the service's second of work, before its reply
    assert [e.t for e in joined.events] == sorted(e.t or 0.0 for e in joined.events)


def _exporting(url: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "counter-service"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return provider


def test_a_trial_that_ended_in_an_error_keeps_its_trace_and_its_spans_join(
    tmp_path: Path, collector: tuple[subprocess.Popen[str], str]
) -> None:
    """The service did its work, then replied badly: the trial is the agent's error, and
    the spans of what the service did join it. The trace was noted only after a good
    reply, so they named no trial and collect dropped them when it stopped."""
    proc, url = collector
    provider = _exporting(url)
    service = CounterService(mode="malformed", reply=b'{"anwser": 1}', tracer_provider=provider)
    (trial,) = run_against(service, tmp_path, counter_tasks(3))
    provider.shutdown()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert trial.status == "error" and trial.error_kind == "agent"
    sent = TRACEPARENT.match(service.requests[0].headers["traceparent"])
    assert sent is not None
    assert trial.metadata["trace_id"] == sent.group(1)
    assert trial.metadata["span_id"] == sent.group(2)
    assert isinstance(trial.metadata["trace_t0_ns"], int)
    assert "names no task" not in err, err
    assert "by run: r (1)" in out, out
    with Store(tmp_path / "s.db", readonly=True) as db:
        (joined,) = db.trials("r")
    calls = [e for e in joined.events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == [("add", {"amount": 3})]
    assert joined.status == "error" and joined.tool_calls == 1


def test_retries_spent_keep_the_last_attempts_trace(
    tmp_path: Path, collector: tuple[subprocess.Popen[str], str]
) -> None:
    """Every attempt answered 500: the infra error keeps the last attempt's trace, whose
    spans join it; the spans of the attempts that were retried never do."""
    proc, url = collector
    provider = _exporting(url)
    service = CounterService(mode="error", tracer_provider=provider)
    with pytest.raises(RunStopped, match="the only trial it ran was an infra error"):
        run_against(service, tmp_path, counter_tasks(3))
    provider.shutdown()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    traces = [TRACEPARENT.match(r.headers["traceparent"]) for r in service.requests]
    assert len(traces) == 3 and all(traces)
    with Store(tmp_path / "s.db", readonly=True) as db:
        (joined,) = db.trials("r")
    assert joined.status == "error" and joined.error_kind == "infra"
    assert joined.metadata["trace_id"] == traces[-1].group(1)  # type: ignore[union-attr]
    assert joined.metadata["http_attempts"] == 3
    assert joined.tool_calls == 1  # the last attempt's call, once
    assert "by run: r (1)" in out, out
    for retried in traces[:-1]:  # their spans name no trial: not stored, and said so
        assert f"trace {retried.group(1)}" in err, err  # type: ignore[union-attr]
