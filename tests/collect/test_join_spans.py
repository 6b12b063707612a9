"""`join_spans`: spans of a trace whose trial is stored join its transcript once.

The spans are the OpenTelemetry SDK's (tests/fixtures/otel/genai.jsonl: an agent
span, two chat spans and a tool span), joined to a stored trial in the ways a
receiver meets them: in two batches (the SDK's batch exporter), a batch sent again
(an exporter's retry after a lost response), and a trace imported with
``import otel`` and then sent live."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgauge.collect.join import join_spans
from agentgauge.importers import import_file
from agentgauge.importers.otlp import Span, read_otlp_json_file
from agentgauge.schema import (
    MessageEvent,
    ModelCallEvent,
    Run,
    Task,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.store import Store, utc_now

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "otel"


def paris_trace() -> list[Span]:
    spans = read_otlp_json_file(FIXTURES / "genai.jsonl")
    trace_id = spans[0].trace_id
    return sorted((s for s in spans if s.trace_id == trace_id), key=lambda s: s.start_ns)


def http_trial(db: Store, trace_id: str) -> None:
    """A trial as the ``http:`` adapter stores it: the instruction, the reply, and the
    trace id its request carried; the service's tool calls are not in the reply."""
    db.create_run(Run(run_id="r", agent="service", created_at=utc_now()))
    db.add_tasks("r", [Task(id="weather-paris", instruction="What is the weather in Paris?")])
    db.add_trials(
        "r",
        [
            Trial(
                task_id="weather-paris",
                trial=0,
                success=True,
                events=[
                    MessageEvent(t=0.0, role="user", content="What is the weather in Paris?"),
                    MessageEvent(t=0.2, role="assistant", content="It is 18 C."),
                ],
                metadata={"trace_id": trace_id},
            )
        ],
    )


def kinds(trial: Trial) -> list[str]:
    return [f"{e.type}:{e.role}" if isinstance(e, MessageEvent) else e.type for e in trial.events]


def test_two_batches_and_a_retry_add_each_span_once(tmp_path: Path) -> None:
    spans = paris_trace()
    chat1, chat2, tool, root = (
        next(s for s in spans if s.name.startswith(n) and s.start_ns == t)
        for n, t in (
            ("chat", min(s.start_ns for s in spans if s.name.startswith("chat"))),
            ("chat", max(s.start_ns for s in spans if s.name.startswith("chat"))),
            ("execute_tool", next(s.start_ns for s in spans if s.name.startswith("execute"))),
            ("invoke_agent", next(s.start_ns for s in spans if s.name.startswith("invoke"))),
        )
    )
    with Store(tmp_path / "s.db") as db:
        http_trial(db, root.trace_id)
        rest, joined = join_spans(db, [chat1, tool], {})
        assert rest == [] and joined == {root.trace_id: "r"}
        (first,) = db.trials("r")
        # The second batch's chat span repeats the system and user messages as its
        # input, and its output is the reply the trial holds: neither comes twice.
        join_spans(db, [chat2, root], {})
        (after,) = db.trials("r")
        assert kinds(after) == [
            "message:user",
            "message:assistant",
            "message:system",
            "model_call",
            "tool_call",
            "tool_result",
            "model_call",
        ]
        assert after.tool_calls == 1 and after.model_calls == 2
        assert after.metadata["trace_events"] == 5
        # Timed from the first batch's start, not from each batch's own.
        t = {type(e): e.t for e in after.events[2:]}
        assert t[ToolCallEvent] == pytest.approx((tool.start_ns - chat1.start_ns) / 1e9)
        second_call = [e for e in after.events if isinstance(e, ModelCallEvent)][1]
        # A model call's t is when it returned (its span's end), as the harness has it.
        assert second_call.t == pytest.approx((chat2.end_ns - chat1.start_ns) / 1e9)
        # The first batch again (its response was lost): nothing changes.
        join_spans(db, [chat1, tool], {})
        (again,) = db.trials("r")
        assert again.events == after.events and again.model_calls == 2
        assert len(first.events) == 6


def test_a_trace_imported_and_then_sent_live_adds_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    import_file(
        "otel", FIXTURES / "genai.jsonl", store, "imp", {"suite": str(FIXTURES / "suite.yaml")}
    )
    spans = read_otlp_json_file(FIXTURES / "genai.jsonl")
    with Store(store) as db:
        before = db.trials("imp")
        # Each span alone, as a receiver may get them: a chat span on its own used to
        # add its messages and model call again, timed from its own start.
        for span in spans:
            join_spans(db, [span], {})
        after = db.trials("imp")
    assert [t.events for t in after] == [t.events for t in before]
    assert [t.model_calls for t in after] == [t.model_calls for t in before]
    assert all(len(t.metadata["trace_spans"]) >= 1 for t in after)


def test_only_the_messages_the_transcript_holds_are_left_out() -> None:
    from agentgauge.importers.spans import events_from_trace

    spans = paris_trace()
    chat1 = min((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_ns)
    known = [
        MessageEvent(t=0.0, role="system", content="Answer weather questions."),
    ]
    events = events_from_trace([chat1], known=known)
    roles = [e.role for e in events if isinstance(e, MessageEvent)]
    assert roles == ["user"]
    events = events_from_trace([chat1], known=[])
    assert [e.role for e in events if isinstance(e, MessageEvent)] == ["system", "user"]
    assert not any(isinstance(e, ToolResultEvent) for e in events)
