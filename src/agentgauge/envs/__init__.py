"""agentgauge.envs."""
