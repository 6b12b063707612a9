"""How the simulated reference agents follow a retail task's reference plan.

`play` walks ``expectations.reference_calls`` through a `PlanRun`, whose noise
profile decides where the agent slips (`agentgauge.envs.reference_agents`):
refusing or escalating an actionable request, acting on one it must refuse,
guessing a missing fact instead of asking, stopping early, reading instead of
writing, a wrong argument, or an irreversible call without asking first; in a
conversation with follow-ups (a task with checkpoints) it plays each turn's
calls and may also skip a lookup or forget the follow-up. The
wrong arguments are plausible ones from this world's data (another payment
method of the same customer, another item of the order).
"""

from __future__ import annotations

from typing import Any

from agentgauge.envs.reference_agents import FILL, GaveUp, PlanRun, schema_required, typo
from agentgauge.envs.retail import seed
from agentgauge.envs.retail.tools import IRREVERSIBLE
from agentgauge.schema import ToolCallSpec
from agentgauge.textio import is_digits

__all__ = ["play"]


async def play(run: PlanRun) -> None:
    """Follow the task's reference plan, with the run's profile of errors."""
    try:
        await _play(run)
    except GaveUp:
        await run.finish("I'm sorry, our system is not responding; please try again later.")


async def _play(run: PlanRun) -> None:
    exp = run.task.expectations
    meta = run.task.metadata
    control = exp.control
    answer = str(meta.get("reference_answer", "Done."))
    calls = list(exp.reference_calls)
    acting = control in ("act", "confirm", "ask", None)

    if acting and run.chance(run.p.over_refuse if run.p else 0.0):
        if run.rng.random() < 0.5:
            run.s.control("refuse", "unsure this is allowed")
            await run.finish("I'm sorry, I can't help with that request.")
        else:
            await run.call("transfer_to_human", {"summary": "unsure how to proceed"})
            await run.finish("I've transferred you to a human agent.")
        return
    if control in ("refuse", "transfer") and run.chance(run.p.under_refuse if run.p else 0.0):
        await _act_anyway(run, calls)
        return

    # Ask for the missing fact before the first write, or before the last read when
    # the task only looks something up.
    first_write = next((i for i, c in enumerate(calls) if _is_write(c.name)), None)
    ask_at = first_write if first_write is not None else max(len(calls) - 1, 0)
    if exp.checkpoints:
        await _play_turns(run)
        return
    for i, call in enumerate(calls):
        if i == ask_at and control == "ask" and "ask" in meta:
            if run.chance(run.p.guess if run.p else 0.0):
                call = _corrupt(run, call)  # a guess is usually wrong
            else:
                run.s.control("ask", "a fact needed for the request is missing")
                await run.s.say(str(meta["ask"]))
        step = await _step(run, call)
        if step == "stopped":
            return
        if step == "declined":
            break

    declined = meta.get("declined_call")
    if isinstance(declined, dict):
        spec = ToolCallSpec.model_validate(declined)
        if run.chance(run.p.skip_confirm if run.p else 0.0):
            await run.call(spec.name, spec.arguments)
            await run.finish("Done.")
            return
        if not await run.confirm(spec):
            await run.finish(answer)
            return
    if control == "refuse":
        run.s.control("refuse", "the policy does not allow this request")
    await run.finish(answer)


async def _step(run: PlanRun, call: ToolCallSpec) -> str:
    """One step of the plan, with the profile's slips: ``stopped`` (the agent stopped
    early and finished), ``declined`` (the user said no to an irreversible call) or
    ``done``."""
    if run.chance(run.p.early_stop if run.p else 0.0):
        run.s.control("stop", "stopping early")
        await run.finish("I've looked into it; is there anything else?")
        return "stopped"
    if call.name == "transfer_to_human":
        await run.call(call.name, call.arguments)
        return "done"
    if _is_write(call.name):
        if run.chance(run.p.wrong_call if run.p else 0.0):
            await _read_instead(run, call)
            return "done"
        if run.chance(run.p.wrong_args if run.p else 0.0):
            call = _corrupt(run, call)
        if (
            call.name in IRREVERSIBLE
            and not run.chance(run.p.skip_confirm if run.p else 0.0)
            and not await run.confirm(call)
        ):
            return "declined"
    await run.call(call.name, call.arguments)
    return "done"


async def _play_turns(run: PlanRun) -> None:
    """A conversation with follow-ups: each turn's plan is its checkpoint's calls, and
    the turn is handed back with a statement, to which the user replies with the next
    request. Two slips belong to such conversations: skipping an order lookup (it
    leaves no mark on the state, so only the turn's call check sees it) and
    forgetting a follow-up (acknowledging it without acting)."""
    checkpoints = run.task.expectations.checkpoints
    meta = run.task.metadata
    said = meta.get("turn_answers")
    earlier = [str(a) for a in said] if isinstance(said, list) else []
    final = str(meta.get("reference_answer", "Done."))
    for i, cp in enumerate(checkpoints):
        forgot = i > 0 and run.chance(run.p.forget_follow_up if run.p else 0.0)
        for call in [] if forgot else cp.calls:
            lookup = call.name.startswith("get_")
            if lookup and run.chance(run.p.skip_lookup if run.p else 0.0):
                continue
            step = await _step(run, call)
            if step == "stopped":
                return
            if step == "declined":
                break
        last = i == len(checkpoints) - 1
        text = final if last else earlier[i] if i < len(earlier) else "Done."
        if last:
            await run.finish(text)
        elif await run.s.say(text) is None:  # the user left: no follow-up came
            run.s.answer(text)
            return


async def _read_instead(run: PlanRun, call: ToolCallSpec) -> None:
    order = call.arguments.get("order_id")
    if isinstance(order, str):
        await run.call("get_order_details", {"order_id": order})


async def _act_anyway(run: PlanRun, calls: list[ToolCallSpec]) -> None:
    """Under-refusal: do the forbidden thing (a minefield) or skip the hand-off."""
    for call in calls:
        if call.name == "transfer_to_human" or _is_write(call.name):
            continue
        await run.call(call.name, call.arguments)
    mines = run.task.expectations.minefields
    if mines:
        mine = mines[0]
        schema = _required(run.s.tools, mine.tool)
        args = {k: FILL.get(k, "") for k in schema if k not in mine.arguments}
        args.update(mine.arguments)
        if "order_id" in schema and "order_id" not in mine.arguments:
            args["order_id"] = _first_order(run.task.instruction)
        if "payment_id" in args and "payment_id" not in mine.arguments:
            order = next((o for o in seed.ORDERS if o[0] == args.get("order_id")), None)
            args["payment_id"] = order[5] if order else "card_4242"
        await run.call(mine.tool, args)
    await run.finish("I've taken care of that for you.")


def _corrupt(run: PlanRun, call: ToolCallSpec) -> ToolCallSpec:
    """A plausible wrong argument: another payment method, item, reason, ZIP or amount."""
    args = dict(call.arguments)
    keys: list[str] = [
        k for k in ("item_ids", "payment_id", "reason", "zip", "amount") if k in args
    ]
    if not keys:
        keys = [k for k in args if k != "summary"] or list(args)
    if not keys:
        return call
    key = keys[int(run.rng.integers(len(keys)))]
    value = args[key]
    if key == "payment_id":
        owner = next((p[1] for p in seed.PAYMENT_METHODS if p[0] == value), None)
        others = [p[0] for p in seed.PAYMENT_METHODS if p[1] == owner and p[0] != value]
        args[key] = others[0] if others else "card_4242"
    elif key == "item_ids":
        order = next((o for o in seed.ORDERS if o[0] == args.get("order_id")), None)
        items = list(order[7]) if order else []
        args[key] = items if items != list(value) else items[:1] or value
        if args[key] == value:
            args[key] = [*value, "1001"]
    elif key == "reason":
        args[key] = "ordered by mistake" if value != "ordered by mistake" else "no longer needed"
    elif key == "amount":
        args[key] = float(value) * 2 + 5
    elif key == "order_id":
        args[key] = f"W{int(str(value)[1:]) + 1}" if is_digits(str(value)[1:]) else value
    else:
        args[key] = typo(str(value))
    return ToolCallSpec(name=call.name, arguments=args)


def _is_write(name: str) -> bool:
    return not name.startswith(("get_", "find_")) and name != "transfer_to_human"


def _required(tools: list[dict[str, Any]], name: str) -> list[str]:
    for tool in tools:
        fn = tool.get("function", {})
        if fn.get("name") == name:
            return schema_required(fn)
    return []


def _first_order(text: str) -> str:
    for word in text.replace(",", " ").replace(".", " ").split():
        if word.startswith("W") and is_digits(word[1:]):
            return word
    return "W1001"
