"""A retail task's expected final state, from its reference plan.

Task authors write the reference calls, not whole database states: the
expected state is whatever the reference plan produces on a fresh copy of the
task's initial database. A reference call that fails is a defect in the task,
reported when the suite loads.
"""

from __future__ import annotations

from typing import Any

from agentgauge.envs.base import ToolOutcome
from agentgauge.envs.builtin import TaskDefect
from agentgauge.envs.retail.env import RetailEnv
from agentgauge.schema import Task, ToolCallEvent, ToolCallSpec

__all__ = ["check_state_assertions", "check_turn_plan", "complete", "replay"]


def complete(task: Task) -> Task:
    """``task`` with ``expectations.final_state`` computed by `replay`, when it
    declares neither a final state nor state assertions.

    A task with checkpoints (one per user turn) may leave ``reference_calls`` out:
    its plan is then its checkpoints' calls, turn after turn. Each checkpoint must
    hold on that plan, or the task is defective (`check_turn_plan`).
    """
    task = check_turn_plan(task)
    exp = task.expectations
    # Every reference and checkpoint call is run here as written: a list argument is
    # one value, also when graded (`mark_as_written`).
    from agentgauge.graders.trajectory import mark_as_written

    task = mark_as_written(task)
    if exp.state_assertions and exp.reference_calls:
        check_state_assertions(task)
    if exp.final_state is not None or exp.state_assertions:
        return task
    if not exp.reference_calls and not _decided_otherwise(task):
        # An empty plan's "final state" is the database unchanged: a check that a
        # task with nothing else to check would pass by doing nothing (an instruction
        # alone let `builtin:null` score 100%). Left out, the task is refused as one
        # that nothing grades; beside a control or answer check it stays, and says the
        # agent must change nothing.
        return task
    state = replay(task)
    return task.model_copy(update={"expectations": exp.model_copy(update={"final_state": state})})


def check_state_assertions(task: Task) -> None:
    """Raise `TaskDefect` naming the first of the task's ``state_assertions`` that does
    not hold on the final state of its reference plan: a typo in a path
    (``orders.W1001.stauts``) loaded, and the oracle then failed every trial."""
    # The state grader's rules, so that "holds" means what grading means.
    from agentgauge.graders.state import failed_assertions

    state = replay(task)
    for i, assertion in enumerate(task.expectations.state_assertions):
        failed = failed_assertions(state, [assertion])
        if failed:
            raise TaskDefect(
                f"does not hold on the final state of the reference calls ({failed[0]})",
                ("expectations", "state_assertions", i),
            )


def check_turn_plan(task: Task) -> Task:
    """``task`` with ``reference_calls`` filled in from its checkpoints when absent,
    after checking that it declares one checkpoint per user turn and that each
    holds when the reference plan is played turn by turn on a fresh environment."""
    # The checkpoints grader's own rules, so that "holds on its plan" means what grading
    # means; imported here because only a task with checkpoints needs them.
    from agentgauge.graders.checkpoints import check_checkpoint
    from agentgauge.turns import Turn

    exp = task.expectations
    if not exp.checkpoints:
        return task
    n_turns = 1 + len(task.user_scenario.get("follow_ups", []))
    if len(exp.checkpoints) != n_turns:
        raise TaskDefect(
            f"{len(exp.checkpoints)} checkpoint(s) for {n_turns} user turn(s) (the "
            "instruction and each of user_scenario.follow_ups); declare one per turn",
            ("expectations", "checkpoints"),
        )
    given = bool(exp.reference_calls)
    if not given:
        plan = [call for cp in exp.checkpoints for call in cp.calls]
        exp = exp.model_copy(update={"reference_calls": plan})
        task = task.model_copy(update={"expectations": exp})
    env = RetailEnv(task, seed=0)
    states = [env.final_state()]  # before any call, then after each checkpoint's calls
    try:
        for i, cp in enumerate(exp.checkpoints):
            calls = [_call(env, call, f"checkpoint {i + 1}'s call {j}", (i, j))
                     for j, call in enumerate(cp.calls)]  # fmt: skip
            states.append(env.final_state())
            turn = Turn(index=i + 1, start=0, end=0, calls=calls, state=states[-1])
            result = check_checkpoint(cp, i + 1, turn, exp.functions, written=True)
            if result["verdict"] != "pass":
                state, checked = result["state"] or {}, result["calls"] or {}
                why = [*state.get("failed", []), *state.get("paths", [])]
                why += [f"missing call {m['name']}" for m in checked.get("missing", [])]
                raise TaskDefect(
                    f"checkpoint {i + 1} does not hold on its own calls "
                    f"({result['status']}): {'; '.join(why)}",
                    ("expectations", "checkpoints", i),
                )
    finally:
        env.close()
    if given:
        _check_same_end(states, replay(task))
    return task


def _check_same_end(states: list[dict[str, Any]], reference: dict[str, Any]) -> None:
    """Raise `TaskDefect` when the checkpoints' calls, turn after turn, leave another
    state than the task's own ``reference_calls``: the final state is derived from the
    latter and each checkpoint checked on the former, so no trial could pass both (a
    checkpoint that cancels an order the reference calls only read loaded, and the
    reference agent then failed). Named: the first checkpoint whose calls change a
    path where the two differ, else the last."""
    from agentgauge.graders.state import diff_paths

    differ = diff_paths(reference, states[-1])
    if not differ:
        return

    def related(p: str, q: str) -> bool:
        return p == q or p.startswith(f"{q}.") or q.startswith(f"{p}.")

    at = len(states) - 2
    for i in range(len(states) - 1):
        changed = diff_paths(states[i], states[i + 1])
        if any(related(p, q) for p in differ for q in changed):
            at = i
            break
    shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
    raise TaskDefect(
        f"the checkpoints' calls, turn after turn, leave another state than reference_calls "
        f"do (they differ at {shown}; checkpoint {at + 1} is the first whose calls change "
        "one), so no trial could pass both: make reference_calls change what the checkpoints' "
        "calls change, or leave them out",
        ("expectations", "checkpoints", at),
    )


def _call(env: RetailEnv, call: ToolCallSpec, what: str, at: tuple[int, int]) -> ToolCallEvent:
    loc = ("expectations", "checkpoints", at[0], "calls", at[1])
    outcome = _played(env, call, what, loc)
    if outcome.is_error:
        raise TaskDefect(f"{what} ({call.name}) failed on a fresh environment: {outcome.content}",
                         loc)  # fmt: skip
    return ToolCallEvent(name=call.name, arguments=call.arguments)


def _played(
    env: RetailEnv, call: ToolCallSpec, what: str, loc: tuple[str | int, ...]
) -> ToolOutcome:
    """The outcome of one call of the task's plan. What the world raises (rather than
    returns as an error result) is refused at the call's line: data in the task's
    ``initial_state`` the tools cannot work with was a Python traceback."""
    try:
        return env.call_tool(call.name, call.arguments)
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise TaskDefect(
            f"{what} ({call.name}) broke the world on a fresh environment ({said}); check the "
            "task's initial_state",
            loc,
        ) from None


def replay(task: Task) -> dict[str, Any]:
    """The final state after running ``task.expectations.reference_calls`` in order.

    Raises `TaskDefect` naming the first reference call that returns an error
    (`ValueError` for a bad ``initial_state``).
    """
    env = RetailEnv(task, seed=0)
    try:
        for i, call in enumerate(task.expectations.reference_calls):
            loc = ("expectations", "reference_calls", i)
            outcome = _played(env, call, f"reference call {i}", loc)
            if outcome.is_error:
                raise TaskDefect(
                    f"reference call {i} ({call.name}) failed on a fresh environment: "
                    f"{outcome.content}",
                    loc,
                )
        return env.final_state()
    finally:
        env.close()


def _decided_otherwise(task: Task) -> bool:
    """Whether a grader other than the state check decides ``task``'s outcome."""
    from agentgauge.graders import decides_outcome

    return decides_outcome(task)
