from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from agentgauge.agents import resolve_agent
from agentgauge.agents.callable import CallableAgent, is_async_callable
from agentgauge.agents.cmd import CommandAgent
from agentgauge.agents.openai import OpenAIAgent
from agentgauge.errors import InputError


async def async_agent(session: Any) -> None:
    pass


def sync_agent(session: Any) -> None:
    pass


class AsyncCallable:
    async def __call__(self, session: Any) -> None:
        pass


def test_specs_map_to_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    a = resolve_agent("openai:gpt-4o-mini", base_url="http://127.0.0.1:1/v1")
    assert isinstance(a, OpenAIAgent)
    assert (a.name, a.model, a.base_url) == (
        "openai:gpt-4o-mini",
        "gpt-4o-mini",
        "http://127.0.0.1:1/v1",
    )
    assert a.prices.lookup("gpt-4o-mini") is not None
    c = resolve_agent("cmd:python -u 'my agent.py' --fast")
    assert isinstance(c, CommandAgent)
    assert c.argv == ["python", "-u", "my agent.py", "--fast"] and c.model is None
    f = resolve_agent(sync_agent)
    assert isinstance(f, CallableAgent) and not f.is_async
    assert f.name == f"python:{__name__}.sync_agent"
    mod = types.ModuleType("fake_agents_mod")
    mod.agent = async_agent  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_agents_mod", mod)
    m = resolve_agent("fake_agents_mod:agent")
    assert isinstance(m, CallableAgent) and m.is_async and m.name == "fake_agents_mod:agent"
    assert resolve_agent(a) is a  # an agent object passes through


def test_async_detection() -> None:
    import functools

    assert is_async_callable(async_agent)
    assert is_async_callable(functools.partial(async_agent))
    assert is_async_callable(AsyncCallable())
    assert not is_async_callable(sync_agent)
    assert not is_async_callable(lambda s: None)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("gpt-4o", "not one of openai:MODEL"),
        ("no_such_module_xyz:agent", "cannot import 'no_such_module_xyz'"),
        ("agentgauge.testing.worlds:nothing_here", "has no attribute 'nothing_here'"),
        ("agentgauge.testing.worlds:COUNTER_POLICY", "is not callable"),
    ],
)
def test_bad_specs_are_input_errors(spec: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        resolve_agent(spec)


def test_unknown_adapter_option_is_an_input_error() -> None:
    with pytest.raises(InputError, match="bad option for openai"):
        resolve_agent("openai:m", temperature_typo=1)
