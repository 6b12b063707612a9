"""What a harness run records of its configuration, as named components
(`agentgauge.components`; docs/compare-and-plan.md, "One change at a time").

At run creation: what the agent says of itself, the suite version, the graders
and the tasks' rubrics. While trials run: the digest of the tools (and the
policy) each task's base-variant environment offered, observed by wrapping the
environment factory, so the tool set is what the agent was given, whatever
built it. Paraphrases, faults and reshaping variants are left out (the last two
change the tools on purpose); a run without the base variant records no tool
set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentgauge._version import __version__
from agentgauge.components import (
    COMPONENTS,
    COMPONENTS_KEY,
    ENVIRONMENT_POLICY,
    agent_components,
    digest,
    digest_of_set,
)
from agentgauge.envs.base import EnvFactory, Environment
from agentgauge.schema import Task
from agentgauge.suite import SuiteLike

__all__ = ["SEEN_KEY", "ObservingFactory", "initial_components", "observed_components"]

#: Where the digests seen so far are kept (so a resumed run adds to them).
SEEN_KEY = "components_seen"


def _grader_name(grader: Callable[..., Any] | None) -> str:
    from agentgauge.harness.trial import default_grader

    if grader is None:
        return "none (ungraded)"
    if grader is default_grader:
        from agentgauge.graders.base import user_code_graders

        # Your own registered code graders run by default too: a run with and one
        # without them are not the same graders.
        own = user_code_graders()
        return f"agentgauge {__version__} code graders" + (f" and {', '.join(own)}" if own else "")
    module = getattr(grader, "__module__", None) or "python"
    name = getattr(grader, "__qualname__", None) or type(grader).__qualname__
    version = getattr(grader, "version", None)
    return f"{module}.{name}" + (f" {version}" if version is not None else "")


def _rubric_version(tasks: list[Task]) -> str:
    rubrics = {
        t.id: [c.model_dump(mode="json") for c in t.expectations.rubric]
        for t in tasks
        if t.expectations.rubric
    }
    return digest(rubrics) if rubrics else "none (no rubric)"


def initial_components(
    agent: object, suite: SuiteLike, grader: Callable[..., Any] | None
) -> dict[str, Any]:
    """The components known before any trial runs; the rest ``None`` until observed."""
    out: dict[str, Any] = dict.fromkeys(COMPONENTS)
    out.update(agent_components(agent))
    out["suite_version"] = suite.version
    out["graders"] = _grader_name(grader)
    out["rubric_version"] = _rubric_version(list(suite.tasks))
    return out


class ObservingFactory:
    """An environment factory that notes the digests of the tools and policies it built."""

    def __init__(self, factory: EnvFactory, seen: Mapping[str, list[str]] | None = None) -> None:
        self._factory = factory
        self.tools: set[str] = set((seen or {}).get("tool_set", []))
        self.policies: set[str] = set((seen or {}).get("policy", []))
        self._tasks: set[str] = set()

    def __call__(self, task: Task, *, variant: str, seed: int) -> Environment:
        env = self._factory(task, variant=variant, seed=seed)
        # A task's base environment offers the same tools on every trial: one digest per
        # task, not per trial (a digest costs about a third of building a retail world).
        if variant == "base" and task.id not in self._tasks:
            self._tasks.add(task.id)
            self.tools.add(digest(env.tools))
            self.policies.add(digest(env.policy))
        return env

    def seen(self) -> dict[str, list[str]]:
        return {"tool_set": sorted(self.tools), "policy": sorted(self.policies)}


def observed_components(
    config: Mapping[str, Any], observer: ObservingFactory, declared: Mapping[str, Any]
) -> dict[str, Any] | None:
    """``config`` with the observed tool set filled in, and the system prompt when the
    agent ``declared`` it sends the environment's policy; ``None`` when nothing new
    was seen (so an unchanged header is not rewritten)."""
    seen = observer.seen()
    if not seen["tool_set"] or seen == config.get(SEEN_KEY):
        return None
    components = dict(config.get(COMPONENTS_KEY) or dict.fromkeys(COMPONENTS))
    components["tool_set"] = digest_of_set(seen["tool_set"])
    if declared.get("system_prompt") == ENVIRONMENT_POLICY:
        components["system_prompt"] = digest_of_set(seen["policy"])
    return {**config, COMPONENTS_KEY: components, SEEN_KEY: seen}
