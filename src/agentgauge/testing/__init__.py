"""Test support that ships with agentgauge: a loopback OpenAI-compatible server."""
