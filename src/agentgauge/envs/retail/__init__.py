"""The built-in customer-service world: orders, returns, exchanges, refunds and
account changes on SQLite, with a written policy and a scripted user."""

from agentgauge.envs.builtin import BuiltinEnvironment
from agentgauge.envs.retail.agent import play
from agentgauge.envs.retail.db import STATE_SHAPE, template
from agentgauge.envs.retail.env import RetailEnv, policy_text
from agentgauge.envs.retail.expected import complete
from agentgauge.envs.retail.tools import IRREVERSIBLE, TOOLS
from agentgauge.envs.retail.user import Scenario
from agentgauge.schema import Task

__all__ = ["ENVIRONMENT", "IRREVERSIBLE", "TOOLS", "RetailEnv", "policy_text"]


def check_initial_state(task: Task) -> None:
    """Build the task's initial database once (cached for its trials): a bad table,
    column or row raises `ValueError` when the suite loads, not in every trial."""
    template(task.initial_state)


def with_reference_answer(task: Task) -> Task:
    """``task`` completed (`complete`), with ``expectations.reference_answer`` taken from
    ``metadata.reference_answer`` when only the metadata has one.

    The built-in tasks keep their reference answer in ``metadata``, where the
    reference agents read it; graders read only ``expectations``, whose keys are
    checked (a misspelt metadata key would silently disable ``response_match``).
    """
    task = complete(task)
    exp, answer = task.expectations, task.metadata.get("reference_answer")
    if exp.reference_answer is not None or not isinstance(answer, str):
        return task
    update = {"expectations": exp.model_copy(update={"reference_answer": answer})}
    return task.model_copy(update=update)


ENVIRONMENT = BuiltinEnvironment(
    name="retail",
    make=lambda task, seed, paraphrase: RetailEnv(task, seed=seed, paraphrase=paraphrase),
    play=play,
    fingerprint=policy_text,
    complete=with_reference_answer,
    scenario=Scenario,
    check_state=check_initial_state,
    state_shape=STATE_SHAPE,
    tools=lambda task: [tool["function"] for tool in TOOLS],
)
