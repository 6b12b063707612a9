"""tau-bench (v1) results: a JSON list of ``{task_id, trial, reward, info, traj}``.

Format as written by sierra-research/tau-bench's ``run.py`` (``EnvRunResult``):
``traj`` is the OpenAI-style message list the agent saw, ``info.reward_info``
holds the grading detail and ``info.task`` the task (user instruction and the
reference ``actions``). Success is ``reward >= 1 - 1e-6`` (tau-bench's rule).

A run that raised is written by ``run.py`` as ``reward`` 0 with ``info.error`` (the
exception's text) and ``info.traceback``: it is a trial with status ``error`` and
``error_kind`` ``infra`` (the run, not the agent's answer, failed; a rate limit is the
usual cause), as tau2's ``infrastructure_error`` and Inspect's sample errors are, with
the traceback kept as ``metadata.error_traceback``.

A tool result is an error (``is_error``) when its text starts with ``Error:`` or
``Unknown action ``: what tau-bench's environment (``envs/base.py``, ``step``) returns
for a tool that raised and for a tool that does not exist (`tool_error`).

Cost: tau-bench v1 results keep only ``info.user_cost``, the spend of the
*user simulator*, not the agent's. We record it as ``metadata.user_sim_cost_usd``
and leave the agent's ``cost_usd`` unknown rather than pass one off as the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError
from agentgauge.importers import ImportedRun, register
from agentgauge.importers.shape import Shape
from agentgauge.importers.shape import finite as _finite
from agentgauge.importers.shape import kind as _kind
from agentgauge.importers.shape import shown as _shown
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
from agentgauge.sources import Element, assign_trial_indices
from agentgauge.textio import loads_json, read_text

#: tau-bench's hand-off tool (airline and retail domains).
TRANSFER_TOOLS = frozenset({"transfer_to_human_agents", "transfer_to_human"})

#: How tau-bench's environment words a failed tool call (``envs/base.py``, ``step``):
#: ``f"Error: {e}"`` for a tool that raised, ``f"Unknown action {name}"`` for a tool
#: it does not have. Its tools return ``"Error: ..."`` themselves for a refused call.
TOOL_ERROR_PREFIXES = ("Error:", "Unknown action ")


def tool_error(content: Any) -> bool:
    """Whether a tau-bench tool result is an error, by the words its environment uses."""
    return isinstance(content, str) and content.startswith(TOOL_ERROR_PREFIXES)


class _Shape(Shape):
    """`Shape` as tau-bench's and tau2's results are checked (tau2's ``_Check`` adds to it)."""

    list_hint = (
        " (OpenAI list-style content parts are not tau-bench's format; join the text parts "
        "into one string)"
    )

    def number(self, value: Any, where: str, *, minimum: float | None = 0) -> float | None:
        """A finite number >= ``minimum``, or ``None`` for a missing or null one."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
            self.fail(where, f"expected a finite number, got {_kind(value)}")
        if minimum is not None and value < minimum:
            self.fail(where, f"must be at least {minimum:g}, got {_shown(value)}")
        return float(value)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        parsed = None
    # Malformed arguments are the agent's error; keep the text so graders see it.
    return parsed if isinstance(parsed, dict) else {"__unparsed__": raw}


def trajectory_events(
    traj: list[dict[str, Any]], shape: _Shape | None = None, where: str = "traj"
) -> list[Event]:
    """OpenAI-style messages -> transcript events (`agentgauge.Event`)."""
    check = shape or _Shape(Path("<traj>"))
    events: list[Event] = []
    for j, raw in enumerate(traj):
        at = f"{where}[{j}]"
        msg = check.obj(raw, at)
        role = check.text(check.required(msg, "role", f"{at}.role"), f"{at}.role", optional=False)
        assert role is not None
        if role == "tool":
            call_id = check.text(msg.get("tool_call_id"), f"{at}.tool_call_id")
            name = check.text(msg.get("name"), f"{at}.name")
            content = msg.get("content")
            events.append(
                ToolResultEvent(
                    call_id=call_id, name=name, content=content, is_error=tool_error(content)
                )
            )
            continue
        content = check.text(msg.get("content"), f"{at}.content")
        calls = check.items(msg.get("tool_calls"), f"{at}.tool_calls")
        if content is not None or not calls:
            events.append(MessageEvent(role=role, content=content))
        for k, raw_call in enumerate(calls):
            call_at = f"{at}.tool_calls[{k}]"
            call = check.obj(raw_call, call_at)
            fn = check.required(call, "function", f"{call_at}.function")
            if not isinstance(fn, dict):
                check.fail(f"{call_at}.function", f"expected an object, got {_kind(fn)}")
            name_at = f"{call_at}.function.name"
            name = check.text(check.required(fn, "name", name_at), name_at, optional=False)
            assert name is not None
            call_id = check.text(call.get("id"), f"{call_at}.id")
            events.append(
                ToolCallEvent(name=name, arguments=_arguments(fn.get("arguments")), call_id=call_id)
            )
            if name in TRANSFER_TOOLS:
                events.append(ControlEvent(decision="transfer", reason="called " + name))
    return events


def _trial(
    rec: dict[str, Any],
    task_id: str,
    reward: float,
    info: dict[str, Any],
    shape: _Shape,
    where: str,
) -> Trial:
    traj = shape.items(rec.get("traj"), f"{where}.traj")
    events = trajectory_events(traj, shape, f"{where}.traj")
    # A record without a transcript (no ``traj``, or an empty one) made calls nobody saw:
    # its count is unknown, not 0 (docs/metrics.md, "An events list that is absent...").
    n_calls = sum(1 for e in events if e.type == "tool_call") if events else None
    transferred = any(e.type == "control" for e in events)
    meta: dict[str, Any] = {}
    # A spend that is text or below 0 is refused, not dropped or stored as it stands.
    user_cost = shape.number(info.get("user_cost"), f"{where}.info.user_cost")
    if user_cost is not None:
        meta["user_sim_cost_usd"] = user_cost
    if "reward_info" in info:
        meta["reward_info"] = info["reward_info"]
    crash = _crash(info, shape, f"{where}.info", meta)
    return shape.validated(
        where,
        Trial,
        task_id=task_id,
        trial=rec.get("trial"),
        score=reward,
        **crash,
        tool_calls=n_calls,
        control="transfer" if transferred else None,
        events=events,
        metadata=meta,
    )


def _crash(info: dict[str, Any], shape: _Shape, where: str, meta: dict[str, Any]) -> dict[str, Any]:
    """The status of a run that raised (``run.py`` writes ``info.error`` and
    ``info.traceback`` with a reward of 0): an infra error with the exception's text,
    the traceback kept in ``meta``; ``{}`` for a run that ended."""
    if info.get("error") is None:
        return {}
    message = shape.text(info["error"], f"{where}.error", optional=False)
    traceback = shape.text(info.get("traceback"), f"{where}.traceback")
    if traceback:
        meta["error_traceback"] = traceback
    if not message or not message.strip():
        # ``str(e)`` of an exception raised without a message: the traceback's last
        # line names its type.
        lines = [line for line in (traceback or "").splitlines() if line.strip()]
        message = lines[-1].strip() if lines else "the run raised an exception with no message"
    return {"status": "error", "error_kind": "infra", "error": message}


def _task(task: dict[str, Any], task_id: str, shape: _Shape, where: str) -> Task:
    calls: list[ToolCallSpec] = []
    for k, raw in enumerate(shape.items(task.get("actions"), f"{where}.actions")):
        if not isinstance(raw, dict) or "name" not in raw:
            continue  # tau-bench's own ``respond`` actions and the like carry no call
        at = f"{where}.actions[{k}]"
        name = shape.text(raw["name"], f"{at}.name", optional=False)
        kwargs = shape.obj(raw.get("kwargs"), f"{at}.kwargs")
        calls.append(shape.validated(at, ToolCallSpec, name=name, arguments=kwargs))
    instruction = task.get("instruction", "")
    return shape.validated(
        where,
        Task,
        id=task_id,
        environment="taubench",
        instruction=instruction if isinstance(instruction, str) else str(instruction),
        expectations=Expectations(reference_calls=calls),
        metadata={"user_id": task.get("user_id"), "outputs": task.get("outputs", [])},
    )


@register("taubench")
def read(path: Path) -> ImportedRun:
    """Read a tau-bench results file; the first bad element fails with FILE: [i].field: reason."""
    data = loads_json(read_text(path), file=path, line=None)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of tau-bench results", file=path)
    shape = _Shape(path)
    trials: list[tuple[Element, Trial]] = []
    tasks: dict[str, Task] = {}
    for i, raw in enumerate(data):
        where = f"[{i}]"
        if not isinstance(raw, dict):
            shape.fail(where, f"expected an object, got {_kind(raw)}")
        rec = raw
        for key in ("task_id", "reward"):
            if key not in rec:
                shape.fail(f"{where}.{key}", "required field is missing")
        raw_id = rec["task_id"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            shape.fail(f"{where}.task_id", f"expected a string or an integer, got {_kind(raw_id)}")
        reward = rec["reward"]
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not 0 <= reward <= 1:
            shape.fail(
                f"{where}.reward", f"reward must be a number in [0, 1], got {_shown(reward)}"
            )
        info = shape.obj(rec.get("info"), f"{where}.info")
        task_id = str(raw_id)
        trials.append(
            (Element(path, where), _trial(rec, task_id, float(reward), info, shape, where))
        )
        task = info.get("task")
        if isinstance(task, dict) and task_id not in tasks:
            tasks[task_id] = _task(task, task_id, shape, f"{where}.info.task")
    return ImportedRun(
        trials=assign_trial_indices(trials, file=path),
        suite=f"taubench:{path.stem}",
        tasks=list(tasks.values()),
    )
