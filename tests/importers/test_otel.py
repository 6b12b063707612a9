"""`agentgauge import otel`: OpenTelemetry GenAI spans (OTLP JSON) -> trials."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import Cli
from tests.importers.otlp_docs import AGENT_ROOT, CHAT_CALL, TRACE, request, span, value

from agentgauge.errors import InputError
from agentgauge.importers import import_file, read_import
from agentgauge.store import Store
from agentgauge.suite import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "otel"
GENAI = FIXTURES / "genai.jsonl"
_RUNS = itertools.count()
SUITE = FIXTURES / "suite.yaml"


def _write(tmp_path: Path, *docs: object, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def test_sdk_fixture_becomes_trials_with_the_suites_grade(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        run = import_file("otel", GENAI, db, "g", {"suite": str(SUITE)})
        trials = {t.task_id: t for t in db.trials("g")}
        tasks = db.get_tasks("g")
    assert run.n_trials == 3 and run.agent == "weather-agent" and run.model == "fake-model-2026"
    assert run.suite == "weather"  # the suite file's name, not the path it was given by
    assert run.suite_version == load_suite(SUITE).version  # as `collect --suite` records
    paris = trials["weather-paris"]
    assert paris.success is True and paris.score == 1.0  # agentgauge.outcome.success = true
    # Two chat spans: 42 + 10 input tokens, 5 + 5 output tokens.
    assert (paris.input_tokens, paris.output_tokens, paris.model_calls) == (52, 10, 2)
    assert paris.cost_usd is None  # GenAI spans carry no price: unknown, not 0
    kinds = [e.type for e in paris.events]
    assert kinds == [
        "message",
        "message",
        "model_call",
        "tool_call",
        "tool_result",
        "model_call",
        "message",
    ]
    call = paris.events[3]
    assert call.type == "tool_call" and call.arguments == {"city": "Paris"}
    assert call.call_id == "call_1"
    assert paris.answer == "It is 18 C."
    atlantis = trials["weather-atlantis"]
    assert atlantis.success is False and atlantis.score == 0.0  # outcome.score = 0.0
    result = atlantis.events[4]
    assert result.type == "tool_result" and result.is_error  # error.type LookupError
    # No outcome on the span: the suite's answer grader decided it.
    france = trials["capital-france"]
    assert france.success is True and [g.grader for g in france.grades] == ["answer"]
    assert {t.id for t in tasks} == set(trials)


def _with_resource(doc: dict[str, Any], **attrs: Any) -> dict[str, Any]:
    doc["resourceSpans"][0]["resource"] = {
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()]
    }
    return doc


def test_the_suite_an_export_names_on_its_resource_is_the_runs(tmp_path: Path) -> None:
    """``agentgauge.suite`` and ``agentgauge.suite.version``, which ``export --otel``
    writes on the resource, are the run's suite again (not the file's name); files
    whose resources name different suites name none."""
    named = {"agentgauge.suite": "retail", "agentgauge.suite.version": "ab12"}
    one = read_import("otel", _write(tmp_path, _with_resource(request(AGENT_ROOT), **named)))
    assert (one.suite, one.suite_version) == ("retail", "ab12")
    other = span("00000000000000a2", "invoke_agent bot", {"agentgauge.task.id": "u",
                 "agentgauge.outcome.success": True}, trace="1" * 32)  # fmt: skip
    mixed = _write(
        tmp_path,
        _with_resource(request(AGENT_ROOT), **named),
        _with_resource(request(other), **{"agentgauge.suite": "airline"}),
        name="mixed.jsonl",
    )
    assert (read_import("otel", mixed).suite, read_import("otel", mixed).suite_version) == (
        None,
        None,
    )
    with Store(tmp_path / "s.db") as db:
        run = import_file("otel", mixed, db, "m")
    assert run.suite == str(mixed)  # as for any trace file that names no suite
    bad = _write(
        tmp_path, _with_resource(request(AGENT_ROOT), **{"agentgauge.suite": 5}), name="b.jsonl"
    )
    with pytest.raises(InputError) as info:
        read_import("otel", bad)
    assert str(info.value) == (
        f"{bad}:1: resourceSpans[0].resource: attribute 'agentgauge.suite' must be a string, "
        "got a number"
    )


def test_a_trace_without_outcome_is_refused_without_a_suite(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "new.db"
    code, _, err = cli("import", "otel", str(GENAI), "--store", str(db))
    assert code == 2
    assert f"{GENAI}:3: resourceSpans[0].scopeSpans[1].spans[0]:" in err
    assert "has no outcome" in err and "--suite" in err
    assert not db.exists()


def test_outcomes_file_supplies_what_the_spans_lack(tmp_path: Path) -> None:
    trace_id = json.loads(GENAI.read_text().splitlines()[2])["resourceSpans"][0]["scopeSpans"][0][
        "spans"
    ][0]["traceId"]
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"trace_id": trace_id, "score": 0.5, "trial": 3}) + "\n")
    imported = read_import("otel", GENAI, {"outcomes": str(outcomes)})
    france = next(t for t in imported.trials if t.task_id == "capital-france")
    assert (france.score, france.success, france.trial) == (0.5, False, 3)
    # The run says which file decided its outcomes, by content as well as by name.
    assert imported.config["outcomes"] == {
        "file": str(outcomes),
        "sha256": hashlib.sha256(outcomes.read_bytes()).hexdigest(),
        "rows": 1,
    }


def test_outcomes_file_that_contradicts_the_trace_is_refused(tmp_path: Path) -> None:
    first = json.loads(GENAI.read_text().splitlines()[0])
    trace_id = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"trace_id": trace_id, "task_id": "other"}) + "\n")
    with pytest.raises(InputError, match="says task 'weather-paris'") as err:
        read_import("otel", GENAI, {"outcomes": str(outcomes), "suite": str(SUITE)})
    assert str(err.value).startswith(f"{outcomes}:1: task_id: trace ")


def test_older_dialect_names_and_content_events(tmp_path: Path) -> None:
    """Before the message attributes (semconv <= 1.36): gen_ai.system, prompt/completion
    token names, content as span events; no invoke_agent span, so the trace root is
    the trial."""
    prompt = json.dumps([{"role": "user", "content": "2+2?"}])
    completion = json.dumps([{"role": "assistant", "content": "4"}])
    chat = span(
        "b7ad6b7169203331",
        "chat gpt-4",
        {
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4",
            "gen_ai.usage.prompt_tokens": 7,
            "gen_ai.usage.completion_tokens": 1,
        },
        parent="00f067aa0ba902b7",
        start=1_100_000_000,
        end=1_600_000_000,
        events=[
            {
                "name": "gen_ai.content.prompt",
                "timeUnixNano": "1100000000",
                "attributes": [{"key": "gen_ai.prompt", "value": {"stringValue": prompt}}],
            },
            {
                "name": "gen_ai.content.completion",
                "timeUnixNano": "1600000000",
                "attributes": [{"key": "gen_ai.completion", "value": {"stringValue": completion}}],
            },
        ],
    )
    root = span("00f067aa0ba902b7", "solve", {"task": "add", "ok": True})
    # One pretty-printed document, not one request per line.
    path = tmp_path / "old.json"
    path.write_text(json.dumps(request(chat, root), indent=2), encoding="utf-8")
    options = {"task_attr": "task", "success_attr": "ok"}
    (trial,) = read_import("otel", path, options).trials
    assert (trial.task_id, trial.success, trial.model) == ("add", True, "gpt-4")
    assert (trial.input_tokens, trial.output_tokens, trial.latency_s) == (7, 1, 1.0)
    assert [(e.type, getattr(e, "content", None)) for e in trial.events] == [
        ("message", "2+2?"),
        ("model_call", None),
        ("message", "4"),
    ]
    assert trial.events[1].latency_s == pytest.approx(0.5)  # 1.6 s - 1.1 s
    assert trial.answer == "4" and trial.metadata["provider"] == "openai"


def test_agent_span_error_is_an_agent_error(tmp_path: Path) -> None:
    root = span(
        "00f067aa0ba902b7",
        "invoke_agent a",
        {"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": "t", "error.type": "Boom"},
        status={"code": 2, "message": "it broke"},
    )
    (trial,) = read_import("otel", _write(tmp_path, request(root))).trials
    assert (trial.status, trial.error_kind, trial.success) == ("error", "agent", False)
    assert trial.error == "Boom: it broke"
    assert trial.model_calls is None  # no chat spans: unknown, not 0
    # Nor does a trace of its root span alone show a transcript: tool calls unknown.
    assert (trial.events, trial.tool_calls) == ([], None)


def test_an_event_the_model_refuses_is_an_input_error_at_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The builder checks every value it reads, so no span is known to get this far; a
    # check it lacks must still end in one line naming the trace, not a traceback.
    from agentgauge.importers import spans as builder

    def refusing(span: object) -> object:
        return builder.ModelCallEvent(t=-1.0)  # t >= 0: the model refuses it

    root = span(
        "00f067aa0ba902b7",
        "invoke_agent a",
        {
            "gen_ai.operation.name": "invoke_agent",
            "agentgauge.task.id": "t",
            "agentgauge.outcome.success": True,
        },
    )
    chat = span(
        "00000000000000b1", "chat m", {"gen_ai.operation.name": "chat"}, parent="00f067aa0ba902b7"
    )
    monkeypatch.setattr(builder._Builder, "_model_call", lambda self, s: refusing(s))
    with pytest.raises(InputError) as caught:
        read_import("otel", _write(tmp_path, request(root, chat)))
    assert "resourceSpans[0].scopeSpans[0].spans[0]" in str(caught.value)
    assert caught.value.field == "t"


def test_a_sub_agent_inside_the_agent_is_part_of_its_trial(tmp_path: Path) -> None:
    # An orchestrator hands part of the task to a sub-agent (an invoke_agent span under
    # the root's, as multi-agent frameworks emit them): one trial, the outer agent's,
    # holding every model call and tool call of both, in time order; the sub-agent's
    # task attributes and error do not make it a trial of its own.
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    usage = {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}
    spans = [
        span(
            "00000000000000a1",
            "invoke_agent planner",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "planner",
                "agentgauge.task.id": "trip",
                "agentgauge.outcome.success": True,
            },
            start=1_000_000_000,
            end=9_000_000_000,
        ),
        span(
            "00000000000000b1",
            "chat m",
            {**chat, **usage},
            parent="00000000000000a1",
            start=1_100_000_000,
            end=1_500_000_000,
        ),
        span(
            "00000000000000a2",
            "invoke_agent booker",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "booker",
                "agentgauge.task.id": "booking-subtask",
                "error.type": "Retry",
            },
            parent="00000000000000a1",
            start=2_000_000_000,
            end=6_000_000_000,
        ),
        span(
            "00000000000000b2",
            "chat m",
            {**chat, **usage},
            parent="00000000000000a2",
            start=2_100_000_000,
            end=2_500_000_000,
        ),
        span(
            "00000000000000c1",
            "execute_tool book",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "book",
                "gen_ai.tool.call.arguments": '{"city": "Oslo"}',
            },
            parent="00000000000000a2",
            start=3_000_000_000,
            end=3_500_000_000,
        ),
        span(
            "00000000000000b3",
            "chat m",
            {**chat, **usage},
            parent="00000000000000a1",
            start=7_000_000_000,
            end=7_500_000_000,
        ),
    ]
    # Children first, as an SDK exports them (each span when it ends).
    (trial,) = read_import("otel", _write(tmp_path, request(*reversed(spans)))).trials
    assert (trial.task_id, trial.agent, trial.success, trial.status) == (
        "trip",
        "planner",
        True,
        "completed",
    )
    assert (trial.model_calls, trial.input_tokens, trial.output_tokens) == (3, 30, 6)
    assert trial.tool_calls == 1 and trial.latency_s == pytest.approx(8.0)
    kinds = [(e.type, e.t) for e in trial.events]
    # A model call at its span's end: when its answer came, as the harness records it.
    assert kinds == [
        ("model_call", pytest.approx(0.5)),
        ("model_call", pytest.approx(1.5)),
        ("tool_call", pytest.approx(2.0)),
        ("tool_result", pytest.approx(2.5)),
        ("model_call", pytest.approx(6.5)),
    ]


def test_an_integer_past_64_bits_in_a_message_comes_across_exactly(tmp_path: Path) -> None:
    # A tool call that a model's output message holds (no tool spans), its argument an
    # account number of 24 digits: orjson would read it as a float (1.2345678901234568e+23).
    account = 123456789012345678901234
    output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "pay", "arguments": {"to": account}}
            ],
        }
    ]
    spans = [
        span(
            "00000000000000a1",
            "invoke_agent payer",
            {
                "gen_ai.operation.name": "invoke_agent",
                "agentgauge.task.id": "pay",
                "agentgauge.outcome.success": True,
            },
            start=1_000_000_000,
            end=3_000_000_000,
        ),
        span(
            "00000000000000b1",
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.output.messages": json.dumps(output),
            },
            parent="00000000000000a1",
            start=1_100_000_000,
            end=1_500_000_000,
        ),
    ]
    path = _write(tmp_path, request(*spans))
    (trial,) = read_import("otel", path).trials
    (call,) = [e for e in trial.events if e.type == "tool_call"]
    assert call.arguments == {"to": account} and type(call.arguments["to"]) is int
    # And so it is stored and read back.
    import_file("otel", path, tmp_path / "s.db", "r")
    with Store(tmp_path / "s.db", readonly=True) as db:
        (stored,) = db.trials("r")
    (call,) = [e for e in stored.events if e.type == "tool_call"]
    assert call.arguments == {"to": account} and type(call.arguments["to"]) is int


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        ({"resourceSpans": {}}, "resourceSpans", "expected a list"),
        (
            request(span("zz", "x", {})),
            "resourceSpans[0].scopeSpans[0].spans[0].spanId",
            "expected 16 hex digits",
        ),
        (
            request({**span("00f067aa0ba902b7", "x", {}), "startTimeUnixNano": "-1"}),
            "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano",
            "unsigned 64-bit",
        ),
        (
            request(
                {
                    **span("00f067aa0ba902b7", "x", {}),
                    "attributes": [{"key": "n", "value": {"intValue": "1" + "0" * 30}}],
                }
            ),
            "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.intValue",
            "64-bit integer",
        ),
        # Literals past 64 bits, which orjson reads as floats: said as what the file
        # holds, not as the float 1.2345678901234568e+20 nobody wrote.
        (
            request(
                {
                    **span("00f067aa0ba902b7", "x", {}),
                    "attributes": [{"key": "n", "value": {"intValue": 123456789012345678901}}],
                }
            ),
            "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.intValue",
            "expected a 64-bit integer, got a number past 64 bits (about 1.23457e+20)",
        ),
        (
            request({**span("00f067aa0ba902b7", "x", {}), "endTimeUnixNano": 2**64 + 5}),
            "resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano",
            "expected an unsigned 64-bit integer, got a number past 64 bits",
        ),
    ],
)
def test_malformed_elements_are_named(
    tmp_path: Path, line: dict[str, object], field: str, reason: str
) -> None:
    ok = request(span("00f067aa0ba902b7", "x", {"agentgauge.task.id": "t", "agentgauge.trial": 0}))
    path = _write(tmp_path, ok, line)
    with pytest.raises(InputError) as err:
        read_import("otel", path)
    assert (err.value.file, err.value.line, err.value.field) == (str(path), 2, field)
    assert reason in err.value.reason


def test_bad_attribute_type_names_span_and_attribute(tmp_path: Path) -> None:
    chat = span(
        "b7ad6b7169203331",
        "chat",
        {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "many"},
        parent="00f067aa0ba902b7",
    )
    root = span("00f067aa0ba902b7", "r", {"agentgauge.task.id": "t", "agentgauge.outcome.score": 1})
    path = _write(tmp_path, request(chat, root))
    with pytest.raises(
        InputError, match=r"'gen_ai\.usage\.input_tokens': expected an integer"
    ) as e:
        read_import("otel", path)
    assert "resourceSpans[0].scopeSpans[0].spans[0]" in str(e.value)


def test_trace_without_task_is_refused_and_store_unchanged(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "s.db"
    assert cli("import", "otel", str(GENAI), "--store", str(db), "--suite", str(SUITE))[0] == 0
    root = span("00f067aa0ba902b7", "r", {"agentgauge.outcome.success": True})
    code, _, err = cli("import", "otel", str(_write(tmp_path, request(root))), "--store", str(db))
    assert code == 2 and f"trace {TRACE} names no task" in err
    with Store(db) as store:
        (run,) = store.list_runs()
        assert run.n_trials == 3


def test_options_are_refused_by_formats_without_them(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--suite: applies only to the .*otel"):
        read_import("jsonl", GENAI, {"suite": str(SUITE)})


def test_binary_and_deep_files_fail_as_every_importer_does(tmp_path: Path) -> None:
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b'{"resourceSpans": []}\n\xff\xfe{}\n')
    with pytest.raises(InputError, match="not a UTF-8 text file") as err:
        read_import("otel", binary)
    assert err.value.line == 2
    deep = tmp_path / "d.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_import("otel", deep)


def test_what_only_pythons_json_reads_is_refused_for_what_it_is(tmp_path: Path) -> None:
    # A lone surrogate escape and a number past a double's range are JSON to Python's
    # reader but not to a protobuf string or number; the error says which (it said
    # "integers must fit in 64 bits" for both). An integer past 64 bits is named at its
    # field.
    name = '{"resourceSpans": [], "x": "\\ud800"}'
    for text, words in ((name, "surrogate"), ('{"resourceSpans": [], "x": 1e400}', "infinity")):
        path = tmp_path / "s.jsonl"
        path.write_text('{"resourceSpans": []}\n' + text + "\n")
        with pytest.raises(InputError, match=words) as err:
            read_import("otel", path)
        assert err.value.line == 2 and "64 bits" not in str(err.value)
    root = span("a" * 16, "invoke_agent", {"gen_ai.operation.name": "invoke_agent"})
    root["attributes"].append({"key": "n", "value": {"intValue": 2**70}})
    path = tmp_path / "big.json"
    path.write_text(json.dumps(request(root)))
    with pytest.raises(InputError, match=r"intValue: expected a 64-bit integer"):
        read_import("otel", path)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ('{"resourceSpans": [], "x": NaN}', "NaN is not allowed"),
        ('{"resourceSpans": [], "x": "\\ud800"}', "surrogate"),
        ('{"resourceSpans": [], "x": 1e400}', "infinity"),
    ],
)
def test_a_bad_first_line_is_named_by_its_line_as_a_later_one_is(
    tmp_path: Path, cli: Cli, bad: str, words: str
) -> None:
    """A file of one request per line whose first line is bad was read as one document,
    and its error named no line (``tr.jsonl: invalid JSON: NaN is not allowed``), while
    the same line third said ``tr.jsonl:3:``."""
    good = json.dumps(request(AGENT_ROOT))
    for lines, number in (([bad, good], 1), (["", bad, good], 2), ([good, good, bad], 3)):
        path = tmp_path / "tr.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=words) as err:
            read_import("otel", path)
        assert err.value.line == number, lines
    path.write_text(f"{bad}\n{good}\n", encoding="utf-8")
    code, _, out = cli("import", "otel", str(path), "--store", str(tmp_path / "s.db"))
    assert code == 2 and f"{path}:1: " in out


def test_a_bad_first_line_of_bytes_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_bytes(b'{"resourceSpans": [], "x": "\xff"}\n{"resourceSpans": []}\n')
    with pytest.raises(InputError, match="not a UTF-8 text file") as err:
        read_import("otel", path)
    assert err.value.line == 1


def test_a_document_over_many_lines_is_still_read_as_one(tmp_path: Path) -> None:
    """The first line of a pretty-printed request is no document of its own: the file
    is one document, and so is its error (not line 1's "unexpected end")."""
    doc = request(AGENT_ROOT)
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(doc, indent=1).replace('"invoke_agent"', "NaN", 1))
    with pytest.raises(InputError, match="NaN is not allowed") as err:
        read_import("otel", path)
    assert err.value.line is None
    first_line = json.dumps(doc)[:-1] + ',\n"x": 1}'
    path.write_text(first_line)
    assert read_import("otel", path, {"suite": str(SUITE)}).trials


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "traceId",
        "spanId",
        "parentSpanId",
        "name",
        "startTimeUnixNano",
        "attributes",
        "status",
        "events",
        "gen_ai.operation.name",
        "agentgauge.task.id",
        "key",
        "value",
        "intValue",
    ]
)


@st.composite
def _otlp_like(draw: st.DrawFn) -> object:
    """Documents shaped like OTLP with hostile values in every slot."""
    attrs = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(
                        [
                            "agentgauge.task.id",
                            "gen_ai.operation.name",
                            "gen_ai.usage.input_tokens",
                            "gen_ai.input.messages",
                            "agentgauge.outcome.success",
                        ]
                    ),
                    "value": st.dictionaries(
                        st.sampled_from(
                            [
                                "stringValue",
                                "intValue",
                                "boolValue",
                                "doubleValue",
                                "arrayValue",
                                "kvlistValue",
                            ]
                        ),
                        _json,
                        max_size=2,
                    ),
                }
            ),
            max_size=4,
        )
    )
    s = draw(st.dictionaries(_keys, _json, max_size=5))
    s.setdefault("traceId", draw(st.sampled_from([TRACE, "x", ""])))
    s.setdefault("spanId", draw(st.sampled_from(["00f067aa0ba902b7", "1"])))
    s["attributes"] = attrs
    return {"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}]}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=_otlp_like() | _json)
def test_hostile_documents_never_end_in_a_traceback(tmp_path: Path, doc: object) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with contextlib.suppress(InputError):
        read_import("otel", path)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=200))
def test_hostile_bytes_never_end_in_a_traceback(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    with contextlib.suppress(InputError):
        read_import("otel", path)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    messages=_json,
    arguments=_json | st.text(max_size=20),
    result=_json,
    deep=st.integers(min_value=1, max_value=400),
)
def test_hostile_message_and_tool_attributes_never_end_in_a_traceback(
    tmp_path: Path, messages: object, arguments: object, result: object, deep: int
) -> None:
    """The JSON inside attributes (messages, tool arguments) is hostile too."""
    chat = span(
        "b7ad6b7169203331",
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": messages}]),
        },
        parent="00f067aa0ba902b7",
    )
    tool = span(
        "c7ad6b7169203331",
        "execute_tool",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.arguments": arguments
            if isinstance(arguments, str)
            else "[" * deep + json.dumps(arguments) + "]" * deep,
            "gen_ai.tool.call.result": json.dumps(result),
        },
        parent="00f067aa0ba902b7",
    )
    root = span("00f067aa0ba902b7", "r", {"agentgauge.task.id": "t", "agentgauge.outcome.score": 1})
    path = _write(tmp_path, request(chat, tool, root))
    try:
        read_import("otel", path)
    except InputError:
        return
    with Store(tmp_path / f"s{next(_RUNS)}.db") as db:  # what was read can be stored
        import_file("otel", path, db, "r")


_scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    evaluations=st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "gen_ai.evaluation.name": st.sampled_from(["done", "other"]) | _scalar,
                "gen_ai.evaluation.score.value": _scalar,
                "gen_ai.evaluation.score.label": st.sampled_from(["pass", "FAIL", "meh"]) | _scalar,
                "gen_ai.evaluation.explanation": _scalar,
                "gen_ai.response.id": _scalar,
                "error.type": _scalar,
            },
        ),
        max_size=3,
    ),
    outcome=st.booleans(),
)
def test_hostile_evaluation_events_never_end_in_a_traceback(
    tmp_path: Path, evaluations: list[dict[str, object]], outcome: bool
) -> None:
    """An evaluator's events (`gen_ai.evaluation.result`) are read as grades, and one
    may be the outcome: whatever their attributes hold, an error or a storable trial."""
    events = [
        {
            "name": "gen_ai.evaluation.result",
            "timeUnixNano": "1500000000",
            "attributes": [
                {"key": k, "value": value(v)} for k, v in attrs.items() if v is not None
            ],
        }
        for attrs in evaluations
    ]
    attrs: dict[str, object] = {"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": "t"}
    if not outcome:
        attrs["agentgauge.outcome.success"] = True
    root = span("00f067aa0ba902b7", "invoke_agent", attrs, events=events)
    path = _write(tmp_path, request(root))
    options = {"outcome_evaluation": "done"} if outcome else {}
    try:
        read_import("otel", path, options)
    except InputError:
        return
    with Store(tmp_path / f"s{next(_RUNS)}.db") as db:  # what was read can be stored
        import_file("otel", path, db, "r", options)


def test_ids_in_protobufs_own_json_mapping_are_read_too(tmp_path: Path) -> None:
    # OTLP JSON writes ids in hex; protobuf's JSON mapping (MessageToJson, what a script
    # dumping the SDK's messages writes) in base64. Both lengths differ (24 and 12
    # characters against 32 and 16), so neither is taken for the other.
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    hex_lines = (FIXTURES / "genai.jsonl").read_text().splitlines()
    mapped = []
    for line in hex_lines:
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if s.get(key):
                            s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
        message = json_format.ParseDict(doc, ExportTraceServiceRequest())
        mapped.append(json.dumps(json_format.MessageToDict(message)))
    assert "traceId" in mapped[0] and all(len(line) > 0 for line in mapped)
    b64 = tmp_path / "b64.jsonl"
    b64.write_text("\n".join(mapped) + "\n")
    options = {"suite": str(FIXTURES / "suite.yaml")}
    from_hex = read_import("otel", FIXTURES / "genai.jsonl", options).trials
    from_b64 = read_import("otel", b64, options).trials
    assert [t.model_dump() for t in from_b64] == [t.model_dump() for t in from_hex]
    assert (
        from_b64[0].metadata["trace_id"]
        == json.loads(hex_lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0][
            "traceId"
        ].lower()
    )


def test_an_id_that_is_neither_hex_nor_base64_of_its_size_is_named(tmp_path: Path) -> None:
    # 12 characters of base64 without padding decode to 9 bytes, not a span id's 8.
    bad = request({**span("00f067aa0ba902b7", "x", {}), "spanId": "AAAAAAAAAAAA"})
    with pytest.raises(InputError) as err:
        read_import("otel", _write(tmp_path, bad))
    assert err.value.field == "resourceSpans[0].scopeSpans[0].spans[0].spanId"
    assert "expected 16 hex digits" in err.value.reason


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("traceId", "0x0af7651916cd43dd8448eb211c8031"),  # 32 characters, as int(s, 16) took
        ("traceId", "-0af7651916cd43dd8448eb211c80319"),
        ("traceId", "+0af7651916cd43dd8448eb211c80319"),
        ("traceId", "0af7_651916cd43dd8448eb211c80319"),
        ("spanId", " b7ad6b716920333"),
        ("spanId", "b7ad6b716920333\n"),
        ("traceId", "0" * 32),  # invalid in W3C Trace Context and OTLP
        ("spanId", "0" * 16),
        ("spanId", "AAAAAAAAAAA="),  # all zeros in protobuf's base64 mapping
    ],
)
def test_an_id_that_is_not_exactly_its_hex_digits_is_refused_by_name(
    tmp_path: Path, cli: Any, key: str, bad: str
) -> None:
    # Such ids were stored, and could never match an outcomes row or a live trace.
    doc = request(
        {**span("00f067aa0ba902b7", "invoke_agent", {"agentgauge.task.id": "t"}), key: bad}
    )
    path = _write(tmp_path, doc)
    db = tmp_path / "s.db"
    code, _, err = cli("import", "otel", str(path), "--store", str(db))
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}:1: resourceSpans[0].scopeSpans[0].spans[0].{key}:" in err
    assert "all zeros" in err if not bad.strip("0=A") else "hex digits" in err
    assert not db.exists()


def test_an_all_zero_parent_span_id_means_no_parent(tmp_path: Path) -> None:
    # Some SDKs write the field for a root span: it is that span's trace's root.
    root = {**AGENT_ROOT, "parentSpanId": "0" * 16}
    (trial,) = read_import("otel", _write(tmp_path, request(root, CHAT_CALL))).trials
    assert (trial.task_id, trial.status, trial.model_calls) == ("t", "completed", 1)


def test_an_outcome_row_whose_trace_id_is_not_32_hex_digits_is_refused(tmp_path: Path) -> None:
    for bad in ("0x" + "0af7651916cd43dd8448eb211c8031", " " + TRACE[1:], "0" * 32):
        outcomes = tmp_path / "o.jsonl"
        outcomes.write_text(json.dumps({"trace_id": bad, "success": True}) + "\n")
        with pytest.raises(InputError) as err:
            read_import("otel", GENAI, {"outcomes": str(outcomes)})
        assert (err.value.line, err.value.field) == (1, "trace_id"), err.value


def test_a_trial_index_whose_successor_overflows_the_store_is_refused(
    tmp_path: Path, cli: Cli
) -> None:
    """2^63 - 1 fits SQLite, but a later trial of the task given no index took 2^63:
    a traceback (OverflowError), exit 1. Refused as the input's fault, nothing stored."""
    root = span(
        "00000000000000a1",
        "invoke_agent bot",
        {
            "gen_ai.operation.name": "invoke_agent",
            "agentgauge.task.id": "t",
            "agentgauge.outcome.success": True,
            "agentgauge.trial": 2**63 - 1,
        },
    )
    later = {**AGENT_ROOT, "traceId": "1" * 32}
    path = _write(tmp_path, request(root, later))
    db = tmp_path / "s.db"
    code, _out, err = cli("import", "otel", str(path), "--store", str(db))
    assert code == 2, err
    assert "attribute 'agentgauge.trial': 9223372036854775807 is past the largest" in err
    assert f"{path}:1: resourceSpans[0].scopeSpans[0].spans[0]: " in err
    assert "Traceback" not in err
    assert not db.exists()


def _nested(levels: int, tag: str) -> dict[str, Any]:
    """A string value inside ``levels`` kvlistValues (or arrayValues)."""
    v: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        if tag == "kvlistValue":
            v = {"kvlistValue": {"values": [{"key": "k", "value": v}]}}
        else:
            v = {"arrayValue": {"values": [v]}}
    return v


@pytest.mark.parametrize("tag", ["kvlistValue", "arrayValue"])
def test_values_nested_past_the_bound_are_refused_whatever_nests(tmp_path: Path, tag: str) -> None:
    """Each kvlistValue counted its values from the first level again: 120 levels were
    stored, then neither `export --jsonl` nor `export --otel` read them back. The bound
    holds whatever nests (protobuf's reader counts each level too), with the path."""
    from agentgauge.importers.otlp import spans_from_json
    from agentgauge.textio import MAX_DEPTH

    def doc(levels: int) -> dict[str, Any]:
        deep = {**CHAT_CALL, "attributes": [{"key": "deep", "value": _nested(levels, tag)}]}
        return request(AGENT_ROOT, deep)

    # The attribute's value is the first level; its string the 100th at most.
    (_, deep) = spans_from_json(doc(MAX_DEPTH - 1), file="t.json")
    assert "deep" in deep.attributes
    with pytest.raises(InputError) as info:
        spans_from_json(doc(MAX_DEPTH), file="t.json")
    assert info.value.reason == f"nested too deeply: more than {MAX_DEPTH} levels of values"
    assert info.value.field is not None
    step = ".kvlistValue.values[0].value" if tag == "kvlistValue" else ".arrayValue.values[0]"
    assert info.value.field.endswith(step)
    assert info.value.field.count(step) == MAX_DEPTH
    # And through the import, the file and line named with the element.
    path = _write(tmp_path, doc(120))
    with pytest.raises(InputError) as info:
        read_import("otel", path)
    assert str(info.value).startswith(f"{path}:1: resourceSpans[0].scopeSpans[0].spans[1].")
