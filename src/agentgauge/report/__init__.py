"""agentgauge.report."""
