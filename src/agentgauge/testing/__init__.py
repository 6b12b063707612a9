"""Test support that ships with agentgauge: a loopback OpenAI-compatible server,
worlds, the pytest eval, and BFCL's single-turn data (`agentgauge.testing.bfcl`)."""
