"""`opening_message`: the first user message both built-in environments start from."""

from __future__ import annotations

import pytest

from agentgauge.envs.base import opening_message
from agentgauge.envs.functions.env import FunctionsEnv
from agentgauge.schema import Task

TASK = Task(id="t", instruction="add one", paraphrases=["plus one", "one more"])


def test_instruction_or_one_based_paraphrase() -> None:
    assert opening_message(TASK) == "add one"
    assert opening_message(TASK, 1) == "plus one"
    assert opening_message(TASK, 2) == "one more"
    assert FunctionsEnv(TASK, paraphrase=2).first_message() == "one more"


@pytest.mark.parametrize("n", [0, 3, -1])
def test_missing_paraphrase_is_an_error(n: int) -> None:
    with pytest.raises(ValueError, match=f"has 2 paraphrases; paraphrase:{n} does not exist"):
        opening_message(TASK, n)
