"""The two span dialects agentgauge reads: OpenTelemetry GenAI and OpenInference.

They describe the same things (an agent run, model calls, tool calls, messages)
under different attribute names, so each is a key table plus a span-kind rule,
and the trial builder (`agentgauge.importers.spans`) reads only the table. Each
table lists the current name first and older names after it:

- OpenTelemetry GenAI semantic conventions (open-telemetry/semantic-conventions-genai,
  schema 1.42.0; every ``gen_ai.*`` attribute is still "development"). Older
  instrumentations wrote ``gen_ai.system`` for ``gen_ai.provider.name``,
  ``gen_ai.usage.prompt_tokens``/``completion_tokens``, and message content as
  span events (``gen_ai.content.prompt``, ``gen_ai.user.message``, ``gen_ai.choice``)
  instead of the ``gen_ai.input.messages``/``gen_ai.output.messages`` attributes.
- OpenInference (Arize-ai/openinference, ``spec/semantic_conventions.md``):
  ``openinference.span.kind`` and the flattened ``llm.input_messages.N.message.*``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from agentgauge.errors import InputError
from agentgauge.importers.otlp import Span
from agentgauge.textio import MAX_DEPTH, has_long_integer, infinite_at, may_overflow, nests_deeper

__all__ = [
    "DIALECTS",
    "GENAI",
    "OPENINFERENCE",
    "Dialect",
    "History",
    "Message",
    "SpanKind",
    "ToolCall",
]

SpanKind = Literal["agent", "model", "tool"]


@dataclass(slots=True)
class ToolCall:
    """A tool call as a message carries it."""

    name: str
    arguments: Any
    call_id: str | None


@dataclass(slots=True)
class Message:
    """One chat message in the builder's terms, whatever dialect it came in."""

    role: str
    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    """For a tool's answer (role ``tool``): the call it answers."""
    result: Any = None
    """For a tool's answer: what the tool returned."""

    def key(self) -> tuple[Any, ...]:
        """What makes two messages the same one, seen again in a later call's history."""
        calls = tuple((c.name, c.call_id) for c in self.tool_calls)
        return (self.role, self.text, calls, self.tool_call_id)


class History:
    """The input messages a trace's last model call read, for the next call's: each
    chat span repeats the conversation so far, so a call's ``gen_ai.input.messages``
    is mostly the text the call before it carried. That text is parsed once
    (`_message_list`); the same trace's builder hands one `History` to every call."""

    __slots__ = ("body", "messages")

    def __init__(self) -> None:
        self.body = ""
        """The last list's JSON text without its closing ``]``."""
        self.messages: list[Message] = []
        """Its messages, as `_message` read them."""


Messages = Callable[[Span, str, History | None], list[Message] | None]


@dataclass(frozen=True)
class Dialect:
    """Where one dialect keeps each fact; each entry lists attribute names, newest first."""

    name: str
    kind: Callable[[Span], SpanKind | None]
    """Whether a span is the agent run, a model call, a tool call, or neither."""
    request_model: tuple[str, ...]
    response_model: tuple[str, ...]
    input_tokens: tuple[str, ...]
    output_tokens: tuple[str, ...]
    cost_usd: tuple[str, ...]
    """A call's price, when the trace carries one (never computed from tokens here)."""
    cost_parts: tuple[str, ...]
    """Prices that add up to the call's, used when ``cost_usd`` is absent."""
    tool_name: tuple[str, ...]
    tool_call_id: tuple[str, ...]
    tool_arguments: tuple[str, ...]
    tool_result: tuple[str, ...]
    agent_name: tuple[str, ...]
    provider: tuple[str, ...]
    usage_extras: tuple[tuple[str, tuple[str, ...]], ...]
    """Token counts the trial model has no field for, summed into ``metadata``."""
    messages: Messages
    """A span's input (``side="input"``) or output messages, ``None`` when it has none;
    the `History` of the trace's calls so far, or ``None``."""
    answer: tuple[str, ...] = ()
    """Where the agent span keeps its final answer, when no message holds it."""


def first(attrs: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    """The first of ``keys`` present in ``attrs``, with its value."""
    for key in keys:
        if key in attrs:
            return key, attrs[key]
    return None


def _bad(span: Span, key: str, reason: str) -> InputError:
    return InputError(f"attribute {key!r}: {reason}", file=span.where)


def _json_value(span: Span, key: str, value: Any) -> Any:
    """An attribute holding JSON text (the SDKs allow only scalars), parsed; a
    structured value (an OTLP array or kvlist) is taken as it is."""
    if not isinstance(value, str):
        return value
    try:
        # orjson: strict JSON (no NaN) and a few times faster; Python's strict reader
        # where orjson would read an integer past 64 bits as a float (a tool's argument
        # must come across as the agent sent it).
        # (Nineteen digits at least: shorter text holds no integer past 64 bits.)
        if len(value) >= 19 and has_long_integer(value):
            parsed = json.loads(value, parse_constant=_no_constant)
            if may_overflow(value) and infinite_at(parsed) is not None:  # orjson refuses it
                raise ValueError("a number past a double's range")
        else:
            parsed = orjson.loads(value)
    except (ValueError, RecursionError):  # orjson's errors and Python's are ValueErrors
        raise _bad(span, key, "expected JSON text") from None
    if value.count("[") + value.count("{") > MAX_DEPTH and nests_deeper(value, MAX_DEPTH):
        raise _bad(span, key, f"nested more than {MAX_DEPTH} levels")
    return parsed


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# --------------------------------------------------------------------------- GenAI

#: Inference operations (``gen_ai.operation.name``) whose spans are model calls.
_INFERENCE = frozenset({"chat", "text_completion", "generate_content", "embeddings"})


def _genai_kind(span: Span) -> SpanKind | None:
    op = span.attributes.get("gen_ai.operation.name")
    if op == "invoke_agent":
        return "agent"
    if op == "execute_tool":
        return "tool"
    if isinstance(op, str) and op in _INFERENCE:  # an array value is not hashable
        return "model"
    if op is None and "gen_ai.request.model" in span.attributes:
        # Before gen_ai.operation.name (semconv <= 1.26) an inference span had only these.
        return "model" if "gen_ai.system" in span.attributes else None
    return None


def _text_of(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _message(span: Span, key: str, raw: Any, where: str) -> Message:
    """A GenAI message (``{role, parts: [...]}``) or an OpenAI-style one
    (``{role, content, tool_calls, tool_call_id}``), which older versions wrote."""
    if not isinstance(raw, dict):
        raise _bad(span, key, f"{where}: expected a message object")
    role = raw.get("role")
    if not isinstance(role, str):
        raise _bad(span, key, f"{where}.role: expected a string")
    msg = Message(role=role)
    parts = raw.get("parts")
    if parts is not None:
        if not isinstance(parts, list):
            raise _bad(span, key, f"{where}.parts: expected a list")
        texts = []
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                raise _bad(span, key, f"{where}.parts[{j}]: expected an object")
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("content"), str):
                texts.append(part["content"])
            elif kind == "tool_call":
                name = part.get("name")
                if not isinstance(name, str):
                    raise _bad(span, key, f"{where}.parts[{j}].name: expected a string")
                msg.tool_calls.append(ToolCall(name, part.get("arguments"), _opt_id(part)))
            elif kind == "tool_call_response":
                msg.tool_call_id = _opt_id(part)
                msg.result = part.get("response")
        msg.text = "\n".join(texts) if texts else None
        return msg
    content = raw.get("content")
    if isinstance(content, list):  # OpenAI content parts
        content = "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    msg.text = _text_of(content)
    calls = raw.get("tool_calls")
    for k, call in enumerate(calls if isinstance(calls, list) else []):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _bad(span, key, f"{where}.tool_calls[{k}].function.name: expected a string")
        msg.tool_calls.append(ToolCall(fn["name"], fn.get("arguments"), _opt_id(call)))
    if role == "tool":
        tid = raw.get("tool_call_id", raw.get("id"))
        msg.tool_call_id = tid if isinstance(tid, str) else None
        msg.result, msg.text = content, None
    return msg


def _opt_id(obj: dict[str, Any]) -> str | None:
    value = obj.get("id")
    return value if isinstance(value, str) else None


def _message_list(
    span: Span, key: str, value: Any, history: History | None = None
) -> list[Message]:
    """The messages of an attribute; ``history``: the list the trace's last call read,
    whose messages are taken as they are when ``value`` goes on from them."""
    if history is not None and type(value) is str:
        known = _continued(span, key, value, history)
        if known is not None:
            return known
    parsed = _json_value(span, key, value)
    if isinstance(parsed, str):  # older prompts: plain text
        return [Message(role="user" if "prompt" in key else "assistant", text=parsed)]
    listed = isinstance(parsed, list)
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        raise _bad(span, key, "expected a list of messages")
    out = [_message(span, key, m, f"[{i}]") for i, m in enumerate(parsed)]
    # Kept only for a list orjson read (`_json_value`: no long integer in it).
    kept = listed and out and type(value) is str and value.endswith("]")
    if history is not None and kept and (len(value) < 19 or not has_long_integer(value)):
        history.body, history.messages = value[:-1], out
    return out


def _continued(span: Span, key: str, value: str, history: History) -> list[Message] | None:
    """``value``'s messages when it is the last list's text with more elements after
    them (``[A]`` then ``[A,B]``): ``[B]`` alone is parsed and read. What orjson reads
    of an array is the same element by element, so the messages are those a parse of
    the whole would give; ``None`` (parse the whole) for any other text. The checks of
    `_json_value` are made on the whole text, in its order, so a fault is the same."""
    body = history.body  # a non-empty list's: ``[A`` ends with a whole element
    if len(body) < 2 or not value.startswith(body) or value[len(body) : len(body) + 1] != ",":
        return None
    if len(value) >= 19 and has_long_integer(value):
        return None  # Python's parser reads this text (`_json_value`)
    rest = "[" + value[len(body) + 1 :]
    try:
        parsed = orjson.loads(rest)
    except (ValueError, RecursionError):
        raise _bad(span, key, "expected JSON text") from None
    if not parsed:
        return None  # ``[A,]``: the whole is no JSON, and a parse of it says so
    if value.count("[") + value.count("{") > MAX_DEPTH and nests_deeper(value, MAX_DEPTH):
        raise _bad(span, key, f"nested more than {MAX_DEPTH} levels")
    known = history.messages
    out = known + [_message(span, key, m, f"[{len(known) + i}]") for i, m in enumerate(parsed)]
    if value.endswith("]"):
        history.body, history.messages = value[:-1], out
    return out


#: Span events that held content before the message attributes (semconv 1.27-1.36).
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


#: The event that carries an inference's content when the span does not (GenAI
#: conventions, "gen_ai.client.inference.operation.details"; what
#: opentelemetry-instrumentation-openai-v2 sends with content capture EVENT_ONLY).
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")


def _content_attributes(span: Span) -> dict[str, Any]:
    """Where a span's messages are: its attributes, or, when they hold none, those of
    its operation-details event (its own, or a log record joined to it)."""
    attrs = span.attributes
    if not span.events or any(key in attrs for key in _CONTENT_KEYS):
        return attrs
    for ev in span.events:
        if ev.name == DETAILS_EVENT:
            return ev.attributes
    return attrs


def _genai_messages(span: Span, side: str, history: History | None = None) -> list[Message] | None:
    attrs = _content_attributes(span)
    if side == "input":
        out: list[Message] = []
        if "gen_ai.system_instructions" in attrs:
            instr = _json_value(
                span, "gen_ai.system_instructions", attrs["gen_ai.system_instructions"]
            )
            parts = instr if isinstance(instr, list) else [instr]
            text = "\n".join(
                p["content"]
                if isinstance(p, dict) and isinstance(p.get("content"), str)
                else str(p)
                for p in parts
            )
            out.append(Message(role="system", text=text))
        if "gen_ai.input.messages" in attrs:
            return out + _message_list(
                span, "gen_ai.input.messages", attrs["gen_ai.input.messages"], history
            )
        if "gen_ai.prompt" in attrs:
            return out + _message_list(span, "gen_ai.prompt", attrs["gen_ai.prompt"])
        for ev in span.events:
            if ev.name == "gen_ai.content.prompt" and "gen_ai.prompt" in ev.attributes:
                return out + _message_list(span, "gen_ai.prompt", ev.attributes["gen_ai.prompt"])
            if ev.name in _EVENT_ROLES:
                raw = {"role": _EVENT_ROLES[ev.name], **ev.attributes}
                out.append(_message(span, ev.name, raw, "event"))
        return out or None
    if "gen_ai.output.messages" in attrs:
        return _message_list(span, "gen_ai.output.messages", attrs["gen_ai.output.messages"])
    if "gen_ai.completion" in attrs:
        return _message_list(span, "gen_ai.completion", attrs["gen_ai.completion"])
    found: list[Message] = []
    for ev in span.events:
        if ev.name == "gen_ai.content.completion" and "gen_ai.completion" in ev.attributes:
            return _message_list(span, "gen_ai.completion", ev.attributes["gen_ai.completion"])
        if ev.name == "gen_ai.choice":
            raw = _json_value(span, "message", ev.attributes.get("message", ev.attributes))
            if isinstance(raw, dict):
                found.append(_message(span, ev.name, {"role": "assistant", **raw}, "event"))
    return found or None


GENAI = Dialect(
    name="otel",
    kind=_genai_kind,
    request_model=("gen_ai.request.model",),
    response_model=("gen_ai.response.model",),
    input_tokens=("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    output_tokens=("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    cost_usd=(),
    cost_parts=(),
    tool_name=("gen_ai.tool.name",),
    tool_call_id=("gen_ai.tool.call.id",),
    tool_arguments=("gen_ai.tool.call.arguments",),
    tool_result=("gen_ai.tool.call.result",),
    agent_name=("gen_ai.agent.name",),
    provider=("gen_ai.provider.name", "gen_ai.system"),
    usage_extras=(
        ("cache_read_input_tokens", ("gen_ai.usage.cache_read.input_tokens",)),
        ("cache_creation_input_tokens", ("gen_ai.usage.cache_creation.input_tokens",)),
        ("reasoning_output_tokens", ("gen_ai.usage.reasoning.output_tokens",)),
    ),
    messages=_genai_messages,
)


# --------------------------------------------------------------------------- OpenInference

_OI_KINDS: dict[Any, SpanKind] = {"AGENT": "agent", "LLM": "model", "TOOL": "tool"}


def _oi_kind(span: Span) -> SpanKind | None:
    return _OI_KINDS.get(span.attributes.get("openinference.span.kind"))


_FLAT = re.compile(r"(\d+)\.message\.(.+)")
_NESTED = re.compile(r"(\d+)\.(?:tool_call|message_content)\.(.+)")


def _oi_messages(span: Span, side: str, history: History | None = None) -> list[Message] | None:
    """Rebuild ``llm.{input,output}_messages.N.message.*`` into messages (``history``:
    unused, the messages are attributes of their own)."""
    prefix = f"llm.{side}_messages."
    rows: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if not key.startswith(prefix):
            continue
        m = _FLAT.fullmatch(key, len(prefix))
        if m is None or len(m.group(1)) > 6:
            raise _bad(span, key, "expected llm.*_messages.N.message.FIELD")
        row = rows.setdefault(int(m.group(1)), {"tool_calls": {}, "contents": {}})
        name = m.group(2)
        for group in ("tool_calls", "contents"):
            if name.startswith(group + "."):
                sub = _NESTED.fullmatch(name, len(group) + 1)
                if sub is None or len(sub.group(1)) > 6:
                    raise _bad(span, key, f"expected {group}.N.FIELD")
                row[group].setdefault(int(sub.group(1)), {})[sub.group(2)] = value
                break
        else:
            row[name] = value
    if not rows:
        return None
    out = []
    for index in sorted(rows):
        row = rows[index]
        role = row.get("role")
        if not isinstance(role, str):
            raise _bad(span, f"{prefix}{index}.message.role", "expected a string")
        text = row.get("content")
        if text is None and row["contents"]:
            texts = [c.get("text") for _, c in sorted(row["contents"].items())]
            text = "\n".join(t for t in texts if isinstance(t, str)) or None
        msg = Message(role=role, text=_text_of(text))
        for _, call in sorted(row["tool_calls"].items()):
            name = call.get("function.name")
            if not isinstance(name, str):
                raise _bad(
                    span, f"{prefix}{index}.message.tool_calls", "a call has no function.name"
                )
            cid = call.get("id")
            msg.tool_calls.append(
                ToolCall(
                    name, call.get("function.arguments"), cid if isinstance(cid, str) else None
                )
            )
        if role == "tool":
            tid = row.get("tool_call_id")
            msg.tool_call_id = tid if isinstance(tid, str) else None
            msg.result, msg.text = msg.text, None
        out.append(msg)
    return out


OPENINFERENCE = Dialect(
    name="openinference",
    kind=_oi_kind,
    request_model=("llm.request.model_name", "llm.model_name"),
    response_model=("llm.response.model_name", "llm.model_name"),
    input_tokens=("llm.token_count.prompt",),
    output_tokens=("llm.token_count.completion",),
    cost_usd=("llm.cost.total",),
    cost_parts=("llm.cost.prompt", "llm.cost.completion"),
    tool_name=("tool.name", "tool_call.function.name"),
    tool_call_id=("tool_call.id",),
    tool_arguments=("tool_call.function.arguments", "input.value"),
    tool_result=("output.value",),
    agent_name=("agent.name",),
    provider=("llm.provider", "llm.system"),
    usage_extras=(
        ("cache_read_input_tokens", ("llm.token_count.prompt_details.cache_read",)),
        ("cache_creation_input_tokens", ("llm.token_count.prompt_details.cache_write",)),
        ("reasoning_output_tokens", ("llm.token_count.completion_details.reasoning",)),
    ),
    messages=_oi_messages,
    answer=("output.value",),
)

#: The dialects by the name ``agentgauge import`` knows them by.
DIALECTS = {d.name: d for d in (GENAI, OPENINFERENCE)}


def detect(spans: list[Span]) -> Dialect:
    """The dialect of one trace: OpenInference when any span says its kind that way."""
    if any("openinference.span.kind" in s.attributes for s in spans):
        return OPENINFERENCE
    return GENAI
