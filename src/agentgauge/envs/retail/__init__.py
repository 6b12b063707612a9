"""The built-in customer-service world: orders, returns, exchanges, refunds and
account changes on SQLite, with a written policy and a scripted user."""

from agentgauge.envs.builtin import BuiltinEnvironment
from agentgauge.envs.retail.agent import play
from agentgauge.envs.retail.env import RetailEnv, policy_text
from agentgauge.envs.retail.expected import complete
from agentgauge.envs.retail.tools import IRREVERSIBLE, TOOLS

__all__ = ["ENVIRONMENT", "IRREVERSIBLE", "TOOLS", "RetailEnv", "policy_text"]

ENVIRONMENT = BuiltinEnvironment(
    name="retail",
    make=lambda task, seed, paraphrase: RetailEnv(task, seed=seed, paraphrase=paraphrase),
    play=play,
    fingerprint=policy_text,
    complete=complete,
)
