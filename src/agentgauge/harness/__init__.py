"""agentgauge.harness."""
