"""agentgauge.stats."""
