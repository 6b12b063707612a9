"""The one-change rule: a run's configuration as named components, and what differs.

Changing two things at once (a new prompt and a new model in one release) makes
a difference unattributable: which of the two made B better? Each run records
its configuration as the components in `COMPONENTS` under ``config["components"]``
(docs/compare-and-plan.md, "One change at a time"); `compare` lists the ones that
differ, and when more than one did, the verdict says the difference is not
attributable.

A component nobody recorded is ``None``, "not recorded": never equal by default,
so two runs that recorded nothing are not "the same configuration".

What each agent knows of itself comes from its ``components()`` method (the
openai adapter: model, sampling, and that its system prompt is the
environment's policy; a Python callable: what its author declared); the harness
adds what it sees (the suite, the graders, the tools and policy the
environments offered). Imported runs carry what their source recorded
(`from_run`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agentgauge.canonical import canonical_json

if TYPE_CHECKING:
    from agentgauge.metrics.compare import Comparison

__all__ = [
    "AGENT",
    "COMPONENTS",
    "COMPONENTS_KEY",
    "ENVIRONMENT_POLICY",
    "NOT_SENT",
    "ComponentDiff",
    "agent_components",
    "diff_components",
    "digest",
    "fold_served_model",
    "from_run",
    "run_model",
    "served_models",
    "side_components",
    "with_configuration",
    "with_served_model",
]

#: The components, in the order they are listed, with the words the sentences use.
COMPONENTS: dict[str, str] = {
    "model": "model",
    "agent_version": "agent version",
    "system_prompt": "system prompt",
    "tool_set": "tool set",
    "suite_version": "suite version",
    "graders": "graders",
    "rubric_version": "rubric version",
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max tokens",
    "seed": "sampling seed",
}
#: The key under which `side_components` gives a side's agent name (not a component:
#: no run records it in its components, but a change of agent is a change).
AGENT = "agent"
#: Where a run's config holds them.
COMPONENTS_KEY = "components"
#: An agent's ``system_prompt`` when it sends the environment's policy as it is
#: (the harness replaces it with the digest of the policies it saw).
ENVIRONMENT_POLICY = "environment policy"
#: A sampling setting the adapter did not send (the server's default applies).
NOT_SENT = "not sent (server default)"


def digest(value: Any) -> str:
    """``sha256:`` and 12 hex digits of ``value``'s canonical JSON (text as it is)."""
    text = value if isinstance(value, str) else canonical_json(value)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12]


def digest_of_set(digests: Iterable[str]) -> str | None:
    """One digest for several (the distinct policies or tool sets a suite offers)."""
    distinct = sorted(set(digests))
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else digest(distinct)


def agent_components(agent: object) -> dict[str, Any]:
    """What the agent says of itself (its ``components()``), keys outside `COMPONENTS`
    dropped; an agent without the method says nothing."""
    own = getattr(agent, "components", None)
    said = own() if callable(own) else {}
    if not isinstance(said, Mapping):
        return {}
    return {k: v for k, v in said.items() if k in COMPONENTS}


def from_run(run: Any) -> dict[str, Any]:
    """A run header's components: those it recorded, else what its source recorded.

    Imports fill what the source format holds: the model of every import that
    names one; Inspect logs' ``task_version`` as the suite version; tau2-bench's
    ``agent_llm_args`` for the sampling settings. Everything else is ``None``.
    """
    config: Mapping[str, Any] = run.config or {}
    recorded = config.get(COMPONENTS_KEY)
    out: dict[str, Any] = dict.fromkeys(COMPONENTS)
    if isinstance(recorded, Mapping):
        out.update({k: recorded.get(k) for k in COMPONENTS})
        return out
    out["model"] = run.model
    inspect = config.get("inspect")
    if isinstance(inspect, Mapping) and inspect.get("task_version") is not None:
        out["suite_version"] = str(inspect["task_version"])
    tau2 = config.get("tau2")
    args = tau2.get("agent_llm_args") if isinstance(tau2, Mapping) else None
    if isinstance(args, Mapping):
        for key in ("temperature", "top_p", "max_tokens", "seed"):
            out[key] = args.get(key, NOT_SENT)
    return out


def run_model(run: Any) -> str | None:
    """A run's model as `runs` and `show` print it: the header's, else the one its
    components record, marked ``(component)`` (a reference agent names its simulated
    model only there: its header and trials name none, while `compare` compares it);
    ``None`` when neither names one. ``--json`` keeps the header's value."""
    if run.model:
        return str(run.model)
    named = from_run(run).get("model")
    return None if named is None else f"{named} (component)"


def served_models(trials: Iterable[Any]) -> list[str]:
    """The model names the provider reported on the trials' model calls (the version it
    served, e.g. ``gpt-4o-2024-08-06`` for a request of ``gpt-4o``), sorted."""
    from agentgauge.model_calls import ModelCalls

    return ModelCalls.of_trials(trials).served


def with_served_model(components: Mapping[str, Any], trials: Iterable[Any]) -> dict[str, Any]:
    """``components`` with the model the provider served folded into ``model``.

    A provider may serve a new version under the same name: the requested model is
    then unchanged while the served one is not, and that is a change of model, not a
    second component. The served names are read from the model calls, so a
    comparison sees them whatever the run header recorded."""
    return fold_served_model(components, served_models(trials))


def fold_served_model(components: Mapping[str, Any], served: Sequence[str]) -> dict[str, Any]:
    """`with_served_model` with the served names given (sorted), as a stored run's
    model calls count them (`agentgauge.model_calls.ModelCalls`)."""
    out = dict(components)
    served = list(served)
    requested = out.get("model")
    if not served or served == [requested]:
        return out
    shown = ", ".join(served)
    out["model"] = shown if requested is None else f"{requested} (served: {shown})"
    return out


@dataclass(frozen=True)
class ComponentDiff:
    """How two runs' configurations differ."""

    changed: list[tuple[str, Any, Any]]
    """``(component, A's value, B's value)`` for each recorded on both sides and unequal."""
    unknown: list[str]
    """Components not recorded on one side or both: whether they changed cannot be told."""
    agents: tuple[str, str] | None = None
    """A's and B's agent names when both are known and differ: where no recorded
    component does, the sentence says the agents do (two agents whose components went
    unrecorded are not "no change")."""
    agent_changed: bool = False
    """The agents' names differ and their versions are not both recorded: the agent is a
    change of its own (planner-v1 on one model against react-v2 on another is not "one
    change: model"). With recorded versions, the versions say whether it changed."""

    @property
    def attributable(self) -> bool:
        """At most one known change: a recorded component, or the agent."""
        return len(self.changed) + self.agent_changed <= 1

    def _names(self) -> list[str]:
        """The changes' words in `COMPONENTS` order, the agent where its version is."""
        names = []
        for name in COMPONENTS:
            if any(c == name for c, _, _ in self.changed):
                names.append(COMPONENTS[name])
            if name == "agent_version" and self.agent_changed:
                names.append("agent")
        return names

    def sentence(self) -> str:
        """What changed, in words (docs/compare-and-plan.md, "One change at a time")."""
        names = self._names()
        if len(names) >= 2:
            both = "both" if len(names) == 2 else "all"
            text = f"not attributable: {_and(names)} {both} changed"
        elif self.changed:
            name, a, b = self.changed[0]
            text = f"one change: {COMPONENTS[name]} ({_short(a)} → {_short(b)})"
        else:
            text = "no recorded component differs"
            if self.agents is not None:
                text += f", but the agent does ({self.agents[0]} → {self.agents[1]})"
        if self.unknown:
            unknown = _and([COMPONENTS[c] for c in self.unknown])
            text += f"; not recorded on one side or both: {unknown}"
            if len(names) == 1 and self.changed:
                text += " (the difference is the one change's only if these did not change)"
        return text

    def sentence_for_verdict(self) -> str | None:
        """The clause appended to the statistical verdict, or ``None`` when one change
        (or none) is known."""
        return None if self.attributable else self.sentence().split("; ", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "changed": [{"component": c, "a": a, "b": b} for c, a, b in self.changed],
            "not_recorded": self.unknown,
            "agent": None if self.agents is None else {"a": self.agents[0], "b": self.agents[1]},
            "agent_changed": self.agent_changed,
            "attributable": self.attributable,
            "sentence": self.sentence(),
        }


def side_components(
    run: Any | None,
    models: Iterable[str | None],
    served: Sequence[str],
    agents: Iterable[str | None] = (),
) -> dict[str, Any]:
    """One side of a comparison as components: its run header's (`from_run`; all not
    recorded without a header), the model its trials name when no header does and
    they agree, folded with the models the provider served (`fold_served_model`);
    under `AGENT`, the header's agent, else the one its trials name (``agents``) when
    they agree. ``agentgauge compare`` and the viewer's diff both read a side this
    way, so their verdicts cannot differ (docs/viewer.md)."""
    out = from_run(run) if run is not None else dict.fromkeys(COMPONENTS)
    if out.get("model") is None:
        out["model"] = _the_one(models)
    out = fold_served_model(out, served)
    out[AGENT] = (run.agent if run is not None else None) or _the_one(agents)
    return out


def _the_one(names: Iterable[str | None]) -> str | None:
    named = {n for n in names if n is not None}
    return next(iter(named)) if len(named) == 1 else None


def with_configuration(comparison: Comparison, changes: ComponentDiff) -> Comparison:
    """The comparison whose verdict says when the difference is not attributable
    (``B is better; not attributable: model and agent version both changed``)."""
    clause = changes.sentence_for_verdict()
    if clause is None:
        return comparison
    return replace(comparison, verdict=f"{comparison.verdict}; {clause}")


def diff_components(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    agents: tuple[str | None, str | None] | None = None,
) -> ComponentDiff:
    """Compare two component maps (`side_components`), in `COMPONENTS` order.

    ``agents``, the sides' agent names (default: the maps' `AGENT`), are named in the
    sentence when both are known and differ. Where the agent version is not recorded
    on both sides, two differently named agents are a change of their own, listed
    where the agent version would be: planner-v1 on gpt-4o-mini against react-v2 on
    gpt-4.1 is not "one change: model", whatever else went unrecorded."""
    if agents is None:
        agents = (a.get(AGENT), b.get(AGENT))
    named = None
    if agents[0] and agents[1] and agents[0] != agents[1]:
        named = (str(agents[0]), str(agents[1]))
    changed: list[tuple[str, Any, Any]] = []
    unknown: list[str] = []
    for name in COMPONENTS:
        va, vb = a.get(name), b.get(name)
        if va is None or vb is None:
            unknown.append(name)
        elif va != vb:
            changed.append((name, va, vb))
    return ComponentDiff(changed, unknown, named, named is not None and "agent_version" in unknown)


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= 40 else text[:37] + "..."
