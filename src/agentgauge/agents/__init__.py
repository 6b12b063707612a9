"""agentgauge.agents."""
