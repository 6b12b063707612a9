"""tau-bench (v1) results: a JSON list of ``{task_id, trial, reward, info, traj}``.

Format as written by sierra-research/tau-bench's ``run.py`` (``EnvRunResult``):
``traj`` is the OpenAI-style message list the agent saw, ``info.reward_info``
holds the grading detail and ``info.task`` the task (user instruction and the
reference ``actions``). Success is ``reward >= 1 - 1e-6`` (tau-bench's rule).

Cost: tau-bench v1 results keep only ``info.user_cost``, the spend of the
*user simulator*, not the agent's. We record it as ``metadata.user_sim_cost_usd``
and leave the agent's ``cost_usd`` unknown rather than pass one off as the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentgauge.errors import InputError, first_error
from agentgauge.importers import ImportedRun, register
from agentgauge.schema import (
    ControlEvent,
    Event,
    Expectations,
    MessageEvent,
    Task,
    ToolCallEvent,
    ToolCallSpec,
    ToolResultEvent,
    Trial,
)

#: tau-bench's hand-off tool (airline and retail domains).
TRANSFER_TOOLS = frozenset({"transfer_to_human_agents", "transfer_to_human"})


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        parsed = None
    # Malformed arguments are the agent's error; keep the text so graders see it.
    return parsed if isinstance(parsed, dict) else {"__unparsed__": raw}


def trajectory_events(traj: list[dict[str, Any]]) -> list[Event]:
    """OpenAI-style messages -> transcript events (`agentgauge.Event`)."""
    events: list[Event] = []
    for msg in traj:
        role = msg.get("role", "")
        if role == "tool":
            events.append(
                ToolResultEvent(
                    call_id=msg.get("tool_call_id"),
                    name=msg.get("name"),
                    content=msg.get("content"),
                )
            )
            continue
        content = msg.get("content")
        if content is not None or not msg.get("tool_calls"):
            events.append(MessageEvent(role=role, content=content))
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {})
            name = fn.get("name", "")
            events.append(
                ToolCallEvent(
                    name=name, arguments=_arguments(fn.get("arguments")), call_id=call.get("id")
                )
            )
            if name in TRANSFER_TOOLS:
                events.append(ControlEvent(decision="transfer", reason="called " + name))
    return events


def _trial(rec: dict[str, Any], task_id: str, reward: float, info: dict[str, Any]) -> Trial:
    events = trajectory_events(rec.get("traj") or [])
    n_calls = sum(1 for e in events if e.type == "tool_call")
    transferred = any(e.type == "control" for e in events)
    meta: dict[str, Any] = {}
    if isinstance(info.get("user_cost"), int | float):
        meta["user_sim_cost_usd"] = float(info["user_cost"])
    if "reward_info" in info:
        meta["reward_info"] = info["reward_info"]
    return Trial(
        task_id=task_id,
        trial=rec.get("trial"),
        score=reward,
        tool_calls=n_calls,
        control="transfer" if transferred else None,
        events=events,
        metadata=meta,
    )


@register("taubench")
def read(path: Path) -> ImportedRun:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno) from None
    if not isinstance(data, list):
        raise InputError("expected a JSON list of tau-bench results", file=path)
    trials: list[Trial] = []
    tasks: dict[str, Task] = {}
    for i, rec in enumerate(data):
        where = f"[{i}]"
        if not isinstance(rec, dict):
            raise InputError("expected an object", file=path, field=where)
        for key in ("task_id", "reward"):
            if key not in rec:
                raise InputError("required field is missing", file=path, field=f"{where}.{key}")
        reward = rec["reward"]
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not 0 <= reward <= 1:
            raise InputError(
                f"reward must be a number in [0, 1], got {reward!r}",
                file=path,
                field=f"{where}.reward",
            )
        info = rec.get("info") or {}
        task_id = str(rec["task_id"])
        try:
            trials.append(_trial(rec, task_id, float(reward), info))
        except ValidationError as exc:
            field, reason = first_error(exc, metadata_hint=False)
            raise InputError(reason, file=path, field=f"{where}.{field}") from None
        task = info.get("task")
        if isinstance(task, dict) and task_id not in tasks:
            tasks[task_id] = Task(
                id=task_id,
                environment="taubench",
                instruction=str(task.get("instruction", "")),
                expectations=Expectations(
                    reference_calls=[
                        ToolCallSpec(name=a["name"], arguments=a.get("kwargs", {}))
                        for a in task.get("actions", [])
                        if isinstance(a, dict) and "name" in a
                    ]
                ),
                metadata={"user_id": task.get("user_id"), "outputs": task.get("outputs", [])},
            )
    from agentgauge.sources import assign_trial_indices

    trials = assign_trial_indices([(None, t) for t in trials], file=path)
    return ImportedRun(trials=trials, suite=f"taubench:{path.stem}", tasks=list(tasks.values()))
