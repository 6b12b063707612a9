"""``agentgauge collect``: receive OTLP/HTTP traces live and store each as a trial
(docs/formats/otel.md, "Receiving traces live")."""

from __future__ import annotations

from agentgauge.collect.buffer import Accepted, TraceBuffer
from agentgauge.collect.server import MAX_BODY_BYTES, Receiver, collect

__all__ = ["MAX_BODY_BYTES", "Accepted", "Receiver", "TraceBuffer", "collect"]
