"""How the simulated reference agents answer a function-calling task.

`play` makes the calls of the task's BFCL answer key, taking the first
acceptable value of each argument, with the run's profile of errors: a wrong
argument, a call to another offered function, a parallel call left out, an
irrelevant call where none is due, or a refusal (`agentgauge.envs.reference_agents`).
"""

from __future__ import annotations

from typing import Any

from agentgauge.envs.reference_agents import FILL, PlanRun, schema_required, typo

__all__ = ["play"]


async def play(run: PlanRun) -> None:
    """Answer with the key's calls, with the run's profile of errors."""
    exp = run.task.expectations
    category = exp.call_category
    key = exp.answer_key or []
    if category == "irrelevance" or not key:
        if exp.functions and run.chance(0.25 if run.p and run.p.guess > 0.2 else 0.05):
            fn = exp.functions[0]
            args = {k: FILL.get(k, "x") for k in schema_required(fn)}
            await run.call(str(fn.get("name")), args)
            await run.finish("Done.")
            return
        await run.finish("None of the available functions can do that.")
        return
    if run.chance(run.p.over_refuse if run.p else 0.0):
        await run.finish("I can't help with that.")
        return
    names = [str(f.get("name")) for f in exp.functions]
    for entry in key:
        # A loaded suite's key is in BFCL's form (the loader refuses others); a task
        # built in Python is read as the grader reads it (`agentgauge.graders.ast`): the
        # entry's first name, and a value that is no list as the one acceptable value.
        name, params = next(iter(entry.items()))
        params = params if isinstance(params, dict) else {}
        firsts = {p: v[0] if isinstance(v, list) else v for p, v in params.items() if v != []}
        args = {p: first for p, first in firsts.items() if first != ""}
        if len(key) > 1 and run.chance(run.p.early_stop * 5 if run.p else 0.0):
            continue  # a parallel call left out
        if run.chance(run.p.wrong_args if run.p else 0.0) and args:
            p = sorted(args)[int(run.rng.integers(len(args)))]
            args[p] = _perturb(args[p])
        if len(names) > 1 and run.chance(run.p.wrong_call if run.p else 0.0):
            name = next(n for n in names if n != name)
        await run.call(name, args)
    await run.finish("Done.")


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return typo(value)
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, "x"]
    return value
