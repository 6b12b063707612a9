"""``agentgauge metrics SOURCE``: outcome, pass^k, cost and latency per group."""

from __future__ import annotations

from agentgauge.cli import app  # noqa: F401  (the metrics command is added in issue 2's metrics work)
