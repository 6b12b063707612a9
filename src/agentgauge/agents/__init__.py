"""agentgauge.agents: adapters that turn a function, an endpoint or a program into an agent."""

from agentgauge.agents.base import Agent, AgentError, Session, TransientError
from agentgauge.agents.resolve import resolve_agent

__all__ = ["Agent", "AgentError", "Session", "TransientError", "resolve_agent"]
