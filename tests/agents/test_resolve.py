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
from agentgauge.schema import Task


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
    # priced from genai-prices' snapshot (was: the hand-written table): 1e6 · $0.15 / 1e6
    assert a.prices.cost(("gpt-4o-mini",), 1_000_000, 0) == pytest.approx(0.15)
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


def test_a_module_beside_the_user_is_found_without_pythonpath(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The `agentgauge` script does not put the current folder on the import path.
    (tmp_path / "agent_in_cwd_xyz.py").write_text("def fn(session):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "agent_in_cwd_xyz", raising=False)
    agent = resolve_agent("agent_in_cwd_xyz:fn")
    assert isinstance(agent, CallableAgent)


def test_a_missing_module_says_where_it_was_looked_for(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(InputError, match=r"current folder .*PYTHONPATH"):
        resolve_agent("no_such_agent_module_xyz:fn")


def test_an_import_error_inside_the_module_is_reported_as_it_is(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_agent_xyz.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    with pytest.raises(InputError, match="no_such_dependency_xyz") as info:
        resolve_agent("broken_agent_xyz:fn")
    assert "current folder" not in str(info.value)


def test_a_misspelt_adapter_prefix_gets_a_suggestion() -> None:
    with pytest.raises(InputError, match=r"did you mean builtin:oracle\?"):
        resolve_agent("buitin:oracle")


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("import no_such_dependency_xyz\n", "No module named 'no_such_dependency_xyz' "
         "(raising_agent_xyz.py, line 1)"),
        ("\n\nraise RuntimeError('no key configured')\n", "RuntimeError: no key configured "
         "(raising_agent_xyz.py, line 3)"),
        ("def f(session:\n", "SyntaxError: '(' was never closed (raising_agent_xyz.py, line 1)"),
    ],
)  # fmt: skip
def test_a_module_that_fails_to_import_says_why_and_where(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, source: str, said: str
) -> None:
    (tmp_path / "raising_agent_xyz.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "raising_agent_xyz", raising=False)
    with pytest.raises(InputError) as info:
        resolve_agent("raising_agent_xyz:fn")
    assert str(info.value).endswith(f"for agent 'raising_agent_xyz:fn': {said}")


@pytest.mark.parametrize("raised", ["KeyboardInterrupt()", "SystemExit(3)"])
def test_ctrl_c_and_exit_at_import_are_not_taken_for_bad_input(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, raised: str
) -> None:
    (tmp_path / "exiting_agent_xyz.py").write_text(f"raise {raised}\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "exiting_agent_xyz", raising=False)
    with pytest.raises((KeyboardInterrupt, SystemExit)):
        resolve_agent("exiting_agent_xyz:fn")


def test_a_callable_that_returns_a_generator_fails_its_trials_saying_so(tmp_path: Any) -> None:
    # A lambda hides that it makes a generator; its trials were "completed", no error.
    from agentgauge.harness.runner import run
    from agentgauge.store import Store
    from agentgauge.testing.worlds import make_counter_env

    def gen(session: Any) -> Any:
        yield session.say("hello")

    header = run(
        [Task(id="t", instruction="please add 1", expectations={"final_state": {"counter": 1}})],
        lambda session: gen(session),
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        progress=False,
    )
    with Store(tmp_path / "s.db") as db:
        (trial,) = db.trials(header.run_id)
    assert (trial.status, trial.error_kind) == ("error", "agent")
    assert "returned a generator, so none of its body ran" in (trial.error or "")
