"""Single-turn function calling (BFCL form): simple, multiple, parallel, irrelevance."""

from agentgauge.envs.builtin import BuiltinEnvironment
from agentgauge.envs.functions.agent import play
from agentgauge.envs.functions.env import FunctionsEnv

__all__ = ["ENVIRONMENT", "FunctionsEnv"]

ENVIRONMENT = BuiltinEnvironment(
    name="functions",
    make=lambda task, seed, paraphrase: FunctionsEnv(task, paraphrase=paraphrase),
    play=play,
    # The calls made (`FunctionsEnv.final_state`).
    state_shape={"calls": None},
    tools=lambda task: task.expectations.functions,
)
