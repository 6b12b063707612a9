"""OpenInference traces in OTLP JSON (``agentgauge import openinference PATH``).

OpenInference (Arize-ai/openinference) marks spans with
``openinference.span.kind`` (AGENT, LLM, TOOL, CHAIN...) and flattens messages
into ``llm.input_messages.N.message.*`` attributes. Only the key table differs
from the GenAI reader (`agentgauge.importers.dialects`); the file encoding and
the mapping to trials are the same (docs/formats/openinference.md).
"""

from __future__ import annotations

from pathlib import Path

from agentgauge.importers import ImportedRun, register
from agentgauge.importers.dialects import OPENINFERENCE
from agentgauge.importers.otel import read_spans_file

__all__ = ["read"]


@register("openinference", options=True)
def read(path: Path, **options: str | None) -> ImportedRun:
    """OpenInference spans (OTLP JSON) -> trials."""
    return read_spans_file(path, OPENINFERENCE, **options)
