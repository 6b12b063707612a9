"""tau2-bench results: its ``Results`` JSON, in either of the forms tau2 writes.

The data model is sierra-research/tau2-bench's ``src/tau2/data_model/simulation.py``
(``Results``, ``SimulationRun``, ``RewardInfo``) and ``message.py``. tau2 saves a
run either as one JSON document (``simulations`` inline) or as a directory:
``results.json`` without simulations, plus ``simulations/{id}.json`` per
simulation, listed in ``simulation_index``. PATH may be the JSON file, a
directory's ``results.json``, or the directory. Field mapping, termination
reasons and what is lost: docs/formats/tau2.md.

Success is ``reward`` within 1e-6 of 1 (tau2's ``is_successful``). tau2 itself
drops ``infrastructure_error`` simulations from its metrics
(``metrics/agent_metrics.py``); here every simulation is kept, and those that
did not end by the agent's or the user's stop are trials with status ``error``
or ``timeout`` and a recorded culprit (`TERMINATIONS`), so infra errors are
counted and shown beside the rate rather than silently dropped.

Cost: ``agent_cost`` is the trial's cost; the user simulator's ``user_cost`` is
kept apart as ``metadata.user_sim_cost_usd`` and never counted as the agent's.
tau2 prices calls through litellm, which records $0 for a model it cannot
price; an agent message with tokens and no cost (or that $0) is priced with
`agentgauge.agents.prices` (the user's prices, then genai-prices), and an
unpriceable one makes the trial's cost unknown, never $0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agentgauge.agents.prices import PriceTable, Usage, default_prices
from agentgauge.errors import InputError, first_error
from agentgauge.importers import ImportedRun, register
from agentgauge.importers.shape import M
from agentgauge.importers.shape import kind as _kind
from agentgauge.importers.shape import shown as _shown
from agentgauge.importers.taubench import TRANSFER_TOOLS, _arguments, _Shape
from agentgauge.schema import (
    INT64_MAX,
    ControlEvent,
    Event,
    Expectations,
    Grade,
    MessageEvent,
    ModelCallEvent,
    Task,
    ToolCallEvent,
    ToolCallSpec,
    ToolResultEvent,
    Trial,
    TrialStatus,
)
from agentgauge.sources import Element, assign_trial_indices
from agentgauge.textio import loads_json, read_text

__all__ = ["TERMINATIONS", "Termination", "read"]

SIMULATIONS_DIR = "simulations"

#: The roles of tau2's messages (``message.py``: ``SystemMessage``, ``UserMessage``,
#: ``AssistantMessage``, ``ToolMessage`` and ``MultiToolMessage``, each a literal).
ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Termination:
    """How a tau2 ``termination_reason`` becomes a trial's status."""

    status: TrialStatus
    error_kind: Literal["infra", "agent"] | None
    """``agent`` (always a failure) or ``infra`` (a failure unless excluded)."""
    why: str


#: tau2's ``TerminationReason`` values (simulation.py) -> status and culprit.
#: The normal ends (the agent or the user stopped) are ``completed`` and graded
#: by their reward; tau2's evaluator gives every other end a reward of 0.
TERMINATIONS: dict[str, Termination] = {
    "agent_stop": Termination("completed", None, "the agent ended the conversation"),
    "user_stop": Termination("completed", None, "the user simulator ended the conversation"),
    "max_steps": Termination("error", "agent", "the agent used up the step limit"),
    "too_many_errors": Termination("error", "agent", "too many tool errors in a row"),
    "agent_error": Termination("error", "agent", "the agent broke the protocol or raised"),
    "context_window_exceeded": Termination(
        "error", "agent", "the conversation outgrew the agent model's context window"
    ),
    "timeout": Termination("timeout", "agent", "the simulation's wall-clock limit fired"),
    "user_error": Termination(
        "error", "infra", "the user simulator broke the protocol (not the agent's doing)"
    ),
    "infrastructure_error": Termination(
        "error", "infra", "the simulation did not run (provider or worker failure)"
    ),
    "unexpected_error": Termination(
        "error", "infra", "tau2 recorded an unexpected error without a culprit"
    ),
}


class _Check(_Shape):
    """`_Shape` plus the scalar checks tau2's numbers need."""

    def count(self, value: Any, where: str) -> int | None:
        """A token count: an integer >= 0 that the store can hold, or ``None``."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
            self.fail(where, f"expected a whole number of tokens (0 to 2^63), got {_shown(value)}")
        return value

    def build(self, where: str, cls: type[M], /, **values: Any) -> M:
        """``cls(**values)`` with a pydantic error reported under ``where`` (an empty
        ``where``, a simulation's own file, adds no dot); ``values`` may hold ``model``."""
        try:
            return cls(**values)
        except ValidationError as exc:
            field, reason = first_error(exc, metadata_hint=False)
            self.fail(".".join(p for p in (where, field) if p), reason)

    def flag(self, value: Any, where: str) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {_kind(value)}")
        return value

    def time(self, value: Any, where: str) -> datetime | None:
        """A time as tau2 writes it (``datetime.isoformat()``), or ``None`` for a missing
        or null one. Anything else is refused: taken as "no time", a garbled
        ``start_time`` silently dropped the time of every event of its simulation."""
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(where, f"expected an ISO 8601 time, got {_kind(value)}")
        try:
            if len(value) > 64:
                raise ValueError
            return datetime.fromisoformat(value)
        except ValueError:
            self.fail(where, f"expected an ISO 8601 time, got {_shown(value)}")

    def ident(self, value: Any, where: str) -> str:
        """An id tau2 writes as a string (``SimulationIndexEntry`` allows ints)."""
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            self.fail(where, f"expected a non-empty string or an integer, got {_kind(value)}")
        return str(value)

    def within(self, path: Path) -> _Check:
        return _Check(path)


@dataclass
class _Header:
    """What ``Results.info`` says about the run."""

    agent: str | None
    model: str | None
    domain: str | None
    config: dict[str, Any]


@register("tau2", options=("prices",))
def read(path: Path, *, prices: str | None = None) -> ImportedRun:
    """Read a tau2-bench ``Results`` file or directory; the first bad element fails
    with FILE: element.path: reason (``simulations[3].messages[2].role``).
    ``prices``: a file of the user's prices (docs/running-agents.md, "Prices")."""
    table = default_prices(prices, warm=False)  # genai-prices once a call needs it
    meta_path, sims_dir = _locate(path)
    check = _Check(meta_path)
    data = check.obj(loads_json(read_text(meta_path), file=meta_path, line=None), "")
    if not data:
        raise InputError("expected a tau2 Results object (timestamp, info, tasks, ...)", file=path)
    if "simulations" not in data and "termination_reason" in data and "task_id" in data:
        # One of simulations/*.json: read as a Results file, it held no trials.
        raise InputError(
            "is one tau2 simulation, not a run's results: give the run's directory (the "
            "folder holding results.json and simulations/) or its results.json",
            file=meta_path,
        )
    header = _header(check.obj(data.get("info"), "info"), check)
    placed = [
        (Element(check_at.path, where), _trial(raw, header, table, check_at, where))
        for check_at, where, raw in _simulations(data, meta_path, sims_dir, check)
    ]
    trials = assign_trial_indices(placed, file=meta_path)
    tasks = _tasks(check.items(data.get("tasks"), "tasks"), header, check, meta_path)
    suite = f"tau2:{header.domain}" if header.domain else f"tau2:{path.stem}"
    return ImportedRun(
        # The directory form read is the directory, whichever of it PATH named.
        source=meta_path.parent if sims_dir is not None and sims_dir.is_dir() else None,
        trials=trials,
        agent=header.agent,
        model=header.model,
        suite=suite,
        tasks=tasks,
        config={"tau2": header.config, "price_sources": _price_sources(trials)},
    )


# --------------------------------------------------------------------------- locating


def _locate(path: Path) -> tuple[Path, Path | None]:
    """The metadata JSON and, for the directory form, the simulations folder
    (tau2's ``Results._detect_format``: a directory, or a file beside one)."""
    if path.is_dir():
        meta = path / "results.json"
        if not meta.is_file():
            raise InputError(
                "a tau2 results directory holds results.json (and simulations/)", file=path
            )
        return meta, path / SIMULATIONS_DIR
    sims = path.parent / SIMULATIONS_DIR
    return path, sims if sims.is_dir() else None


def _simulations(
    data: dict[str, Any], meta_path: Path, sims_dir: Path | None, check: _Check
) -> list[tuple[_Check, str, dict[str, Any]]]:
    """``(checker for its file, element path, simulation)`` for every simulation."""
    inline = check.items(data.get("simulations"), "simulations")
    if sims_dir is None or not sims_dir.is_dir():
        listed = check.items(data.get("simulation_index"), "simulation_index")
        if listed and not inline:
            # results.json copied without its folder: "no trials found" said the run
            # was empty.
            check.fail(
                "simulation_index",
                f"lists {len(listed)} simulations, but there is no {SIMULATIONS_DIR}/ folder "
                f"beside it (in {meta_path.parent}); copy the folder with results.json",
            )
        return [
            (check, f"simulations[{i}]", check.obj(raw, f"simulations[{i}]"))
            for i, raw in enumerate(inline)
        ]
    if inline:
        # tau2 would read the folder and ignore these; which one the user meant is unclear.
        check.fail(
            "simulations",
            f"the file holds simulations and sits beside a {SIMULATIONS_DIR}/ folder; "
            "move one of them away so it is clear which to import",
        )
    on_disk = {p.stem: p for p in sorted(sims_dir.glob("*.json"))}
    index = data.get("simulation_index")
    if index is None:
        ids = list(on_disk)
    else:
        ids = []
        for i, raw in enumerate(check.items(index, "simulation_index")):
            entry = check.obj(raw, f"simulation_index[{i}]")
            ids.append(check.ident(entry.get("id"), f"simulation_index[{i}].id"))
        # tau2's own integrity check on load (Results.load).
        missing = sorted(set(ids) - set(on_disk))
        extra = sorted(set(on_disk) - set(ids))
        if missing or extra:
            parts = [f"missing simulation files {_few(missing)}"] if missing else []
            parts += [f"files not in the index {_few(extra)}"] if extra else []
            check.fail("simulation_index", "; ".join(parts) + f" (in {sims_dir})")
    out: list[tuple[_Check, str, dict[str, Any]]] = []
    for sim_id in ids:
        file = on_disk[sim_id]
        at = check.within(file)
        raw = at.obj(loads_json(read_text(file), file=file, line=None), "")
        if "id" in raw and at.ident(raw["id"], "id") != sim_id:
            at.fail("id", f"the simulation's id {raw['id']!r} differs from its file name")
        out.append((at, "", raw))
    return out


def _few(names: list[str]) -> str:
    shown = ", ".join(names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


# --------------------------------------------------------------------------- header


def _header(info: dict[str, Any], check: _Check) -> _Header:
    agent_info = check.obj(info.get("agent_info"), "info.agent_info")
    user_info = check.obj(info.get("user_info"), "info.user_info")
    env_info = check.obj(info.get("environment_info"), "info.environment_info")
    config: dict[str, Any] = {
        key: info[key]
        for key in ("git_commit", "num_trials", "max_steps", "max_errors", "seed")
        if key in info
    }
    config["agent_llm_args"] = agent_info.get("llm_args")
    config["user_implementation"] = check.text(
        user_info.get("implementation"), "info.user_info.implementation"
    )
    config["user_llm"] = check.text(user_info.get("llm"), "info.user_info.llm")
    return _Header(
        agent=check.text(agent_info.get("implementation"), "info.agent_info.implementation"),
        model=check.text(agent_info.get("llm"), "info.agent_info.llm"),
        domain=check.text(env_info.get("domain_name"), "info.environment_info.domain_name"),
        config=config,
    )


# --------------------------------------------------------------------------- simulations


def _trial(
    sim: dict[str, Any], header: _Header, prices: PriceTable, check: _Check, where: str
) -> Trial:
    def at(name: str) -> str:
        return f"{where}.{name}" if where else name

    if "task_id" not in sim:
        check.fail(at("task_id"), "required field is missing")
    task_id = check.ident(sim["task_id"], at("task_id"))
    reason = check.text(sim.get("termination_reason"), at("termination_reason"), optional=False)
    assert reason is not None
    if reason not in TERMINATIONS:
        check.fail(
            at("termination_reason"),
            f"unknown termination reason {reason[:40]!r}; tau2 writes one of "
            + ", ".join(TERMINATIONS),
        )
    end = TERMINATIONS[reason]
    reward_info = check.obj(sim.get("reward_info"), at("reward_info"))
    reward = check.number(reward_info.get("reward"), at("reward_info.reward"))
    if reward is not None and reward > 1 + 1e-6:
        check.fail(at("reward_info.reward"), f"reward must lie in [0, 1], got {reward!r}")
    status, kind, error = end.status, end.error_kind, None
    if end.status != "completed":
        error = f"tau2 termination_reason {reason}: {end.why}"
        detail = check.obj(sim.get("info"), at("info")).get("error")
        if isinstance(detail, str) and detail:
            error += f" ({detail[:300]})"
    elif reward is None:
        # A simulation tau2 never evaluated: its outcome is unknown, not a failure of the agent.
        status, kind = "error", "infra"
        error = "tau2 simulation has no reward_info (it was not evaluated)"
    start = check.time(sim.get("start_time"), at("start_time"))
    events, repriced = _events(
        check.items(sim.get("messages"), at("messages")),
        header,
        prices,
        check,
        at("messages"),
        start,
    )
    duration = check.number(sim.get("duration"), at("duration"))
    user_cost = check.number(sim.get("user_cost"), at("user_cost"))
    agent_cost = check.number(sim.get("agent_cost"), at("agent_cost"))
    meta: dict[str, Any] = {
        "tau2_simulation_id": sim.get("id") if isinstance(sim.get("id"), str) else None,
        "termination_reason": reason,
    }
    if user_cost is not None:
        meta["user_sim_cost_usd"] = user_cost
    for key in ("reward_basis", "reward_breakdown"):
        if reward_info.get(key) is not None:
            meta[key] = reward_info[key]
    calls = [e for e in events if isinstance(e, ModelCallEvent)]
    cost = agent_cost
    if calls and (repriced or agent_cost is None):
        # The sum over the agent's calls; unknown when any call's price is.
        costs = [c.cost_usd for c in calls]
        cost = None if None in costs else sum(c for c in costs if c is not None)
    return check.build(
        where,
        Trial,
        task_id=task_id,
        trial=sim.get("trial"),
        seed=sim.get("seed"),
        agent=header.agent,
        model=header.model,
        score=min(reward, 1.0) if reward is not None and status == "completed" else 0.0,
        status=status,
        error_kind=kind,
        error=error,
        cost_usd=cost,
        input_tokens=_total(c.input_tokens for c in calls),
        output_tokens=_total(c.output_tokens for c in calls),
        # tau2's placeholder for a simulation that never ran says duration 0: not a latency.
        latency_s=None if reason == "infrastructure_error" and not events else duration,
        # No transcript (tau2's placeholder for a simulation that never ran): the count
        # of tool calls is unknown, as model_calls is, not 0.
        tool_calls=sum(1 for e in events if isinstance(e, ToolCallEvent)) if events else None,
        model_calls=len(calls) or None,
        control="transfer" if any(isinstance(e, ControlEvent) for e in events) else None,
        events=events,
        grades=_grades(reward_info, check, at("reward_info")),
        metadata=meta,
    )


def _events(
    messages: list[Any],
    header: _Header,
    prices: PriceTable,
    check: _Check,
    where: str,
    start: datetime | None,
) -> tuple[list[Event], bool]:
    """The transcript, and whether agentgauge priced any of the agent's model
    calls (then tau2's ``agent_cost`` missed them and cannot stand)."""
    events: list[Event] = []
    repriced = False
    for j, raw in enumerate(messages):
        at = f"{where}[{j}]"
        msg = check.obj(raw, at)
        role = check.text(msg.get("role"), f"{at}.role", optional=False)
        assert role is not None
        if role not in ROLES:
            check.fail(
                f"{at}.role", f"unknown role {role[:40]!r}; tau2 writes one of {', '.join(ROLES)}"
            )
        when = check.time(msg.get("timestamp"), f"{at}.timestamp")
        t = _offset(start, when)
        if role == "tool":
            parts = msg.get("tool_messages")
            if parts is None:  # a ToolMessage; a MultiToolMessage carries tool_messages
                events.append(_tool_result(msg, check, at, t))
            for k, part in enumerate(check.items(parts, f"{at}.tool_messages")):
                sub = f"{at}.tool_messages[{k}]"
                item = check.obj(part, sub)
                t_part = _offset(start, check.time(item.get("timestamp"), f"{sub}.timestamp"))
                events.append(_tool_result(item, check, sub, t_part))
            continue
        content = check.text(msg.get("content"), f"{at}.content")
        tool_calls = check.items(msg.get("tool_calls"), f"{at}.tool_calls")
        if role == "assistant" and not (j == 0 and _greeting(msg, tool_calls)):
            call, was_priced = _model_call(msg, header, prices, check, at, t, when)
            repriced = repriced or was_priced
            events.append(call)
        if content is not None or not tool_calls:
            events.append(check.build(at, MessageEvent, role=role, content=content, t=t))
        for k, raw_call in enumerate(tool_calls):
            sub = f"{at}.tool_calls[{k}]"
            events.extend(_tool_call(check.obj(raw_call, sub), role, check, sub, t))
    return events, repriced


def _greeting(msg: dict[str, Any], tool_calls: list[Any]) -> bool:
    """Whether the conversation's first message is tau2's canned opening, its
    orchestrator's ``DEFAULT_FIRST_AGENT_MESSAGE`` ("Hi! How can I help you today?",
    cost 0, no usage, no generation time): no model produced it. As a model call it
    had no token counts, which made the trial's tokens unknown, and it added one to
    the trial's model calls."""
    return (
        not tool_calls
        and msg.get("usage") is None
        and msg.get("generation_time_seconds") is None
        and msg.get("cost") in (None, 0)
    )


def _model_call(
    msg: dict[str, Any],
    header: _Header,
    prices: PriceTable,
    check: _Check,
    at: str,
    t: float | None,
    when: datetime | None,
) -> tuple[ModelCallEvent, bool]:
    """The model call behind an agent turn, and whether agentgauge priced it:
    tau2 recorded no cost, or litellm's $0 for a call that used tokens (litellm
    answers 0 for a model it cannot price)."""
    usage = check.obj(msg.get("usage"), f"{at}.usage")
    tokens_in = check.count(usage.get("prompt_tokens"), f"{at}.usage.prompt_tokens")
    tokens_out = check.count(usage.get("completion_tokens"), f"{at}.usage.completion_tokens")
    cost = check.number(msg.get("cost"), f"{at}.cost")
    latency = check.number(msg.get("generation_time_seconds"), f"{at}.generation_time_seconds")
    call = check.build(
        at,
        ModelCallEvent,
        model=header.model,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
        latency_s=latency,
        t=t,
    )
    if cost is not None and (cost > 0 or not (tokens_in or tokens_out)):
        return call, False
    counts = None if tokens_in is None or tokens_out is None else Usage(tokens_in, tokens_out)
    # tau2 names models as litellm does (``openai/gpt-4.1``, ``gpt-4.1-2025-04-14``).
    quote = prices.quote((header.model,), counts, provider="litellm", at=when)
    call.cost_usd, call.price_source = quote.usd, quote.source
    return call, True


def _tool_call(
    call: dict[str, Any], role: str, check: _Check, at: str, t: float | None
) -> list[Event]:
    name = check.text(call.get("name"), f"{at}.name", optional=False)
    assert name is not None
    call_id = check.text(call.get("id"), f"{at}.id") or None
    arguments = _arguments(call.get("arguments"))
    if role != "assistant":
        # The user simulator's own tools (telecom): not the agent's actions.
        return [
            check.build(
                at,
                MessageEvent,
                role=role,
                content=f"[{role} tool call] {name} {json.dumps(arguments, default=str)}",
                t=t,
            )
        ]
    out: list[Event] = [
        check.build(at, ToolCallEvent, name=name, arguments=arguments, call_id=call_id, t=t)
    ]
    if name in TRANSFER_TOOLS:
        out.append(ControlEvent(decision="transfer", reason="called " + name, t=t))
    return out


def _tool_result(msg: dict[str, Any], check: _Check, at: str, t: float | None) -> Event:
    content = check.text(msg.get("content"), f"{at}.content")
    error = check.flag(msg.get("error"), f"{at}.error") or False
    requestor = msg.get("requestor", "assistant")
    if requestor != "assistant":
        text = f"[tool result for {requestor}{', error' if error else ''}] {content or ''}"
        return check.build(at, MessageEvent, role="tool", content=text, t=t)
    call_id = check.text(msg.get("id"), f"{at}.id") or None
    return check.build(at, ToolResultEvent, call_id=call_id, content=content, is_error=error, t=t)


# --------------------------------------------------------------------------- grades


def _grades(reward_info: dict[str, Any], check: _Check, where: str) -> list[Grade]:
    """tau2's evaluator checks as grades: each is one criterion of its reward."""
    grades: list[Grade] = []
    db = check.obj(reward_info.get("db_check"), f"{where}.db_check")
    if db:
        grades.append(
            check.build(
                f"{where}.db_check",
                Grade,
                grader="tau2:db",
                passed=check.flag(db.get("db_match"), f"{where}.db_check.db_match"),
                score=_unit(check, db.get("db_reward"), f"{where}.db_check.db_reward"),
            )
        )
    for i, raw in enumerate(
        check.items(reward_info.get("action_checks"), f"{where}.action_checks")
    ):
        at = f"{where}.action_checks[{i}]"
        item = check.obj(raw, at)
        action = check.obj(item.get("action"), f"{at}.action")
        grades.append(
            check.build(
                at,
                Grade,
                grader="tau2:action",
                passed=check.flag(item.get("action_match"), f"{at}.action_match"),
                score=_unit(check, item.get("action_reward"), f"{at}.action_reward"),
                status=item.get("tool_type") if isinstance(item.get("tool_type"), str) else None,
                evidence={"action": action.get("name"), "arguments": action.get("arguments")},
            )
        )
    for key, grader, text_key in (
        ("nl_assertions", "tau2:nl_assertion", "nl_assertion"),
        ("communicate_checks", "tau2:communicate", "info"),
    ):
        for i, raw in enumerate(check.items(reward_info.get(key), f"{where}.{key}")):
            at = f"{where}.{key}[{i}]"
            item = check.obj(raw, at)
            grades.append(
                check.build(
                    at,
                    Grade,
                    grader=grader,
                    passed=check.flag(item.get("met"), f"{at}.met"),
                    evidence={
                        text_key: check.text(item.get(text_key), f"{at}.{text_key}"),
                        "justification": check.text(
                            item.get("justification"), f"{at}.justification"
                        ),
                    },
                )
            )
    for i, raw in enumerate(
        check.items(reward_info.get("env_assertions"), f"{where}.env_assertions")
    ):
        at = f"{where}.env_assertions[{i}]"
        item = check.obj(raw, at)
        grades.append(
            check.build(
                at,
                Grade,
                grader="tau2:env_assertion",
                passed=check.flag(item.get("met"), f"{at}.met"),
                score=_unit(check, item.get("reward"), f"{at}.reward"),
                evidence=item.get("env_assertion"),
            )
        )
    return grades


def _unit(check: _Check, value: Any, where: str) -> float | None:
    number = check.number(value, where)
    if number is not None and number > 1:
        check.fail(where, f"must lie in [0, 1], got {number!r}")
    return number


# --------------------------------------------------------------------------- tasks


def _tasks(items: list[Any], header: _Header, check: _Check, file: Path) -> list[Task]:
    """The run's tasks, each id once: a task repeated as it was (a file merged twice)
    is read once; the same id with other contents is refused, naming both places,
    rather than one of them kept silently."""
    tasks: list[Task] = []
    first: dict[str, tuple[int, Any]] = {}
    for i, raw in enumerate(items):
        task = _task(raw, header, check, f"tasks[{i}]")
        if task.id not in first:
            first[task.id] = (i, raw)
            tasks.append(task)
        elif first[task.id][1] != raw:
            raise InputError(
                f"task {task.id!r} is also tasks[{first[task.id][0]}], with other contents",
                file=file,
                field=f"tasks[{i}].id",
            )
    return tasks


def _task(raw: Any, header: _Header, check: _Check, where: str) -> Task:
    task = check.obj(raw, where)
    task_id = check.ident(task.get("id"), f"{where}.id")
    scenario = check.obj(task.get("user_scenario"), f"{where}.user_scenario")
    instructions = scenario.get("instructions")
    if isinstance(instructions, dict):  # StructuredUserInstructions
        instructions = instructions.get("task_instructions")
    criteria = check.obj(task.get("evaluation_criteria"), f"{where}.evaluation_criteria")
    calls: list[ToolCallSpec] = []
    for k, item in enumerate(
        check.items(criteria.get("actions"), f"{where}.evaluation_criteria.actions")
    ):
        at = f"{where}.evaluation_criteria.actions[{k}]"
        action = check.obj(item, at)
        if action.get("requestor", "assistant") != "assistant":
            continue  # the user simulator's expected actions are not the agent's plan
        name = check.text(action.get("name"), f"{at}.name", optional=False)
        arguments = check.obj(action.get("arguments"), f"{at}.arguments")
        calls.append(check.build(at, ToolCallSpec, name=name, arguments=arguments))
    return check.build(
        where,
        Task,
        id=task_id,
        environment=f"tau2:{header.domain}" if header.domain else "tau2",
        instruction=instructions if isinstance(instructions, str) else "",
        expectations=Expectations(reference_calls=calls),
        metadata={"evaluation_criteria": criteria, "description": task.get("description")},
    )


# --------------------------------------------------------------------------- helpers


def _offset(start: datetime | None, when: datetime | None) -> float | None:
    """Seconds from ``start`` to ``when``; unknown when either is, when one has a
    time zone and the other none (which the difference cannot span), or when ``when``
    is before ``start`` (tau2 writes local times with no zone: a clock step or a change
    from summer time puts a message before its simulation began, and 0 would be a time
    nobody measured)."""
    if start is None or when is None or (start.tzinfo is None) != (when.tzinfo is None):
        return None
    seconds = (when - start).total_seconds()
    return seconds if seconds >= 0 else None


def _total(values: Iterable[int | None]) -> int | None:
    """The sum over the agent's calls; unknown when any call's count is (the sum of
    the others is less than the trial used), or when there is no call."""
    counts = list(values)
    known = [c for c in counts if c is not None]
    return sum(known) if counts and len(known) == len(counts) else None


def _price_sources(trials: list[Trial]) -> dict[str, int]:
    """How many model calls each price source priced (shown in the run's config)."""
    counts: dict[str, int] = {}
    for trial in trials:
        for event in trial.events:
            if isinstance(event, ModelCallEvent) and event.price_source:
                counts[event.price_source] = counts.get(event.price_source, 0) + 1
    return counts
