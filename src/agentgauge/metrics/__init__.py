"""agentgauge.metrics."""
