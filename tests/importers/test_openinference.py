"""`agentgauge import openinference`: OpenInference spans (OTLP JSON) -> trials."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.importers.otlp_docs import request, span

from agentgauge.errors import InputError
from agentgauge.importers import import_file, read_import
from agentgauge.store import Store

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openinference" / "openai.jsonl"


def test_instrumented_openai_fixture_becomes_trials(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        run = import_file("openinference", FIXTURE, db, "oi")
        trials = {t.task_id: t for t in db.trials("oi")}
    assert run.n_trials == 2 and run.agent == "weather-agent"
    paris = trials["weather-paris"]
    assert paris.success is True and paris.model == "fake-model-2026"
    # llm.token_count.prompt 42 + 10, completion 5 + 5.
    assert (paris.input_tokens, paris.output_tokens, paris.model_calls) == (52, 10, 2)
    assert paris.cost_usd is None  # the instrumentation recorded no llm.cost.*
    assert [e.type for e in paris.events] == [
        "message",
        "message",
        "model_call",
        "tool_call",
        "tool_result",
        "model_call",
        "message",
    ]
    # The system and user messages once, although the second LLM span repeats them.
    assert [e.content for e in paris.events if e.type == "message"] == [
        "Answer weather questions.",
        "What is the weather in Paris?",
        "It is 18 C.",
    ]
    atlantis = trials["weather-atlantis"]
    failed = next(e for e in atlantis.events if e.type == "tool_result")
    assert failed.is_error and failed.content == "unknown city Atlantis"  # span status message


def _llm(span_id: str, attrs: dict[str, object], start: int) -> dict[str, object]:
    return span(
        span_id,
        "llm",
        {"openinference.span.kind": "LLM", **attrs},
        parent="00f067aa0ba902b7",
        start=start,
        end=start + 100,
    )


def test_costs_and_flattened_tool_calls_without_tool_spans(tmp_path: Path) -> None:
    """Costs from llm.cost.* (total, else prompt + completion); with no TOOL spans the
    messages' tool calls and tool answers are the transcript's."""
    first = _llm(
        "b7ad6b7169203331",
        {
            "llm.model_name": "m",
            "llm.cost.total": 0.25,
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.text": "hi",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "look",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"q": 1}',
        },
        1_100_000_000,
    )
    second = _llm(
        "c7ad6b7169203331",
        {
            "llm.model_name": "m",
            "llm.cost.prompt": 0.5,
            "llm.cost.completion": 0.125,
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.text": "hi",
            "llm.input_messages.1.message.role": "tool",
            "llm.input_messages.1.message.tool_call_id": "c1",
            "llm.input_messages.1.message.content": "found",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "done",
        },
        1_200_000_000,
    )
    root = span(
        "00f067aa0ba902b7",
        "agent",
        {
            "openinference.span.kind": "AGENT",
            "agentgauge.task.id": "t",
            "agentgauge.trial": 2,
            "agentgauge.outcome.score": 1,
        },
    )
    path = tmp_path / "oi.jsonl"
    path.write_text(json.dumps(request(first, second, root)) + "\n")
    (trial,) = read_import("openinference", path).trials
    assert trial.cost_usd == pytest.approx(0.875)  # 0.25 + (0.5 + 0.125)
    assert (trial.trial, trial.success, trial.tool_calls) == (2, True, 1)
    call, result = (e for e in trial.events if e.type in ("tool_call", "tool_result"))
    assert call.type == "tool_call" and (call.name, call.arguments) == ("look", {"q": 1})
    assert result.type == "tool_result" and (result.call_id, result.content) == ("c1", "found")
    assert trial.answer == "done"


def test_a_call_without_a_name_is_named_by_span_and_attribute(tmp_path: Path) -> None:
    llm = _llm(
        "b7ad6b7169203331",
        {
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
        },
        1_100_000_000,
    )
    root = span(
        "00f067aa0ba902b7", "a", {"openinference.span.kind": "AGENT", "agentgauge.task.id": "t"}
    )
    path = tmp_path / "oi.jsonl"
    path.write_text(json.dumps(request(llm, root)) + "\n")
    with pytest.raises(InputError, match=r"a call has no function\.name") as err:
        read_import("openinference", path)
    assert f"{path}:1: resourceSpans[0].scopeSpans[0].spans[0]" in str(err.value)


_values = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
)
_suffix = st.sampled_from(
    [
        "role",
        "content",
        "tool_call_id",
        "tool_calls.0.tool_call.function.name",
        "tool_calls.x.tool_call.id",
        "contents.0.message_content.text",
        "contents.99999999.y",
        "tool_calls.0.tool_call.function.arguments",
        "",
        "name",
    ]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    attrs=st.dictionaries(
        st.builds(
            lambda side, n, rest: f"llm.{side}_messages.{n}.message.{rest}",
            st.sampled_from(["input", "output"]),
            st.sampled_from(["0", "1", "x", "12345678"]),
            _suffix,
        ),
        _values,
        max_size=8,
    ),
    extra=st.dictionaries(
        st.sampled_from(
            [
                "llm.cost.total",
                "llm.token_count.prompt",
                "llm.model_name",
                "tool.name",
                "output.value",
            ]
        ),
        _values,
        max_size=3,
    ),
)
def test_hostile_flattened_attributes_never_end_in_a_traceback(
    tmp_path: Path, attrs: dict[str, object], extra: dict[str, object]
) -> None:
    llm = _llm("b7ad6b7169203331", {**attrs, **extra}, 1_100_000_000)
    root = span(
        "00f067aa0ba902b7",
        "a",
        {
            "openinference.span.kind": "AGENT",
            "agentgauge.task.id": "t",
            "agentgauge.outcome.success": True,
        },
    )
    path = tmp_path / "oi.jsonl"
    path.write_text(json.dumps(request(llm, root)) + "\n")
    with contextlib.suppress(InputError):
        read_import("openinference", path)
