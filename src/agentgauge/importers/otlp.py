"""OTLP trace data, from a file or a request, as plain span records.

Two encodings carry the same ``ExportTraceServiceRequest`` (opentelemetry-proto,
``docs/specification.md``): protobuf, and "JSON Protobuf Encoding", where keys
are lowerCamelCase, ``traceId``/``spanId`` are hex strings, 64-bit integers
(``intValue``, ``startTimeUnixNano``) are strings or numbers, and enums are
integers (names are accepted too, as the spec asks of receivers). Both become
`Span` records here, which is all the trial builder (`agentgauge.importers.spans`)
reads; nothing after this module knows which encoding a span came in.

Every value is checked before it is used: an element that is not what the
encoding says fails with one `InputError` naming the element path
(``resourceSpans[0].scopeSpans[1].spans[4].traceId``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import orjson
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from agentgauge.errors import InputError
from agentgauge.schema import INT64_MAX
from agentgauge.textio import MAX_DEPTH, decode_utf8, is_digits, loads_json, read_bytes

__all__ = [
    "Repeats",
    "Span",
    "SpanEvent",
    "duration_known",
    "read_otlp_documents",
    "read_otlp_json_file",
    "read_otlp_spans",
    "same_span",
    "sort_repeats",
    "span_digest",
    "spans_from_json",
    "spans_from_protobuf",
    "unique_spans",
]

#: ``Status.code`` of a failed span (opentelemetry-proto trace.proto ``STATUS_CODE_ERROR``).
_STATUS_ERROR = 2
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_UINT64_MAX = 2**64 - 1


@dataclass(slots=True)
class SpanEvent:
    """A span's timed event (``Span.Event``): a name, a time and attributes."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span, decoded: ids as lowercase hex, attributes as plain Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    """``None`` for a trace's root span."""
    name: str
    start_ns: int
    end_ns: int
    """The span's end, or its start when it records none or one before its start: a
    time that orders the span; whether its duration is known is ``ended``."""
    attributes: dict[str, Any]
    events: list[SpanEvent] = field(default_factory=list)
    error: str | None = None
    """The status message (or ``"error"``) when the span's status is ERROR."""
    resource: dict[str, Any] = field(default_factory=dict)
    """The attributes of the resource that emitted the span (``service.name``...)."""
    where: str = ""
    """Where the span was read, for messages: ``FILE:LINE: resourceSpans[0]...``."""
    ended: bool = True
    """Whether the span records its start and an end at or after it: only then is its
    duration (``end_ns - start_ns``) a measure, else it is unknown."""
    logged: int = 0
    """How many of ``events``, at its end, came as log records (`attach_log_events`),
    not with the span: no part of what the span says (`same_span`, `span_digest`), so
    that the span sent again as it was is a repeat."""

    @property
    def own_events(self) -> list[SpanEvent]:
        """The events the span came with (those attached from log records left out)."""
        return self.events[: len(self.events) - self.logged] if self.logged else self.events

    @property
    def duration_s(self) -> float | None:
        """The span's duration in seconds, or ``None`` when it is unknown (`ended`)."""
        return (self.end_ns - self.start_ns) / 1e9 if self.ended else None


def duration_known(start_ns: int, end_ns: int) -> bool:
    """Whether a span with these times measured its duration: both set (0 is the
    protocol's "not set") and the end not before the start."""
    return start_ns > 0 and end_ns >= start_ns


def same_span(a: Span, b: Span) -> bool:
    """Whether two spans with the same ids say the same thing (where each was read
    aside): a repeat (an exporter's retry, a file concatenated twice), not a conflict."""
    return (
        a.parent_id == b.parent_id
        and a.name == b.name
        and a.start_ns == b.start_ns
        and a.end_ns == b.end_ns
        and a.ended == b.ended
        and a.error == b.error
        and a.attributes == b.attributes
        and a.own_events == b.own_events
        and a.resource == b.resource
    )


def span_digest(span: Span) -> str:
    """A digest of what `same_span` compares, for a span no longer at hand: a stored
    trial keeps one per span it was read from, so that a late copy of one of them is
    told from a repeat (`agentgauge.collect.join`). 128 bits of SHA-256 over the
    canonical JSON of the span's content (ids, where it was read and the events attached
    from log records left out)."""
    content = [
        span.parent_id,
        span.name,
        span.start_ns,
        span.end_ns,
        span.ended,
        span.error,
        span.attributes,
        [[e.name, e.time_ns, e.attributes] for e in span.own_events] if span.events else [],
        span.resource,
    ]
    try:
        # orjson: the stdlib's sort_keys encoder made a fifth of an import's time.
        raw = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):  # a lone surrogate, an integer past 64 bits
        text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        raw = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:32]


@dataclass
class Repeats:
    """Spans sorted by identity, ``(trace_id, span_id)`` (`sort_repeats`)."""

    kept: list[Span]
    """Each span once, the first read of each, in order."""
    identical: int = 0
    """Repeats that say what the span kept says: dropped."""
    conflicting: list[tuple[Span, Span]] = field(default_factory=list)
    """Repeats with other content, each with the span kept: ``(first, repeat)``."""


def sort_repeats(spans: Iterable[Span]) -> Repeats:
    """``spans`` with each span, identified by ``(trace_id, span_id)``, kept once: the
    first read. A set lookup per span; the content of a repeat is compared only then."""
    seen: dict[tuple[str, str], Span] = {}
    out = Repeats(kept=[])
    for span in spans:
        key = (span.trace_id, span.span_id)
        first = seen.get(key)
        if first is None:
            seen[key] = span
            out.kept.append(span)
        elif same_span(first, span):
            out.identical += 1
        else:
            out.conflicting.append((first, span))
    return out


def unique_spans(spans: Iterable[Span]) -> tuple[list[Span], int]:
    """``spans`` with identical repeats dropped, and how many were; a span whose ids
    repeat another's with other content is an `InputError` naming both."""
    found = sort_repeats(spans)
    if found.conflicting:
        first, repeat = found.conflicting[0]
        raise InputError(
            f"span {repeat.span_id} of trace {repeat.trace_id} was read before with other "
            f"content ({first.where}): a span is identified by its traceId and spanId, and "
            "two spans with the same ids must be the same span",
            file=repeat.where,
        )
    return found.kept, found.identical


_SIGNAL = {"resourceSpans": "traces", "resourceLogs": "logs"}
#: For the data key of each signal: the other's key and name, and where it belongs.
_OTHER_SIGNAL = {
    "resourceSpans": ("resourceLogs", "logs", "logs go to import's --logs, or collect's /v1/logs"),
    "resourceLogs": (
        "resourceSpans",
        "traces",
        "traces go to import's PATH, or collect's /v1/traces",
    ),
}


class _Path:
    """Shape checks that name the element (``resourceSpans[0].scopeSpans[0]``)."""

    def __init__(self, file: str | Path, line: int | None) -> None:
        self.file = file
        self.line = line

    def fail(self, where: str, reason: str) -> NoReturn:
        raise InputError(reason, file=self.file, line=self.line, field=where)

    def request(self, doc: Any, key: str) -> dict[str, Any]:
        """The top object of a request whose data is under ``key`` (``resourceSpans``
        or ``resourceLogs``); one of the other signal is named as such."""
        top = self.obj(doc, "(top level)")
        other, name, where = _OTHER_SIGNAL[key]
        if other in top and key not in top:
            self.fail(other, f"this is an OTLP {name} request, not {_SIGNAL[key]} ({where})")
        return top

    def items(self, obj: dict[str, Any], key: str, where: str) -> list[Any]:
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(f"{where}.{key}" if where else key, f"expected a list, got {_kind(value)}")
        return value

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def text(self, obj: dict[str, Any], key: str, where: str) -> str:
        value = obj.get(key, "")
        if not isinstance(value, str):
            self.fail(f"{where}.{key}", f"expected a string, got {_kind(value)}")
        return value

    def uint64(self, obj: dict[str, Any], key: str, where: str) -> int:
        # The JSON encoding writes 64-bit integers as decimal strings; numbers are allowed.
        value = obj.get(key, 0)
        if isinstance(value, str) and is_digits(value) and len(value) <= 20:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _UINT64_MAX:
            got = (
                f"a number past 64 bits (about {value:.6g})"  # orjson's float of a long literal
                if isinstance(value, float) and value.is_integer() and _past_64_bits(value)
                else _shown(value)
            )
            self.fail(f"{where}.{key}", f"expected an unsigned 64-bit integer, got {got}")
        return value

    def hex_id(
        self, obj: dict[str, Any], key: str, where: str, size: int, *, zeros: str = "refuse"
    ) -> str | None:
        """A hex id of ``size`` bytes, or ``None`` when absent or empty.

        Exactly ``2 * size`` hex digits: no ``0x``, sign, ``_`` or space, which
        ``int(text, 16)`` would take and no id written elsewhere would match. An id of
        all zeros is invalid (W3C Trace Context; opentelemetry-proto trace.proto):
        ``zeros="refuse"`` fails on it, ``"absent"`` reads it as no id (a root span's
        ``parentSpanId``, a log record outside any trace).

        OTLP JSON writes ids in hex, not in the base64 of protobuf's own JSON mapping;
        but a file made with that mapping (``MessageToJson``) is read too: the two
        cannot be mistaken, the base64 of 16 bytes being 24 characters, not 32."""
        value = obj.get(key, "")
        if value == "" or value is None:
            return None
        hexed: str | None = None
        if isinstance(value, str) and len(value) == _BASE64_LENGTH[size]:
            try:
                raw = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if len(raw) == size:
                hexed = raw.hex()
        if hexed is None:
            if not isinstance(value, str) or not _HEX_DIGITS[size].fullmatch(value):
                self.fail(f"{where}.{key}", f"expected {2 * size} hex digits, got {_shown(value)}")
            hexed = value.lower()
        if hexed.strip("0"):
            return hexed
        if zeros == "absent":
            return None
        self.fail(f"{where}.{key}", f"an id of all zeros is invalid (W3C Trace Context): {value!r}")

    def attributes(
        self, obj: dict[str, Any], where: str, *, list_key: str = "attributes", depth: int = 0
    ) -> dict[str, Any]:
        """``obj[list_key]``, a list of ``KeyValue``, as a dict; ``depth``: the levels of
        values it is inside (a ``kvlistValue``'s), so that nesting is bounded however
        it nests (`any_value`)."""
        out: dict[str, Any] = {}
        raws = obj.get(list_key)
        if raws is None:
            return out
        if type(raws) is not list:
            raws = self.items(obj, list_key, where)  # fails, naming it
        fast = depth < MAX_DEPTH
        for i, raw in enumerate(raws):
            # Most attributes are one string, boolean, small integer, double or list of
            # strings: taken without the general walk, which formats an element path per
            # value. Anything else (or anything wrong) takes the walk, which says what.
            # (Not at the last level a value may be at: the walk refuses one below it.)
            if fast and type(raw) is dict:
                key = raw.get("key")
                value = raw.get("value")
                if type(key) is str and type(value) is dict and len(value) == 1:
                    v = value.get("stringValue")
                    if type(v) is str:  # the usual value: one lookup
                        out[key] = v
                        continue
                    [(tag, v)] = value.items()
                    kind = type(v)
                    if kind is str:
                        # At most 18 ASCII digits: within 64 bits, and read as int() reads it.
                        if tag == "intValue" and len(v) <= 18 and v.isdigit() and v.isascii():
                            out[key] = int(v)
                            continue
                    elif kind is bool:
                        if tag == "boolValue":
                            out[key] = v
                            continue
                    elif kind is float:
                        if tag == "doubleValue":
                            out[key] = v
                            continue
                    elif kind is dict and tag == "arrayValue":
                        strings = _strings(v.get("values"))
                        if strings is not None:
                            out[key] = strings
                            continue
            at = f"{where}.{list_key}[{i}]"
            kv = self.obj(raw, at)
            name = kv.get("key")
            if not isinstance(name, str):
                self.fail(f"{at}.key", f"expected a string, got {_kind(name)}")
            out[name] = self.any_value(kv.get("value"), f"{at}.value", depth + 1)
        return out

    def any_value(self, raw: Any, where: str, depth: int) -> Any:
        """An ``AnyValue`` object as a Python value (``None`` for an empty one)."""
        if raw is None:
            return None
        if depth > MAX_DEPTH:
            self.fail(where, f"nested too deeply: more than {MAX_DEPTH} levels of values")
        value = self.obj(raw, where)
        if "stringValue" in value:
            s = value["stringValue"]
            if not isinstance(s, str):
                self.fail(f"{where}.stringValue", f"expected a string, got {_kind(s)}")
            return s
        if "boolValue" in value:
            b = value["boolValue"]
            if not isinstance(b, bool):
                self.fail(f"{where}.boolValue", f"expected true or false, got {_shown(b)}")
            return b
        if "intValue" in value:
            n = value["intValue"]
            if isinstance(n, str):
                try:
                    n = int(n) if len(n) <= 20 else None
                except ValueError:
                    n = None
            if (
                isinstance(n, bool)
                or not isinstance(n, int)
                or not -INT64_MAX - 1 <= n <= INT64_MAX
            ):
                raw_n = value["intValue"]
                if isinstance(raw_n, float) and raw_n.is_integer() and _past_64_bits(raw_n):
                    # orjson reads an integer literal past 64 bits as a float: the file
                    # holds an integer the user wrote, not the float shown otherwise.
                    self.fail(
                        f"{where}.intValue",
                        f"expected a 64-bit integer, got a number past 64 bits (about {raw_n:.6g})",
                    )
                self.fail(f"{where}.intValue", f"expected a 64-bit integer, got {_shown(value)}")
            return n
        if "doubleValue" in value:
            d = value["doubleValue"]
            if isinstance(d, bool) or not isinstance(d, int | float):
                # The JSON encoding spells non-finite doubles "NaN"/"Infinity": not a measure.
                self.fail(f"{where}.doubleValue", f"expected a finite number, got {_shown(d)}")
            return float(d)
        if "arrayValue" in value:
            arr = self.obj(value["arrayValue"], f"{where}.arrayValue")
            return [
                self.any_value(v, f"{where}.arrayValue.values[{i}]", depth + 1)
                for i, v in enumerate(self.items(arr, "values", f"{where}.arrayValue"))
            ]
        if "kvlistValue" in value:
            kvl = self.obj(value["kvlistValue"], f"{where}.kvlistValue")
            # Its values one level deeper, as an arrayValue's are (each level was
            # counted from 1 again, and a kvlist nested past any bound was read).
            return self.attributes(kvl, f"{where}.kvlistValue", list_key="values", depth=depth)
        if "bytesValue" in value:
            raw_b = value["bytesValue"]
            # Kept as its base64 text: transcripts and the store hold JSON, not bytes.
            if not isinstance(raw_b, str) or not _is_base64(raw_b):
                self.fail(f"{where}.bytesValue", "expected base64 text")
            return raw_b
        return None


def _strings(values: Any) -> list[str] | None:
    """An ``arrayValue``'s values when all are strings, else ``None``."""
    if type(values) is not list:
        return None
    out = []
    for item in values:
        text = item.get("stringValue") if type(item) is dict and len(item) == 1 else None
        if type(text) is not str:
            return None
        out.append(text)
    return out


#: Characters of the base64 text of an id of 16 (trace) or 8 (span) bytes.
_BASE64_LENGTH = {16: 24, 8: 12}
#: An id of 16 (trace) or 8 (span) bytes in hex: those digits and nothing else.
_HEX_DIGITS = {size: re.compile(f"[0-9a-fA-F]{{{2 * size}}}") for size in (16, 8)}


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


def _past_64_bits(x: float) -> bool:
    """Whether ``x`` is what orjson makes of an integer literal that fits in no 64-bit
    integer (it reads those as floats, and every other integer as an int)."""
    return x >= 2**64 or x < -(2**63)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def spans_from_json(doc: Any, *, file: str | Path, line: int | None = None) -> list[Span]:
    """The spans of one OTLP JSON ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``)."""
    check = _Path(file, line)
    place = f"{file}:{line}" if line is not None else str(file)
    top = check.request(doc, "resourceSpans")
    out: list[Span] = []
    for i, raw_rs in enumerate(check.items(top, "resourceSpans", "")):
        rs_at = f"resourceSpans[{i}]"
        rs = check.obj(raw_rs, rs_at)
        raw_res = rs.get("resource")
        resource = (
            check.attributes(check.obj(raw_res, f"{rs_at}.resource"), f"{rs_at}.resource")
            if raw_res is not None
            else {}
        )
        for j, raw_ss in enumerate(check.items(rs, "scopeSpans", rs_at)):
            ss_at = f"{rs_at}.scopeSpans[{j}]"
            ss = check.obj(raw_ss, ss_at)
            for k, raw_span in enumerate(check.items(ss, "spans", ss_at)):
                at = f"{ss_at}.spans[{k}]"
                if type(raw_span) is not dict:
                    check.obj(raw_span, at)  # fails, naming it
                out.append(_json_span(check, raw_span, at, resource, place))
    return out


def _json_span(
    check: _Path, span: dict[str, Any], at: str, resource: dict[str, Any], place: str
) -> Span:
    # The usual span, written as the encoding says, is read with a few type checks per
    # field (`_hex`, `_nanos`); anything else takes the `_Path` checks, which say what
    # is wrong and where.
    trace_id = _hex(span.get("traceId"), 32) or check.hex_id(span, "traceId", at, 16)
    span_id = _hex(span.get("spanId"), 16) or check.hex_id(span, "spanId", at, 8)
    if trace_id is None or span_id is None:
        check.fail(f"{at}.{'traceId' if trace_id is None else 'spanId'}", "required id is missing")
    events = []
    raw_events = span.get("events")
    if raw_events:
        for e, raw_ev in enumerate(check.items(span, "events", at)):
            ev_at = f"{at}.events[{e}]"
            ev = check.obj(raw_ev, ev_at)
            events.append(
                SpanEvent(
                    name=check.text(ev, "name", ev_at),
                    time_ns=check.uint64(ev, "timeUnixNano", ev_at),
                    attributes=check.attributes(ev, ev_at),
                )
            )
    elif raw_events is not None and type(raw_events) is not list:
        check.items(span, "events", at)  # fails, naming it
    error = None
    raw_status = span.get("status")
    if raw_status:  # an empty object is status UNSET
        status = check.obj(raw_status, f"{at}.status")
        code = status.get("code", 0)
        code = _STATUS_NAMES.get(code, code) if isinstance(code, str) else code
        if isinstance(code, bool) or not isinstance(code, int):
            check.fail(f"{at}.status.code", f"expected a status code, got {_shown(code)}")
        if code == _STATUS_ERROR:
            error = check.text(status, "message", f"{at}.status") or "error"
    elif raw_status is not None and type(raw_status) is not dict:
        check.obj(raw_status, f"{at}.status")  # fails, naming it
    start = _nanos(span.get("startTimeUnixNano"))
    if start is None:
        start = check.uint64(span, "startTimeUnixNano", at)
    end = _nanos(span.get("endTimeUnixNano"))
    if end is None:
        end = check.uint64(span, "endTimeUnixNano", at)
    # (Each field checked in the order the spans were always checked in, so that a
    # span with several faults is refused for the same one.)
    parent = span.get("parentSpanId")
    parent_id = _hex(parent, 16)
    if parent_id is None and parent is not None:
        # Empty, or all zeros: no parent (an SDK that writes the field for a root span).
        parent_id = check.hex_id(span, "parentSpanId", at, 8, zeros="absent")
    name = span.get("name", "")
    if type(name) is not str:
        name = check.text(span, "name", at)
    attrs = span.get("attributes")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        start_ns=start,
        end_ns=max(end, start),
        attributes=check.attributes(span, at) if attrs is not None else {},
        events=events,
        error=error,
        resource=resource,
        where=f"{place}: {at}",
        ended=duration_known(start, end),
    )


#: The characters of a hex id (`_hex`).
_HEX = "0123456789abcdefABCDEF"


def _hex(value: Any, digits: int) -> str | None:
    """``value`` as a lowercase hex id when it is ``digits`` hex digits and not all
    zeros, else ``None`` (which `_Path.hex_id` then reads, or refuses, saying why)."""
    if type(value) is str and len(value) == digits and not value.strip(_HEX):
        hexed = value.lower()
        if hexed.strip("0"):
            return hexed
    return None


def _nanos(value: Any) -> int | None:
    """A time in nanoseconds written as the encoding writes it (a decimal string of at
    most 19 ASCII digits, within 64 bits), else ``None`` (`_Path.uint64` reads it)."""
    if type(value) is str and len(value) <= 19 and value.isdigit() and value.isascii():
        return int(value)
    return None


def read_otlp_json_file(path: Path) -> list[Span]:
    """Every span of an OTLP JSON file, once: one request per line (the Collector's
    file exporter), or one request as the whole document (`read_otlp_spans`)."""
    return read_otlp_spans(path)[0]


def read_otlp_spans(path: Path) -> tuple[list[Span], int]:
    """The spans of an OTLP JSON file, each once, and how many repeats were skipped.

    A span is identified by ``(traceId, spanId)``: one written twice the same (a file
    concatenated twice, an exporter's retry that the file exporter kept) is read once;
    two spans with the same ids and different content are refused, naming both."""
    spans: list[Span] = []
    for doc, line in read_otlp_documents(path):
        spans.extend(spans_from_json(doc, file=path, line=line))
    return unique_spans(spans)


def read_otlp_documents(path: Path) -> Iterator[tuple[Any, int | None]]:
    """The parsed requests of an OTLP JSON file, each with its line (``None`` when the
    whole file is one document): traces and logs files are framed alike."""
    raw = read_bytes(path)
    first = _first_line(raw)
    if not first.strip():
        return  # an empty file, or blank lines only: no document (not a JSON error)
    try:
        # A file whose first line is a whole document holds one document per line
        # (a pretty-printed document's first line is "{").
        orjson.loads(first)
    except orjson.JSONDecodeError:
        try:
            whole = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if not _object_line(first):
                yield _parse(raw, path, None, 0), None  # raises, saying where and why
                return
            # A bad first line of a file of lines (a NaN in it, a number past a
            # double's range): its own error, on its line, as a later line's is.
        else:
            yield whole, None
            return
    offset = 0
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if line.strip():
            yield _parse(line, path, number, offset), number
        offset += len(line) + 1


def _first_line(raw: bytes) -> bytes:
    """The first line of ``raw`` that is not blank (empty when there is none): blank
    lines before the first document do not make a file of lines one document."""
    start = 0
    while True:
        end = raw.find(b"\n", start)
        line = raw[start:] if end < 0 else raw[start:end]
        if line.strip() or end < 0:
            return line
        start = end + 1


def _object_line(line: bytes) -> bool:
    """Whether ``line`` is one JSON object to a lenient reader: Python's, which takes
    what the strict one refuses (``NaN``, ``1e400``, half a surrogate pair), with bytes
    that are not UTF-8 let through. Such a first line that the strict reader refuses is a
    bad line of a file of lines, not the start of a document over many lines."""
    try:
        return isinstance(json.loads(line.decode("utf-8", "surrogateescape")), dict)
    except (ValueError, RecursionError):
        return False


def _parse(raw: bytes, path: Path, line: int | None, offset: int) -> Any:
    """orjson for speed; on any failure, the strict reader of `agentgauge.textio`
    says where and why (UTF-8, JSON syntax, depth), in the words every importer uses."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        text = decode_utf8(raw, file=path, line=line, offset=offset)
        loads_json(text, file=path, line=line)
        # What Python's reader takes and orjson does not: a number past a double's range
        # (1e400), or a string escape that is half a surrogate pair ("\ud800"), which
        # no protobuf string (valid UTF-8) can hold. (An integer past 64 bits orjson
        # reads as a float; the span's checks then refuse it, naming the field.)
        raise InputError(
            f"invalid JSON at column {exc.colno}: {exc.msg}", file=path, line=line
        ) from None


# --------------------------------------------------------------------------- protobuf


_M = TypeVar("_M", bound=Message)


def parse_protobuf(message: _M, body: bytes, *, source: str) -> _M:
    """``message`` read from ``body``; one `InputError` naming ``source`` if it is not one."""
    try:
        message.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        name = message.DESCRIPTOR.name
        raise InputError(f"not a valid protobuf {name} ({exc})", file=source) from None
    return message


def spans_from_protobuf(body: bytes, *, source: str) -> list[Span]:
    """The spans of a protobuf ``ExportTraceServiceRequest``; ``source`` names it in errors."""
    request = parse_protobuf(ExportTraceServiceRequest(), body, source=source)
    out: list[Span] = []
    for i, rs in enumerate(request.resource_spans):
        rs_at = f"resourceSpans[{i}]"
        resource = _pb_attributes(rs.resource.attributes, f"{rs_at}.resource", source)
        for j, ss in enumerate(rs.scope_spans):
            for k, span in enumerate(ss.spans):
                at = f"{rs_at}.scopeSpans[{j}].spans[{k}]"
                start, end = span.start_time_unix_nano, span.end_time_unix_nano
                ended = duration_known(start, end)
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    bad = "traceId" if len(span.trace_id) != 16 else "spanId"
                    raise InputError(
                        f"expected {16 if bad == 'traceId' else 8} bytes",
                        file=source,
                        field=f"{at}.{bad}",
                    )
                if not any(span.trace_id) or not any(span.span_id):
                    raise InputError(
                        "an id of all zeros is invalid (W3C Trace Context)",
                        file=source,
                        field=f"{at}.{'traceId' if not any(span.trace_id) else 'spanId'}",
                    )
                if span.parent_span_id and len(span.parent_span_id) != 8:
                    raise InputError("expected 8 bytes", file=source, field=f"{at}.parentSpanId")
                out.append(
                    Span(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        # All zeros: no parent, as an empty field.
                        parent_id=span.parent_span_id.hex() if any(span.parent_span_id) else None,
                        name=span.name,
                        start_ns=start,
                        end_ns=max(end, start),
                        attributes=_pb_attributes(span.attributes, at, source),
                        events=[
                            SpanEvent(
                                ev.name,
                                ev.time_unix_nano,
                                _pb_attributes(ev.attributes, f"{at}.events[{e}]", source),
                            )
                            for e, ev in enumerate(span.events)
                        ],
                        error=(span.status.message or "error")
                        if span.status.code == _STATUS_ERROR
                        else None,
                        resource=resource,
                        where=f"{source}: {at}",
                        ended=ended,
                    )
                )
    return out


def _pb_attributes(kvs: Any, where: str, source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        value = kv.value
        # Most attributes are a string or a small scalar: read without the general
        # walk, which formats an element path for every value it reads.
        which = value.WhichOneof("value")
        if which == "string_value":
            out[kv.key] = value.string_value
        elif which == "int_value":
            out[kv.key] = value.int_value
        elif which == "bool_value":
            out[kv.key] = value.bool_value
        else:
            out[kv.key] = _pb_value(value, f"{where}.attributes[{kv.key}]", source, 1)
    return out


def _pb_value(value: AnyValue, where: str, source: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise InputError(
            f"nested too deeply: more than {MAX_DEPTH} levels of values", file=source, field=where
        )
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_pb_value(v, where, source, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        items: list[KeyValue] = list(value.kvlist_value.values)
        return {kv.key: _pb_value(kv.value, where, source, depth + 1) for kv in items}
    if which == "double_value" and not _finite(value.double_value):
        raise InputError("expected a finite number", file=source, field=where)
    if which == "bytes_value":  # as the JSON encoding has it: base64 text
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None if which is None else getattr(value, which)


def _finite(x: float) -> bool:
    return x - x == 0.0
