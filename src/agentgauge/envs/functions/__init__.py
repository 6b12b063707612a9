"""Single-turn function calling (BFCL form): simple, multiple, parallel, irrelevance."""

from agentgauge.envs.functions.env import FunctionsEnv

__all__ = ["FunctionsEnv"]
