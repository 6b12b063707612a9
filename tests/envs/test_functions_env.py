"""The single-turn function-calling environment."""

from __future__ import annotations

from agentgauge.envs.functions import FunctionsEnv
from agentgauge.schema import Expectations, Task

FN = {"name": "get_weather", "parameters": {"type": "object", "properties": {}, "required": []}}


def test_functions_env() -> None:
    task = Task(id="f", instruction="weather?", paraphrases=["p1"],
                expectations=Expectations(functions=[FN], call_category="simple"))  # fmt: skip
    env = FunctionsEnv(task)
    assert env.tools == [{"type": "function", "function": FN}]
    assert env.first_message() == "weather?"
    assert FunctionsEnv(task, paraphrase=1).first_message() == "p1"
    b = env.call_tool("get_weather", {"city": "B"})
    assert not b.is_error and b.content == {"status": "ok", "function": "get_weather"}
    env.call_tool("get_weather", {"city": "A"})
    assert env.call_tool("send_email", {}).is_error
    assert env.user_reply("anything?") is None
    # Calls sorted canonically: parallel calls are order-free.
    assert env.final_state() == {
        "calls": [
            {"name": "get_weather", "arguments": {"city": "A"}},
            {"name": "get_weather", "arguments": {"city": "B"}},
        ]
    }
