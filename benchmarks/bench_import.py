"""Trace import speed: OTLP JSON files in MB/s, and the receiver in spans/s.

Goal: ``import otel`` reads an OTLP JSON file at >= 50 MB/s. The file is the
SDK-made fixture (tests/fixtures/otel/genai.jsonl: an agent, its chat and tool
spans with their messages) copied under new trace ids to ``--mb`` megabytes,
one request per line as the Collector's file exporter writes it. Measured side
by side, best of ``--repeat``:

- ``orjson.loads`` of every line: the parser alone, the floor for any reader;
- ``read_import``: parse, check, and build the trials (what ``import`` does
  before it opens the store);
- ``import_file``: the same and writing the run to a new SQLite store.

The fixture's messages are a few words each, so the file is mostly span structure
(ids, times, attribute keys), the costliest bytes to read. A second file holds the
same traces with a 2,000-character system prompt on every model call, as agents'
instructions are: its MB/s is what a file of such traces imports at.

The receiver (``agentgauge collect``, a subprocess) is sent the same traces as
protobuf ``ExportTraceServiceRequest`` batches of 512 spans, as the SDK's batch
exporter sends them, over one keep-alive connection; spans/s counts until the
last response, each of which comes only after its trials are committed.

Run: ``python benchmarks/bench_import.py [--mb 40] [--repeat 3] [--smoke]`` (``--smoke``:
1 MB, one run, 200 traces to the receiver).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from _report import Row, emit, row, smoke_flag
from agentgauge.importers import import_file, read_import

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "otel" / "genai.jsonl"
MB = 1e6
NAME = "bench_import"


def _traces() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def _with_trace_id(doc: dict[str, Any], trace_id: str) -> dict[str, Any]:
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                span["traceId"] = trace_id
                # Copies are numbered by order of appearance, not by the fixture's index.
                span["attributes"] = [
                    a for a in span.get("attributes", []) if a["key"] != "agentgauge.trial"
                ]
    return doc


#: The system prompt of the "realistic content" file: agents' instructions run to a few
#: kilobytes (tau-bench's airline policy is about 15 KB); 2,000 characters here.
PROMPT = ("Answer weather questions for the user's city; call get_weather once per city. " * 26)[
    :2000
]


def _with_prompt(doc: dict[str, Any], prompt: str) -> dict[str, Any]:
    """``doc`` with every model call's system message replaced by ``prompt`` (GenAI
    instrumentation records a call's whole input, so each chat span carries it)."""
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for a in span.get("attributes", []):
                    if a["key"] == "gen_ai.input.messages":
                        messages = json.loads(a["value"]["stringValue"])
                        for m in messages:
                            if m["role"] == "system":
                                m["parts"] = [{"type": "text", "content": prompt}]
                        a["value"]["stringValue"] = json.dumps(messages)
    return doc


def _copies(n_bytes: float, prompt: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """Copies of the fixture's traces, each with its own trace id, up to ``n_bytes``
    (with ``prompt`` as every model call's system message when given)."""
    docs, size, i = [], 0, 0
    base = _traces()
    if prompt is not None:
        base = [_with_prompt(doc, prompt) for doc in base]
    while size < n_bytes:
        doc = _with_trace_id(json.loads(json.dumps(base[i % len(base)])), f"{i + 1:032x}")
        size += len(json.dumps(doc, separators=(",", ":"))) + 1
        docs.append(doc)
        i += 1
    spans = sum(
        len(ss["spans"]) for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"]
    )
    return docs, spans


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds of ``repeat`` runs. On a shared machine the
    CPU time is the steadier figure: wall time includes waiting for a core."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return min(walls), min(cpus)


def _write_lines(path: Path, docs: list[dict[str, Any]]) -> None:
    with path.open("w") as fh:
        for doc in docs:
            fh.write(json.dumps(doc, separators=(",", ":")) + "\n")


def bench_content(folder: Path, mb: float, repeat: int) -> Row:
    """The same traces with a 2,000-character system prompt, as agents' prompts are:
    more of each file is message text, which costs less per byte than span structure."""
    docs, n_spans = _copies(mb * MB, PROMPT)
    path = folder / "content.jsonl"
    _write_lines(path, docs)
    size = path.stat().st_size
    options = {"suite": str(FIXTURE.parent / "suite.yaml")}
    stores = iter(range(10_000))
    wall, cpu = _best(
        lambda: import_file("otel", path, folder / f"c{next(stores)}.db", "r", options), repeat
    )
    print(
        f"with a {len(PROMPT):,}-character system prompt: {size / MB:.1f} MB, {len(docs):,} "
        f"traces, {n_spans:,} spans; import_file {wall:.3f} s wall ({size / MB / wall:.1f} "
        f"MB/s), {cpu:.3f} s CPU ({size / MB / cpu:.1f} MB/s)"
    )
    return row(
        NAME,
        f"import otel, {size / MB:.0f} MB with a 2 KB system prompt per model call",
        size / MB / wall,
        "MB/s",
        higher_is_better=True,
    )


def bench_file(folder: Path, mb: float, repeat: int, judged: bool = True) -> list[Row]:
    docs, n_spans = _copies(mb * MB)
    path = folder / "traces.jsonl"
    _write_lines(path, docs)
    size = path.stat().st_size
    options = {"suite": str(FIXTURE.parent / "suite.yaml")}
    raw = path.read_bytes()

    def parse_only() -> None:
        for line in raw.splitlines():
            orjson.loads(line)

    def parse_stdlib() -> None:
        for line in raw.splitlines():
            json.loads(line)

    stores = iter(range(10_000))
    rows = [
        ("orjson.loads per line (parser floor)", _best(parse_only, repeat)),
        ("json.loads per line (stdlib parser)", _best(parse_stdlib, repeat)),
        (
            "read_import otel (parse, check, trials)",
            _best(lambda: read_import("otel", path, options), repeat),
        ),
        (
            "import_file otel (... + new SQLite store)",
            _best(
                lambda: import_file("otel", path, folder / f"s{next(stores)}.db", "r", options),
                repeat,
            ),
        ),
    ]
    print(f"OTLP JSON file: {size / MB:.1f} MB, {len(docs):,} traces, {n_spans:,} spans")
    floor = rows[0][1][1]
    print(f"  {'':<44} {'wall':>8} {'MB/s':>7}   {'CPU':>7} {'MB/s':>7} {'spans/s':>9}")
    for name, (wall, cpu) in rows:
        print(
            f"  {name:<44} {wall:7.3f}s {size / MB / wall:7.1f}   {cpu:6.3f}s "
            f"{size / MB / cpu:7.1f} {n_spans / cpu:9,.0f}  x{cpu / floor:5.1f} the parser (CPU)"
        )
    (_, (floor_wall, _)), (_, (stdlib_wall, _)), (_, (read_wall, _)), (_, (wall, _)) = rows
    figure = f"import otel, OTLP JSON file of {size / MB:.0f} MB into a new store"
    rate = size / MB / wall
    return [
        row(
            NAME,
            figure,
            rate,
            "MB/s",
            reference=size / MB / floor_wall,
            reference_name="orjson.loads of every line, the parser alone",
            higher_is_better=True,
            goal="≥ 50 MB/s",
            met=rate >= 50 if judged else None,
        ),
        row(
            NAME,
            f"read_import otel, {size / MB:.0f} MB: parse, check, trials",
            size / MB / read_wall,
            "MB/s",
            reference=size / MB / stdlib_wall,
            reference_name="json.loads of every line, stdlib parser alone",
            higher_is_better=True,
        ),
    ]


def _protobuf_batches(docs: list[dict[str, Any]], batch: int = 512) -> tuple[list[bytes], int]:
    spans: list[Any] = []
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                spans.extend(ss["spans"])
    bodies = []
    for start in range(0, len(spans), batch):
        chunk = json.loads(json.dumps(spans[start : start + batch]))
        for span in chunk:  # protobuf's JSON form spells bytes in base64, OTLP JSON in hex
            for key in ("traceId", "spanId", "parentSpanId"):
                if span.get(key):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        req = json_format.ParseDict(
            {"resourceSpans": [{"scopeSpans": [{"spans": chunk}]}]}, ExportTraceServiceRequest()
        )
        bodies.append(req.SerializeToString())
    return bodies, len(spans)


def bench_receiver(folder: Path, n_traces: int) -> Row:
    base = _traces()
    docs = [
        _with_trace_id(json.loads(json.dumps(base[i % len(base)])), f"{i + 1:032x}")
        for i in range(n_traces)
    ]
    bodies, n_spans = _protobuf_batches(docs)
    cpu_before = _cpu(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "collect",
            "--port",
            "0",
            "--store",
            str(folder / "live.db"),
            "--run-id",
            "live",
            "--suite",
            str(FIXTURE.parent / "suite.yaml"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[2]
    port = int(url.split(":")[2].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port)
    start = time.perf_counter()
    for body in bodies:
        conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
    seconds = time.perf_counter() - start
    conn.close()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    cpu = _cpu(resource.RUSAGE_CHILDREN) - cpu_before  # the receiver's, start-up included
    print(
        f"receiver: {n_spans:,} spans ({n_traces:,} traces) in {len(bodies)} protobuf requests: "
        f"{seconds:.2f} s wall, {n_spans / seconds:,.0f} spans/s, {n_traces / seconds:,.0f} "
        f"trials/s; receiver CPU {cpu:.2f} s, {n_spans / cpu:,.0f} spans per CPU-second"
    )
    print(f"  collect said: {out.strip().splitlines()[-1]}")
    return row(
        NAME,
        f"agentgauge collect, {n_spans:,} spans as OTLP protobuf batches of 512",
        n_spans / seconds,
        "spans/s",
    )


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_flag(parser)
    parser.add_argument("--mb", type=float, default=40.0, help="size of the generated file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--traces", type=int, default=20_000, help="traces sent to the receiver")
    args = parser.parse_args(argv)
    if args.smoke:
        args.mb, args.repeat, args.traces = 1.0, 1, 200
    with tempfile.TemporaryDirectory() as tmp:
        rows = bench_file(Path(tmp), args.mb, args.repeat, judged=not args.smoke)
        rows.append(bench_content(Path(tmp), args.mb, args.repeat))
        rows.append(bench_receiver(Path(tmp), args.traces))
    return rows


if __name__ == "__main__":
    emit(main())
