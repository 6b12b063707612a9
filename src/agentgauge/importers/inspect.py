"""Inspect AI logs (``.eval`` and ``.json``): each sample × epoch becomes a trial.

The field mapping, what is lost and the command are in docs/formats/inspect.md;
the container (ZIP members, chunked samples, zstd, attachments) is read by
`agentgauge.importers.inspect_log`. Field names are Inspect's own
(``inspect_ai/log/_log.py``, ``model/_chat_message.py``, ``event/``).

The outcome is one scorer's value (``--scorer NAME``; default the first scorer in
the log's results), read as Inspect's ``value_to_float`` reads it (``C`` 1,
``P`` 0.5, ``I`` and ``N`` 0, yes/no, true/false, numbers and numeric strings),
and a trial succeeds when that value is at least 1, the threshold of Inspect's
``pass_at`` and ``pass_k`` reducers, so agentgauge's pass^k on an imported log
is what ``pass_k`` reports. Where ``value_to_float`` would count a value it
cannot read as 0, agentgauge refuses it (as the outcome) or records the grade as
unknown: unknown is not a failure.

A model's usage or a model call with tokens and no ``total_cost`` is priced as the
harness prices a call (`agentgauge.agents.prices`: the user's ``--prices`` file,
then genai-prices' bundled snapshot), by the price in force when the sample ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentgauge.agents.prices import PriceTable, Usage, default_prices
from agentgauge.errors import InputError
from agentgauge.importers import ImportedRun, register
from agentgauge.importers.inspect_log import Sample, open_log
from agentgauge.importers.shape import Shape, finite, kind, shown
from agentgauge.schema import (
    SUCCESS_TOLERANCE,
    Event,
    Grade,
    MessageEvent,
    ModelCallEvent,
    Task,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.sources import Element, assign_trial_indices

__all__ = ["read", "score_value"]

#: Inspect's sentinel values (``scorer/_metric.py``: CORRECT, PARTIAL, INCORRECT, NOANSWER).
_SENTINELS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
#: Limits that end a sample for running out of time; the others are budgets.
_TIME_LIMITS = frozenset({"time", "working"})


def score_value(value: Any) -> float | None:
    """An Inspect score value as a number, by ``value_to_float``'s rules; ``None``
    where those rules would give up (and count 0): objects, lists, other strings."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if finite(value) else None
    if isinstance(value, str):
        if value in _SENTINELS:
            return _SENTINELS[value]
        if value.lower() in _WORDS:
            return _WORDS[value.lower()]
        try:
            number = float(value)
        except ValueError:
            return None
        return number if finite(number) else None
    return None


@register("inspect", options=("scorer", "prices"))
def read(path: Path, *, scorer: str | None = None, prices: str | None = None) -> ImportedRun:
    """Read an Inspect log; the first bad element fails as ``FILE [MEMBER]: element: reason``.
    ``prices``: a file of the user's prices (docs/running-agents.md, "Prices")."""
    table = default_prices(prices, warm=False)  # genai-prices once a call needs it
    tasks: dict[str, Task] = {}
    converted: list[_Converted] = []
    with open_log(path) as log:
        header = log.header_shape
        spec = header.obj(log.header.get("eval"), "eval")
        if not log.sample_count:
            raise InputError(
                "the log holds no samples (written with --no-log-samples, or still empty)",
                file=path,
            )
        scorers = _Scorers(_result_scores(log.header, header))
        model = header.text(spec.get("model"), "eval.model")
        agent = _agent(spec, header.obj(log.header.get("plan"), "plan"), header)
        # One raw sample at a time: each is dropped once converted (a sample can be
        # hundreds of MB, most of it events the trial does not keep).
        for sample in log.samples:
            trial, task = _trial(sample, agent, model, table)
            del sample
            scorers.saw(trial.values)
            converted.append(trial)
            tasks.setdefault(task.id, task)
    # The outcome is chosen once every sample's scorers are known (a log with no
    # results names its scorers only in its samples).
    outcome = scorers.outcome(scorer, path)
    trials = [
        (Element(c.shape.path, c.where, task_key="id", trial_key="epoch"), _finish(c, outcome))
        for c in converted
    ]
    task_name = header.text(spec.get("task"), "eval.task")
    return ImportedRun(
        trials=assign_trial_indices(trials, file=path),
        agent=agent,
        model=model,
        suite=f"inspect:{task_name}" if task_name else None,
        tasks=list(tasks.values()),
        config={"inspect": _run_config(log.header, spec, outcome)},
    )


#: A score to read as the outcome: the sample's scorer and, for a scorer whose value
#: is a dict (one score per key, as Inspect reports it), the key.
Outcome = tuple[str, str | None]


def _label(outcome: Outcome) -> str:
    """How ``--scorer`` names an outcome unambiguously: ``scorer`` or ``scorer/key``."""
    scorer, key = outcome
    return scorer if key is None else f"{scorer}/{key}"


def _result_scores(header: dict[str, Any], shape: Shape) -> list[tuple[str, Outcome]]:
    """The scores of the log's results, in order, each as (Inspect's name, outcome).

    Inspect names a scorer's results after the scorer; a scorer whose value is a dict
    gets one result per key, named after the key, with ``scorer`` naming the scorer
    (``_eval/task/results.py``: ``scorer_for_metrics``, ``scorers_from_metric_dict``).
    """
    out: dict[tuple[str, Outcome], None] = {}
    results = shape.obj(header.get("results"), "results")
    for i, raw in enumerate(shape.items(results.get("scores"), "results.scores")):
        where = f"results.scores[{i}]"
        entry = shape.obj(raw, where)
        name = shape.text(entry.get("name"), f"{where}.name")
        owner = shape.text(entry.get("scorer"), f"{where}.scorer")
        if not name:
            continue
        # One result per reducer: the same name again.
        out[name, (owner, name) if owner and owner != name else (name, None)] = None
    return list(out)


class _Scorers:
    """The scores a log offers as the outcome: its results', then the samples'."""

    def __init__(self, results: list[tuple[str, Outcome]]) -> None:
        self.results = results
        #: Scorer -> the keys of its dict values (``None`` while only scalars were seen).
        self.samples: dict[str, dict[str, None] | None] = {}

    def saw(self, values: dict[Outcome, Any]) -> None:
        for scorer, key in values:
            keys = self.samples.setdefault(scorer, None)
            if key is not None:
                if keys is None:
                    keys = self.samples[scorer] = {}
                keys[key] = None

    def known(self) -> list[Outcome]:
        """Every score, the results' first."""
        out = dict.fromkeys(outcome for _, outcome in self.results)
        for scorer, keys in self.samples.items():
            if keys is None:
                out.setdefault((scorer, None), None)
            for key in keys or ():
                out.setdefault((scorer, key), None)
        return list(out)

    def names(self, scorer: str | None = None) -> list[str]:
        """The names ``--scorer`` takes (of ``scorer``'s keys only, when given), as
        Inspect's results show them where they do (a dict key alone), else
        ``scorer/key``."""
        counts: dict[str, int] = {}
        for name, _ in self.results:
            counts[name] = counts.get(name, 0) + 1
        shown_as = {o: n for n, o in self.results if counts[n] == 1}
        return [
            shown_as.get(o, _label(o))
            for o in self.known()
            if scorer is None or (o[0] == scorer and o[1] is not None)
        ]

    def outcome(self, requested: str | None, path: Path) -> Outcome | None:
        """The outcome ``--scorer`` names, by default the first of the log's results
        (the first scorer of the samples in a log without results); ``None`` in a log
        with no scorer at all (every sample errored)."""
        known = self.known()
        if requested is None:
            return known[0] if known else None
        by_name = list(dict.fromkeys(o for n, o in self.results if n == requested))
        if len(by_name) == 1:
            return by_name[0]
        choices = ", ".join(self.names()) or "(none)"
        if len(by_name) > 1:
            raise InputError(
                f"{requested!r} is a score of several scorers; choose one of "
                + ", ".join(_label(o) for o in by_name),
                file=path,
                field="--scorer",
            )
        if (requested, None) in known:
            return requested, None
        keys = self.names(requested)
        if keys:
            raise InputError(
                f"scorer {requested!r} gives a dict of values, each a score of its own; "
                f"choose one of {', '.join(keys)} (or {requested}/KEY)",
                file=path,
                field="--scorer",
            )
        for i, char in enumerate(requested):
            if char == "/" and (requested[:i], requested[i + 1 :]) in known:
                return requested[:i], requested[i + 1 :]
        raise InputError(
            f"the log has no scorer {requested!r}; choose one of {choices}",
            file=path,
            field="--scorer",
        )


def _agent(spec: dict[str, Any], plan: dict[str, Any], shape: Shape) -> str | None:
    """The solver (Inspect's agent): ``eval.solver`` when named, else the plan's steps."""
    solver = spec.get("solver")
    if isinstance(solver, str) and solver:
        return solver
    steps = []
    for i, raw in enumerate(shape.items(plan.get("steps"), "plan.steps")):
        step = shape.obj(raw, f"plan.steps[{i}]")
        name = shape.text(step.get("solver"), f"plan.steps[{i}].solver")
        if name:
            steps.append(name)
    return "+".join(steps) or None


def _run_config(
    header: dict[str, Any], spec: dict[str, Any], outcome: Outcome | None
) -> dict[str, Any]:
    """What identifies the Inspect run, and Inspect's own results to compare with."""
    keep = ("eval_id", "run_id", "task", "task_id", "task_version", "created", "dataset")
    config: dict[str, Any] = {k: spec[k] for k in keep if k in spec}
    config["status"] = header.get("status")
    config["outcome_scorer"] = _label(outcome) if outcome else ""
    if isinstance(spec.get("config"), dict):
        config["epochs"] = spec["config"].get("epochs")
    results = header.get("results")
    if isinstance(results, dict) and isinstance(results.get("scores"), list):
        config["results"] = [
            {
                "name": s.get("name"),
                **({"scorer": s["scorer"]} if s.get("scorer") not in (None, s.get("name")) else {}),
                "reducer": s.get("reducer"),
                "metrics": {
                    k: m.get("value")
                    for k, m in s.get("metrics", {}).items()
                    if isinstance(m, dict)
                },
            }
            for s in results["scores"]
            if isinstance(s, dict) and isinstance(s.get("metrics"), dict)
        ]
    return config


# --------------------------------------------------------------------------- one sample


@dataclass
class _Converted:
    """A sample converted, all but its outcome (chosen once every sample is read)."""

    fields: dict[str, Any]
    """The trial's fields but ``success``, ``score`` and the status."""
    values: dict[Outcome, float | None]
    """Each score the sample holds, as a number (``None``: it cannot be read as one)."""
    unreadable: dict[Outcome, Any]
    """The raw values of the scores that cannot be read as numbers."""
    status: dict[str, Any]
    """The sample's error, or the limit it hit (``{}`` for neither)."""
    errored: bool
    shape: Shape
    where: str


def _trial(
    sample: Sample, agent: str | None, model: str | None, prices: PriceTable
) -> tuple[_Converted, Task]:
    data, shape, at = sample.data, sample.shape, sample.at
    raw_id = data.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        shape.fail(at("id"), f"expected a string or an integer, got {kind(raw_id)}")
    epoch = shape.integer(data.get("epoch"), at("epoch"), minimum=1)
    if epoch is None:
        shape.fail(at("epoch"), "required field is missing")
    task_id = str(raw_id)

    model_events = _model_events(sample, data.get("started_at"), prices)
    events = _transcript(sample, model_events)
    grades, values, unreadable = _grades(sample)
    metadata: dict[str, Any] = {"epoch": epoch}
    for key in ("uuid", "target", "working_time", "turn_count"):
        if data.get(key) is not None:
            metadata[key if key != "uuid" else "inspect_uuid"] = data[key]
    if isinstance(data.get("metadata"), dict) and data["metadata"]:
        metadata["sample_metadata"] = data["metadata"]
    fields: dict[str, Any] = {
        "task_id": task_id,
        "trial": epoch - 1,
        "agent": agent,
        "model": model,
        "events": events,
        "grades": grades,
        # A sample with no transcript left its tool calls unseen: unknown, not 0.
        "tool_calls": sum(1 for e in events if e.type == "tool_call") if events else None,
        "model_calls": len(model_events) if data.get("events") else None,
        "latency_s": shape.number(data.get("total_time"), at("total_time")),
        "answer": _answer(sample),
        "metadata": metadata,
    }
    fields.update(_usage(sample, metadata, prices))
    status = _status(sample, metadata)
    converted = _Converted(
        fields, values, unreadable, status, data.get("error") is not None, shape, sample.where
    )
    return converted, _task(sample, task_id)


def _finish(converted: _Converted, outcome: Outcome | None) -> Trial:
    """The trial, with its outcome read from the ``outcome`` score."""
    fields = dict(converted.fields)
    fields.update(_outcome(converted, outcome))
    return converted.shape.validated(converted.where, Trial, **fields)


def _status(sample: Sample, metadata: dict[str, Any]) -> dict[str, Any]:
    """The sample's error, else the limit it hit."""
    data, shape, at = sample.data, sample.shape, sample.at
    error = data.get("error")
    if error is None:
        return _limit(sample, metadata)
    err = shape.obj(error, at("error"))
    message = shape.text(err.get("message"), at("error.message")) or "error"
    if isinstance(err.get("traceback"), str):
        metadata["error_traceback"] = err["traceback"]
    # Inspect counts an errored sample as not run (it is retried, and left out of
    # the reducers), not as a wrong answer: harness or provider trouble.
    return {"status": "error", "error": message, "error_kind": "infra"}


def _outcome(converted: _Converted, outcome: Outcome | None) -> dict[str, Any]:
    """success, score and status: from the outcome score, the sample's error, its limit."""
    status = converted.status
    if outcome is None or outcome not in converted.values:
        if not converted.errored:
            missing = f"not scored by {_label(outcome)!r}" if outcome else "no scorer in the log"
            status = {"status": "error", "error": missing, "error_kind": "infra"}
        return {"success": False, **status}
    value = converted.values[outcome]
    if value is None:
        scorer, key = outcome
        element = f"scores.{scorer}.value" + (f".{key}" if key is not None else "")
        converted.shape.fail(
            f"{converted.where}.{element}" if converted.where else element,
            f"cannot be read as a number ({shown(converted.unreadable[outcome])}); Inspect "
            "would count it as 0; choose a scorer with numeric or C/I values with --scorer",
        )
    score = min(max(value, 0.0), 1.0)
    if score != value:
        converted.fields["metadata"]["score_raw"] = value
    return {"success": value >= 1 - SUCCESS_TOLERANCE, "score": score, **status}


def _limit(sample: Sample, metadata: dict[str, Any]) -> dict[str, Any]:
    """A limit the sample hit (``EvalSampleLimit``): the agent ran out of its budget.
    Inspect scores such a sample, so the score stands; the status says why it ended."""
    data, shape, at = sample.data, sample.shape, sample.at
    if data.get("limit") is None:
        return {}
    limit = shape.obj(data["limit"], at("limit"))
    kind_ = shape.text(limit.get("type"), at("limit.type"), optional=False)
    amount = shape.number(limit.get("limit"), at("limit.limit"), minimum=None)
    reason = shape.text(limit.get("reason"), at("limit.reason"))
    metadata["limit"] = {"type": kind_, "limit": amount}
    text = f"{kind_} limit reached" + (f" ({amount:g})" if amount is not None else "")
    return {
        "status": "timeout" if kind_ in _TIME_LIMITS else "error",
        "error": f"{text}: {reason}" if reason else text,
        "error_kind": "agent",
    }


def _grades(
    sample: Sample,
) -> tuple[list[Grade], dict[Outcome, float | None], dict[Outcome, Any]]:
    """One grade per scorer (``EvalSample.scores``) and, for a scorer whose value is a
    dict, one per key (``scorer/key``); each score's number; and the raw values of
    those that cannot be read as numbers. A null is Inspect's "unscored" (Inspect
    writes a NaN, which `agentgauge.importers.inspect_log` reads as null): no value
    at all, at the root or under a key."""
    shape, at = sample.shape, sample.at
    grades: list[Grade] = []
    values: dict[Outcome, float | None] = {}
    unreadable: dict[Outcome, Any] = {}
    for name, raw in shape.obj(sample.data.get("scores"), at("scores")).items():
        where = at(f"scores.{name}")
        score = shape.obj(raw, where)
        raw_value = score.get("value")
        evidence = {"value": raw_value}
        for key in ("answer", "explanation"):
            text = shape.text(sample.resolve(score.get(key)), f"{where}.{key}")
            if text is not None:
                evidence[key] = text
        grades.append(_grade(name, raw_value, evidence))
        scored = [((name, None), raw_value)]
        if isinstance(raw_value, dict):
            # Inspect reports each key as a score of its own (its metrics and
            # reducers apply key by key).
            for key, item in raw_value.items():
                grades.append(_grade(f"{name}/{key}", item, {"value": item}))
                scored.append(((name, key), item))
        for outcome, item in scored:
            if item is not None:
                values[outcome] = score_value(item)
                if values[outcome] is None:
                    unreadable[outcome] = item
    return grades, values, unreadable


def _grade(grader: str, value: Any, evidence: dict[str, Any]) -> Grade:
    number = score_value(value)
    return Grade(
        grader=grader,
        # A value outside [0, 1] (a count, a 1-10 rating) has no score here;
        # it stays in the evidence.
        score=number if number is not None and 0 <= number <= 1 else None,
        passed=None if number is None else number >= 1 - SUCCESS_TOLERANCE,
        evidence=evidence,
    )


def _usage(sample: Sample, metadata: dict[str, Any], prices: PriceTable) -> dict[str, Any]:
    """Tokens and cost over the sample's models (``model_usage``). Input tokens are
    Inspect's true total, ``input_tokens`` + cache reads + cache writes (Inspect's
    ``input_tokens`` leaves cached tokens out). A model with no ``total_cost`` is
    priced from its tokens (its ``price_source`` kept beside its usage); cost is known
    only when every model's is."""
    shape, at = sample.shape, sample.at
    usage = shape.obj(sample.data.get("model_usage"), at("model_usage"))
    if not usage:
        return {}
    input_tokens = output_tokens = 0
    costs: list[float | None] = []
    kept: dict[str, Any] = {}
    for name, raw in usage.items():
        parts = _model_usage(
            shape.obj(raw, at(f"model_usage.{name}")), shape, at(f"model_usage.{name}")
        )
        input_tokens += parts["input"]
        output_tokens += parts["output_tokens"]
        kept[name] = {k: v for k, v in parts.items() if k != "input" and v is not None}
        if parts["total_cost"] is None:
            parts["total_cost"], kept[name]["price_source"] = _price(
                prices, name, parts, _when(sample.data.get("started_at"))
            )
        costs.append(parts["total_cost"])
    metadata["model_usage"] = kept
    cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost}


_TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "input_tokens_cache_read",
    "input_tokens_cache_write",
    "reasoning_tokens",
)


def _model_usage(usage: dict[str, Any], shape: Shape, where: str) -> dict[str, Any]:
    """One ``ModelUsage``, checked, with ``input`` the total input tokens."""
    parts: dict[str, Any] = {k: shape.integer(usage.get(k), f"{where}.{k}") for k in _TOKEN_FIELDS}
    parts["total_cost"] = shape.number(usage.get("total_cost"), f"{where}.total_cost")
    parts["input"] = sum(
        parts[k] or 0
        for k in ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")
    )
    parts["output_tokens"] = parts["output_tokens"] or 0
    return parts


def _price(
    prices: PriceTable, model: str | None, parts: dict[str, Any], at: datetime | None
) -> tuple[float | None, str]:
    """The price of one model's tokens (`_model_usage`'s ``parts``) and its source."""
    usage = Usage(
        parts["input"],
        parts["output_tokens"],
        parts["input_tokens_cache_read"],
        parts["input_tokens_cache_write"],
        parts["reasoning_tokens"],
    )
    # Inspect names models provider/model (``openai/gpt-4o``), which the table splits.
    quote = prices.quote((model,), usage, at=at)
    return quote.usd, quote.source


def _model_events(
    sample: Sample, started: Any, prices: PriceTable
) -> list[tuple[str | None, ModelCallEvent]]:
    """One `ModelCallEvent` per Inspect ``model`` event, with the id of the assistant
    message it produced (to place it in the transcript)."""
    shape, at = sample.shape, sample.at
    start = _when(started)
    out: list[tuple[str | None, ModelCallEvent]] = []
    for i, raw in enumerate(shape.items(sample.data.get("events"), at("events"))):
        where = at(f"events[{i}]")
        event = shape.obj(raw, where)
        if event.get("event") != "model":
            continue
        output = shape.obj(event.get("output"), f"{where}.output")
        usage = _model_usage(
            shape.obj(output.get("usage"), f"{where}.output.usage"), shape, f"{where}.output.usage"
        )
        latency = shape.number(output.get("time"), f"{where}.output.time")
        if latency is None:
            latency = shape.number(event.get("working_time"), f"{where}.working_time")
        # ``t`` is when the call returned, as the harness records a model call: Inspect's
        # ``completed``, else its ``timestamp`` (when the call began) in older logs.
        when = _when(event.get("completed")) or _when(event.get("timestamp"))
        offset = (when - start).total_seconds() if when and start else None
        name = shape.text(event.get("model"), f"{where}.model")
        cost, source = usage["total_cost"], None
        if cost is None and output.get("usage"):
            cost, source = _price(prices, name, usage, when or start)
        call = ModelCallEvent(
            t=offset if offset is not None and offset >= 0 else None,
            model=name,
            input_tokens=usage["input"] if output.get("usage") else None,
            output_tokens=usage["output_tokens"] if output.get("usage") else None,
            cost_usd=cost,
            price_source=source,
            latency_s=latency,
        )
        out.append((_produced(output, shape, f"{where}.output"), call))
    return out


def _produced(output: dict[str, Any], shape: Shape, where: str) -> str | None:
    """The id of the message a model call produced (its first choice)."""
    choices = shape.items(output.get("choices"), f"{where}.choices")
    if not choices:
        return None
    message = shape.obj(
        shape.obj(choices[0], f"{where}.choices[0]").get("message"), f"{where}.choices[0].message"
    )
    return message.get("id") if isinstance(message.get("id"), str) else None


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _transcript(
    sample: Sample, model_events: list[tuple[str | None, ModelCallEvent]]
) -> list[Event]:
    """The final conversation (``messages``) as events; each model call just before the
    assistant message it produced, calls that produced none at the end."""
    shape, at = sample.shape, sample.at
    by_message = {mid: call for mid, call in model_events if mid is not None}
    placed: set[int] = set()
    events: list[Event] = []
    for j, raw in enumerate(shape.items(sample.data.get("messages"), at("messages"))):
        where = at(f"messages[{j}]")
        msg = shape.obj(raw, where)
        role = shape.text(msg.get("role"), f"{where}.role", optional=False)
        assert role is not None
        text = _text(sample, msg.get("content"), f"{where}.content")
        call = by_message.get(msg["id"]) if isinstance(msg.get("id"), str) else None
        if call is not None:
            events.append(call)
            placed.add(id(call))
        if role == "tool":
            error = msg.get("error")
            is_error = error is not None
            if is_error and not text:
                err = shape.obj(error, f"{where}.error")
                text = shape.text(err.get("message"), f"{where}.error.message")
            events.append(
                ToolResultEvent(
                    call_id=shape.text(msg.get("tool_call_id"), f"{where}.tool_call_id"),
                    name=shape.text(msg.get("function"), f"{where}.function"),
                    content=text,
                    is_error=is_error,
                )
            )
            continue
        calls = (
            shape.items(msg.get("tool_calls"), f"{where}.tool_calls") if role == "assistant" else []
        )
        if text or not calls:
            events.append(MessageEvent(role=role, content=text))
        for k, raw_call in enumerate(calls):
            call_at = f"{where}.tool_calls[{k}]"
            tool_call = shape.obj(raw_call, call_at)
            name = shape.text(tool_call.get("function"), f"{call_at}.function", optional=False)
            assert name is not None
            arguments = tool_call.get("arguments")
            if isinstance(arguments, dict):
                # A long argument (a file's content, say) may be stored as an attachment.
                arguments = {k: sample.resolve(v) for k, v in arguments.items()}
            else:
                # Inspect keeps arguments it could not parse as text (with a parse_error).
                arguments = {"__unparsed__": sample.resolve(arguments)}
            events.append(
                ToolCallEvent(
                    name=name,
                    arguments=arguments,
                    call_id=shape.text(tool_call.get("id"), f"{call_at}.id"),
                )
            )
    events.extend(call for _, call in model_events if id(call) not in placed)
    return events


def _text(sample: Sample, content: Any, where: str) -> str | None:
    """A message's text: a string, or the ``text`` parts of a content list joined
    (reasoning, images, audio and other parts are not text and are left out)."""
    content = sample.resolve(content)
    if content is None or isinstance(content, str):
        return content
    parts = sample.shape.items(content, where)
    texts = []
    for i, raw in enumerate(parts):
        part = sample.shape.obj(raw, f"{where}[{i}]")
        if part.get("type") == "text":
            text = sample.shape.text(sample.resolve(part.get("text")), f"{where}[{i}].text")
            if text:
                texts.append(text)
    return "\n".join(texts) if texts else None


def _answer(sample: Sample) -> str | None:
    output = sample.shape.obj(sample.data.get("output"), sample.at("output"))
    completion = sample.resolve(output.get("completion"))
    return sample.shape.text(completion, sample.at("output.completion")) or None


def _task(sample: Sample, task_id: str) -> Task:
    """The sample as a task: its input as the instruction, its target kept."""
    data = sample.data
    raw_input = data.get("input")
    if isinstance(raw_input, list):
        users = [m for m in raw_input if isinstance(m, dict) and m.get("role") == "user"]
        instruction = (
            _text(sample, users[0].get("content"), sample.at("input[0].content")) if users else None
        )
    else:
        instruction = (
            sample.resolve(raw_input) if isinstance(sample.resolve(raw_input), str) else None
        )
    metadata = {k: data[k] for k in ("target", "choices") if data.get(k) is not None}
    return sample.shape.validated(
        sample.at("input"),
        Task,
        id=task_id,
        instruction=instruction or "",
        metadata=metadata,
    )
