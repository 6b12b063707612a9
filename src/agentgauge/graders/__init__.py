"""agentgauge.graders."""
