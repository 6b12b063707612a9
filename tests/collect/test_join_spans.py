"""`join_spans`: spans of a trace whose trial is stored join its transcript once.

The spans are the OpenTelemetry SDK's (tests/fixtures/otel/genai.jsonl: an agent
span, two chat spans and a tool span), joined to a stored trial in the ways a
receiver meets them: in two batches (the SDK's batch exporter), a batch sent again
(an exporter's retry after a lost response), and a trace imported with
``import otel`` and then sent live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.importers.otlp_docs import TRACE, request, span

from agentgauge.collect.join import join_spans
from agentgauge.importers import import_file
from agentgauge.importers.otlp import Span, read_otlp_json_file, spans_from_json
from agentgauge.importers.spans import trials_from_spans
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
        done = join_spans(db, [chat1, tool], {})
        assert done.rest == [] and done.joined == {root.trace_id: "r"}
        assert done.conflicts == [] and done.refused == []
        (first,) = db.trials("r")
        # The second batch's chat span repeats the system and user messages as its
        # input, and its output is the reply the trial holds: neither comes twice.
        join_spans(db, [chat2, root], {})
        (after,) = db.trials("r")
        # In time order: the service's calls came before its reply (at 0.2 s).
        assert kinds(after) == [
            "message:user",
            "message:system",
            "model_call",
            "tool_call",
            "tool_result",
            "model_call",
            "message:assistant",
        ]
        assert after.tool_calls == 1 and after.model_calls == 2
        assert after.metadata["trace_events"] == 5
        # Timed from the first batch's start, not from each batch's own.
        t = {type(e): e.t for e in after.events[1:-1]}
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


#: An OpenInference agent span (task "t", a success): OpenInference spans carry a price.
AGENT = span(
    "00000000000000a1",
    "agent",
    {
        "openinference.span.kind": "AGENT",
        "agentgauge.task.id": "t",
        "agentgauge.outcome.success": True,
    },
)


def _chat(span_id: str, start: int, tokens: tuple[int, int] | None, cost: float | None) -> Any:
    """An OpenInference LLM span under `AGENT`, with its usage and price when given."""
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": "m"}
    if tokens is not None:
        attrs["llm.token_count.prompt"], attrs["llm.token_count.completion"] = tokens
    if cost is not None:
        attrs["llm.cost.total"] = cost
    return span(span_id, "llm", attrs, parent="00000000000000a1", start=start, end=start + 10)


def _stored_then_joined(
    tmp_path: Path, first: list[dict[str, Any]], late: list[dict[str, Any]]
) -> tuple[Trial, Trial]:
    """The trial stored from ``first`` (as ``collect`` stores a trace when its root
    comes) once ``late`` joins it, and the trial ``import otel`` makes of them all."""
    spans = spans_from_json(request(*first, *late), file="request")
    early, after = spans[: len(first)], spans[len(first) :]
    tmp_path.mkdir(exist_ok=True)
    with Store(tmp_path / "s.db") as db:
        db.create_run(Run(run_id="live", created_at=utc_now()))
        db.add_trials("live", [t.model_copy(update={"trial": 0}) for t in trials_from_spans(early)])
        rest, _, refused, _, _ = join_spans(db, after, {})
        assert rest == [] and refused == []
        (joined,) = db.trials("live")
    (whole,) = trials_from_spans(spans)
    return joined, whole


FIGURES = ("model_calls", "input_tokens", "output_tokens", "cost_usd", "tool_calls")


def test_late_model_calls_bring_the_totals_to_those_of_the_whole_trace(tmp_path: Path) -> None:
    joined, whole = _stored_then_joined(
        tmp_path,
        [AGENT, _chat("00000000000000b1", 1_100_000_000, (100, 10), 0.01)],
        [_chat("00000000000000b2", 1_500_000_000, (500, 50), 0.05)],
    )
    assert (joined.input_tokens, joined.output_tokens, joined.model_calls) == (600, 60, 2)
    assert joined.cost_usd == pytest.approx(0.06)
    assert [getattr(joined, f) for f in FIGURES] == [getattr(whole, f) for f in FIGURES]


def test_a_late_call_without_usage_makes_the_sums_unknown(tmp_path: Path) -> None:
    joined, whole = _stored_then_joined(
        tmp_path,
        [AGENT, _chat("00000000000000b1", 1_100_000_000, (100, 10), 0.01)],
        [_chat("00000000000000b2", 1_500_000_000, None, None)],
    )
    assert (joined.input_tokens, joined.output_tokens, joined.cost_usd) == (None, None, None)
    assert [getattr(joined, f) for f in FIGURES] == [getattr(whole, f) for f in FIGURES]


def test_an_agent_span_usage_gives_way_to_the_calls_that_come_late(tmp_path: Path) -> None:
    # A trace stored with no inference span: its figures are the agent span's own, and
    # how many model calls it made is unknown, not 0.
    root = span(
        "00000000000000a1",
        "agent",
        {
            "openinference.span.kind": "AGENT",
            "agentgauge.task.id": "t",
            "agentgauge.outcome.success": True,
            "llm.token_count.prompt": 700,
            "llm.token_count.completion": 70,
            "llm.cost.total": 0.07,
        },
    )
    tool = span(
        "00000000000000c1",
        "tool",
        {"openinference.span.kind": "TOOL", "tool.name": "add"},
        parent="00000000000000a1",
        start=1_200_000_000,
        end=1_300_000_000,
    )
    joined, _ = _stored_then_joined(tmp_path, [root], [tool])
    assert (joined.model_calls, joined.input_tokens, joined.tool_calls) == (None, 700, 1)
    assert joined.cost_usd == pytest.approx(0.07)
    joined, whole = _stored_then_joined(
        tmp_path / "2", [root], [_chat("00000000000000b2", 1_500_000_000, (500, 50), 0.05)]
    )
    assert (joined.model_calls, joined.input_tokens, joined.output_tokens) == (1, 500, 50)
    assert joined.cost_usd == pytest.approx(0.05)
    assert [getattr(joined, f) for f in FIGURES] == [getattr(whole, f) for f in FIGURES]


def test_spans_that_add_no_event_change_nothing(tmp_path: Path) -> None:
    # An imported trial whose model and tool calls nobody counted (NULL: a root span
    # alone shows no transcript): a late span that adds no event (an agent span below
    # the root) leaves them unknown, and the rest as it was.
    other = span("00000000000000d1", "plan", {}, parent="00000000000000a1")
    joined, _ = _stored_then_joined(tmp_path, [AGENT], [other])
    assert [getattr(joined, f) for f in FIGURES] == [None, None, None, None, None]
    assert joined.metadata["trace_spans"] == ["00000000000000a1", "00000000000000d1"]


def test_an_http_trial_keeps_its_agent_s_own_spend_and_regrades_with_the_new_totals(
    cli: Any, tmp_path: Path
) -> None:
    # The run's trial: the reply named no model call, and its agent reported $0.002 of
    # spend beyond model calls (an http: reply's cost_usd). The service's chat spans join.
    db = tmp_path / "s.db"
    with Store(db) as store:
        http_trial(store, TRACE)
        pk = store.trial_keys("r")[0]
        store.conn.execute("UPDATE trials SET cost_usd = 0.002 WHERE id = ?", (pk,))
        spans = spans_from_json(
            request(
                _chat("00000000000000b1", 1_100_000_000, (100, 10), 0.01),
                _chat("00000000000000b2", 1_500_000_000, (500, 50), 0.05),
            ),
            file="request",
        )
        join_spans(store, spans, {})
        (trial,) = store.trials("r")
    assert (trial.model_calls, trial.input_tokens, trial.output_tokens) == (2, 600, 60)
    assert trial.cost_usd == pytest.approx(0.062)
    code, _, err = cli("grade", f"{db}:r", "--activate")
    assert code == 0, err
    code, out, err = cli("metrics", f"{db}:r", "--json")
    assert code == 0, err
    group = json.loads(out)["groups"][0]
    assert (group["tokens"]["input_total"], group["tokens"]["output_total"]) == (600, 60)
    assert group["calls"]["model"] == 2 and group["cost"]["total"] == pytest.approx(0.062)


def test_a_trial_stored_without_digests_takes_a_repeat_as_the_same(tmp_path: Path) -> None:
    # Stores written before trials kept a digest per span: nothing to compare a copy
    # with, so it is taken as a repeat, as it always was; a new span still joins.
    spans = paris_trace()
    root = next(s for s in spans if s.name.startswith("invoke"))
    tool = next(s for s in spans if s.name.startswith("execute"))
    with Store(tmp_path / "s.db") as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        (trial,) = trials_from_spans([root])
        trial.metadata.pop("trace_span_digests")
        db.add_trials("r", [trial.model_copy(update={"trial": 0})])
        changed = Span(**{**vars_of(root), "name": "invoke_agent other"})
        _, _, refused, _, _ = join_spans(db, [changed, tool], {})
        assert refused == []
        (after,) = db.trials("r")
        assert sorted(after.metadata["trace_span_digests"]) == [tool.span_id]
        # A changed copy of the span that joined since is refused.
        _, _, refused, _, _ = join_spans(
            db, [Span(**{**vars_of(tool), "end_ns": tool.end_ns + 1})], {}
        )
        assert [s.span_id for s in refused] == [tool.span_id]
        (again,) = db.trials("r")
        assert again.events == after.events


def vars_of(span: Span) -> dict[str, Any]:
    return {name: getattr(span, name) for name in span.__dataclass_fields__}
