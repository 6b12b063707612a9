"""The built-in customer-service world (SPEC 8): orders, returns, exchanges,
refunds and account changes on SQLite, with a written policy and a scripted user."""

from agentgauge.envs.retail.env import RetailEnv, policy_text
from agentgauge.envs.retail.tools import IRREVERSIBLE, TOOLS

__all__ = ["IRREVERSIBLE", "TOOLS", "RetailEnv", "policy_text"]
