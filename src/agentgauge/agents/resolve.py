"""`resolve_agent`: turn an agent spec (a string or a Python callable) into an `Agent`.

Specs:

- ``openai:MODEL`` -> `OpenAIAgent` (options: ``base_url``, ``api_key_env``,
  ``prices``, ``retry``, ``params``...);
- ``cmd:PROGRAM ARGS`` -> `CommandAgent` (the rest of the string is split like a
  shell would, without running one);
- ``http:URL`` -> `HttpAgent`, a black-box agent service; URL is absolute
  (``http:http://127.0.0.1:8000/run``, ``http:https://agents.example.com/run``);
- ``builtin:NAME`` -> a simulated reference agent
  (`agentgauge.envs.reference_agents.reference_agent`, given the suite's tasks,
  whose reference plans it follows);
- ``package.module:function`` -> that function, wrapped as a callable agent;
- a Python callable (sync or async) -> `CallableAgent`; an object that already
  has ``name`` and ``model`` attributes and is callable is used as it is.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentgauge.agents.base import Agent
from agentgauge.agents.callable import CallableAgent
from agentgauge.agents.cmd import CommandAgent
from agentgauge.agents.http_agent import HttpAgent
from agentgauge.agents.openai import OpenAIAgent
from agentgauge.agents.prices import PriceTable, default_prices
from agentgauge.errors import InputError, import_failure
from agentgauge.schema import Task

__all__ = ["resolve_agent"]


def resolve_agent(
    spec: str | Callable[..., Any] | Agent,
    *,
    tasks: Sequence[Task] | None = None,
    **options: Any,
) -> Agent:
    """The `Agent` a spec names. ``tasks`` (the suite's) are handed to agents that need
    them (the reference agents); unknown options for the chosen adapter are an error."""
    if not isinstance(spec, str):
        if _is_agent(spec):
            return spec  # type: ignore[return-value]
        if callable(spec):
            return CallableAgent(spec, **options)
        raise InputError(f"not an agent: {spec!r}", field="agent")
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise InputError(
            f"agent spec {spec!r} is not one of openai:MODEL, cmd:PROGRAM, http:URL, "
            "builtin:NAME or module:function",
            field="agent",
        )
    if kind in ("http", "https") and rest.startswith("//"):
        # A bare URL: the prefix comes first, so http: and https: URLs read alike.
        raise InputError(
            f"write the agent service as http:{spec} (the http: prefix, then the URL)",
            field="agent",
        )
    try:
        if kind == "openai":
            prices = options.pop("prices", None)
            if prices is None or isinstance(prices, str | Path):
                prices = default_prices(prices)
            elif not isinstance(prices, PriceTable):
                table = default_prices()
                table.update(prices)
                prices = table
            return OpenAIAgent(rest, prices=prices, **_drop_none(options))
        if kind == "cmd":
            return CommandAgent(rest, name=spec, **_drop_none(options))
        if kind == "http":
            return HttpAgent(rest, name=spec, **_drop_none(options))
    except TypeError as exc:
        raise InputError(f"bad option for {kind}: agents: {exc}", field="agent") from None
    if kind == "builtin":
        return _builtin(rest, {**options, "tasks": tasks})
    return _imported(spec, kind, rest, options)


def _drop_none(options: dict[str, Any]) -> dict[str, Any]:
    # CLI flags that were not given arrive as None: let the adapter's defaults apply.
    return {k: v for k, v in options.items() if v is not None}


def _is_agent(obj: object) -> bool:
    return callable(obj) and hasattr(obj, "name") and hasattr(obj, "model")


def _builtin(name: str, options: dict[str, Any]) -> Agent:
    try:
        reference = importlib.import_module("agentgauge.envs.reference_agents")
    except ImportError as exc:
        raise InputError(
            f"builtin agents are not available in this installation ({exc})", field="agent"
        ) from None
    # Reference agents follow each task's reference plan, so they need the tasks.
    tasks = options.pop("tasks", None) or []
    agent: Agent = reference.reference_agent(f"builtin:{name}", tasks, **_drop_none(options))
    return agent


#: The adapters' prefixes, for "did you mean" on a misspelt one.
_KINDS = ("openai", "cmd", "http", "builtin")


def import_from_path_or_here(module_name: str) -> Any:
    """Import a module from the import path, then from the current folder.

    The ``agentgauge`` script, unlike ``python -m``, does not put the current folder on
    the import path, so ``--agent my_agent:fn`` beside ``my_agent.py`` would fail; the
    folder is tried last (as uvicorn's ``--app-dir`` default does), so installed
    modules still win over local files of the same name. The one rule for every
    ``module:name`` a user gives: agents, and the environment factories of a suite.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = str(Path.cwd())
        if exc.name != module_name.split(".")[0] or here in sys.path:
            raise
        sys.path.append(here)
        return importlib.import_module(module_name)


def _imported(spec: str, module_name: str, attr: str, options: dict[str, Any]) -> Agent:
    try:
        module = import_from_path_or_here(module_name)
    except Exception as exc:
        # Importing runs the module: a SyntaxError, or a RuntimeError for a missing API
        # key, is as much the user's to fix as a missing module (KeyboardInterrupt and
        # SystemExit are not Exceptions, and go on up).
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == module_name.split(".")[0]:
            hint = (
                f" (looked on the import path and in the current folder {Path.cwd()}; run "
                "from the folder that holds it, or add its folder to PYTHONPATH)"
            )
            close = difflib.get_close_matches(module_name, _KINDS, n=1)
            if close:
                hint = f"; did you mean {close[0]}:{attr}?"
        raise InputError(
            f"cannot import {module_name!r} for agent {spec!r}: {import_failure(exc)}{hint}",
            field="agent",
        ) from None
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise InputError(f"{module_name!r} has no attribute {attr!r}", field="agent") from None
    if _is_agent(target):
        return target  # type: ignore[no-any-return]
    if not callable(target):
        raise InputError(f"{spec!r} is not callable", field="agent")
    return CallableAgent(target, name=spec, **_drop_none(options))
