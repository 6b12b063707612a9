"""``agentgauge run SUITE --agent AGENT``: run trials into the store (resumable).

At the end it prints the run's errors by class (`agentgauge.harness.error_summary`)
and one line of totals. A run the circuit breaker stopped (exit 3) or Ctrl-C
interrupted (exit 130) prints the same, then the command that resumes it (or, when
every cell already has a trial, that a resume would run nothing).
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from agentgauge.cli import app
from agentgauge.cli.common import (
    DEFAULT_STORE_PATH,
    StoreOption,
    console,
    err_console,
    options_typed,
    split_list,
)
from agentgauge.display import shell_command, visible
from agentgauge.errors import InputError, RunEnded, RunTakenOver
from agentgauge.report.formats import counted

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentgauge.harness.error_summary import ErrorClass, ErrorMessage
    from agentgauge.schema import Task, Trial


@app.command("run")
def run_cmd(
    suite: Annotated[
        str, typer.Argument(metavar="SUITE", help="builtin:retail, or a YAML/JSONL file of tasks.")
    ],
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="openai:MODEL, cmd:PROGRAM ARGS, http:URL, builtin:NAME or "
            "package.module:function.",
        ),
    ],
    trials: Annotated[
        int | None, typer.Option("--trials", "-k", help="Trials per task and variant [1].")
    ] = None,
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants",
            help="Comma list: base, paraphrase, paraphrase:N, fault, fault:KIND, env:KIND "
            "(default: base).",
        ),
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-j", help="Trials at once [8].")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per trial; 0 for none [300].")
    ] = None,
    store: StoreOption = DEFAULT_STORE_PATH,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Name the run; an existing id resumes it.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="Run seed [0].")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Endpoint for openai: agents.")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="Environment variable holding the API key (openai: and http: agents).",
        ),
    ] = None,
    prices: Annotated[
        str | None,
        typer.Option("--prices", help="JSON/YAML file: model -> {input, output} USD per 1M."),
    ] = None,
    max_turns: Annotated[
        int | None,
        typer.Option(
            "--max-turns",
            min=1,
            help="openai: agents: model calls per trial before the conversation is cut "
            "off as the agent's error [50].",
        ),
    ] = None,
    paraphrases: Annotated[
        int | None,
        typer.Option("--paraphrases", help="Use at most this many paraphrases per task."),
    ] = None,
    infra_retries: Annotated[
        int, typer.Option("--infra-retries", help="Re-run a trial that hit an infra error.")
    ] = 0,
    backend: Annotated[
        str,
        typer.Option("--backend", help="local (asyncio in this process) or ray (docs/ray.md)."),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="With --backend ray: the cluster (auto, ray://HOST:10001); "
            "without it a local Ray instance is started.",
        ),
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option("--progress/--no-progress", help="Progress bar (default: on a TTY)."),
    ] = None,
    include_heldout: Annotated[
        bool,
        typer.Option(
            "--include-heldout", help="Also run the suite's held-out tasks (logged in the store)."
        ),
    ] = False,
    preflight: Annotated[
        bool,
        typer.Option(
            "--preflight/--no-preflight",
            help="Check the agent once before the first trial (docs/running-agents.md).",
        ),
    ] = True,
    breaker_first: Annotated[
        int,
        typer.Option(
            "--breaker-first",
            help="Stop (exit 3) if the first N trials are all infra errors; 0: never.",
        ),
    ] = 10,
    breaker_window: Annotated[
        int,
        typer.Option(
            "--breaker-window",
            help="Stop (exit 3) if more than half of the last N trials are infra errors; 0: never.",
        ),
    ] = 50,
    baseline_role: Annotated[
        str | None,
        typer.Option(
            "--baseline-role",
            metavar="ROLE",
            help="Mark the run as a baseline: null, previous, human or ablation "
            "(docs/compare-and-plan.md).",
        ),
    ] = None,
    show_errors: Annotated[
        int,
        typer.Option(
            "--show-errors",
            min=0,
            help="Error messages shown per class at the end [3]; rerunning a finished run "
            "with its --run-id runs nothing and shows them again.",
        ),
    ] = 3,
) -> None:
    """Run an agent over a suite: trials x variants per task, each in a fresh environment."""
    from agentgauge.harness.runner import run

    if timeout is not None and not (math.isfinite(timeout) and timeout >= 0):
        # NaN compares false with everything: it must be refused, not read as "no timeout".
        raise InputError(
            f"must be a finite number of seconds >= 0 (0 for none), got {timeout}",
            field="--timeout",
        )
    if api_key_env is not None and not os.environ.get(api_key_env):
        # Named on purpose, then unset (a typo, a shell that did not export it): every
        # request would go without a key, and fail as the endpoint's refusal.
        raise InputError(
            f"the environment variable {api_key_env} is not set (or is empty): export it, "
            "or leave --api-key-env out for an endpoint that takes no key",
            field="--api-key-env",
        )
    options: dict[str, Any] = {}
    if agent.startswith("openai:"):
        options = {"base_url": base_url, "api_key_env": api_key_env, "prices": prices}
        options["max_turns"] = max_turns
    elif agent.startswith("http:") and not (base_url or prices or max_turns):
        options = {"api_key_env": api_key_env}
    elif base_url or api_key_env or prices or max_turns:
        openai_only = {
            "--base-url": base_url,
            "--api-key-env": api_key_env,
            "--prices": prices,
            "--max-turns": max_turns,
        }
        named = [name for name, value in openai_only.items() if value]
        # Name what the user typed (the option that does not fit), not --agent.
        also = f" (and {' and '.join(named[1:])})" if len(named) > 1 else ""
        raise InputError(
            f"applies to openai: agents, not {agent}{also}; of --base-url, --api-key-env, "
            "--prices and --max-turns, only --api-key-env also applies to http: agents",
            field=named[0],
        )
    the_suite: Any = suite
    if include_heldout:
        from agentgauge.suite import load_suite

        the_suite = load_suite(suite, include_heldout=True)
    # An empty --variants is refused as `--variants ,` is, not read as the default.
    variant_list = None if variants is None else split_list(variants)
    # Every option given is repeated by the resume command, the run's design included: a
    # run that saved no trial is not kept, so nothing of it comes back from its header,
    # and repeating a design a kept run recorded is accepted as the same design.
    given: dict[str, Any] = {
        "--trials": trials,
        "--variants": None if variant_list is None else ",".join(variant_list),
        "--seed": seed,
        "--concurrency": concurrency,
        "--timeout": timeout,
        "--paraphrases": paraphrases,
        "--base-url": base_url,
        "--api-key-env": api_key_env,
        "--prices": prices,
        "--max-turns": max_turns,
        "--infra-retries": infra_retries or None,
        "--backend": None if backend == "local" else backend,
        "--ray-address": ray_address,
        "--include-heldout": include_heldout or None,
        "--no-preflight": (not preflight) or None,
        "--breaker-first": None if breaker_first == 10 else breaker_first,
        "--breaker-window": None if breaker_window == 50 else breaker_window,
        "--baseline-role": baseline_role,
    }
    ended: RunEnded | None = None
    try:
        # The harness names the agent spec by its Python parameter (`agent`); here the
        # user typed it as an option, so a refusal names the option they can fix.
        with options_typed(agent="--agent"):
            header = run(
                the_suite,
                agent,
                trials=trials,
                variants=variant_list,
                concurrency=concurrency,
                timeout=timeout,
                seed=seed,
                store=store,
                run_id=run_id,
                progress=progress,
                max_paraphrases=paraphrases,
                infra_retries=infra_retries,
                backend=backend,
                ray_address=ray_address,
                agent_options=options,
                preflight=preflight,
                breaker_first=breaker_first,
                breaker_window=breaker_window,
                notify=lambda message: err_console().print(Text(message)),
                baseline_role=baseline_role,
            )
        the_run_id = header.run_id
    except RunEnded as exc:
        ended, the_run_id = exc, exc.run_id
    if ended is None or ended.saved:
        saved = header.n_trials if ended is None else ended.saved
        trials_, tasks = _saved_trials(store, the_run_id, saved)
        _print_summary(trials_, the_run_id, store, show_errors, tasks)
    # else: stopped before its first trial was saved, the run was not kept (nor the store
    # made, before it was opened): there is nothing to sum up, and nothing to read.
    if ended is not None:
        if isinstance(ended, RunTakenOver):  # the session that took it over goes on
            err_console().print(Text(ended.reason))
        elif ended.saved < ended.total:
            again = _resume_command(suite, agent, store, the_run_id, given)
            err_console().print(Text(f"{ended.reason}; resume with: {again}"))
        else:
            # Every cell holds a trial (the breaker tripped after the last launch, or the
            # run was too short to trip while it went): a resume would run nothing.
            err_console().print(
                Text(
                    f"{ended.reason}; every cell has a trial, so resuming would run "
                    "nothing: once the cause is fixed, run again with a new --run-id"
                )
            )
        raise typer.Exit(ended.exit_code)


def _saved_trials(
    store: str, run_id: str, saved: int | None
) -> tuple[list[Trial], dict[str, Task]]:
    """The run's trials and tasks read back for the summary, which must hold the
    ``saved`` trials the run committed: a store deleted or replaced while the run wrote
    (its folder removed, another run's store copied over it) ended as "no such store",
    or as a run of 0 trials with exit 0."""
    from agentgauge.store import Store

    lost = InputError(
        f"the store was removed or replaced while run {run_id!r} wrote to it: the "
        f"{counted(saved, 'trial') if saved is not None else 'trials'} it saved "
        + (
            "is not kept (run the command again to run it afresh)"
            if saved == 1
            else "are not kept (run the command again to run them afresh)"
        ),
        file=store,
    )
    if not Path(store).exists():
        raise lost
    with Store(store, readonly=True) as db, db.snapshot():
        if db.get_run(run_id) is None:
            raise lost
        trials_ = db.trials(run_id, events=False, grades=True)
        tasks = {t.id: t for t in db.get_tasks(run_id)}
    if saved is not None and len(trials_) < saved:
        raise InputError(
            f"the store was removed or replaced while run {run_id!r} wrote to it: it "
            f"holds {len(trials_)} of the {counted(saved, 'trial')} the run saved",
            file=store,
        )
    return trials_, tasks


def _print_summary(
    trials_: list[Trial],
    run_id: str,
    store: str,
    per_class: int,
    tasks: Mapping[str, Task] | None = None,
) -> None:
    from agentgauge.harness.error_summary import (
        summarize_errors,
        summarize_ungraded,
        ungraded_lines,
    )
    from agentgauge.metrics.cost import unpriced_label
    from agentgauge.report.formats import money

    out = console()
    classes = summarize_errors(trials_, per_class=per_class)
    for cls in classes:
        out.print(_class_lines(cls), soft_wrap=True)
    # Completed trials stored as failures though no grader judged them failed: said
    # here, or "success 0.0%, no errors" hid a grader's crash as the agent's failure.
    raised, unknown = summarize_ungraded(trials_, tasks, per_class=per_class)
    # The new grade version is what the run then reports (without --activate it would
    # be stored beside the recorded one and change nothing).
    regrade = shell_command(["agentgauge", "grade", f"{store}:{run_id}", "--activate"])
    for header, messages, advice in ungraded_lines(raised, unknown, regrade):
        out.print(_ungraded_text(header, messages, advice), soft_wrap=True)
    shown = [(c.distinct, len(c.messages)) for c in classes]
    shown += [(u.distinct, len(u.messages)) for u in (raised, unknown) if u is not None]
    hidden = sum(distinct - listed for distinct, listed in shown)
    if hidden and per_class > 0:  # 0 asks for the counts alone
        most = max(distinct for distinct, _ in shown)
        out.print(
            Text(
                f"{hidden} more distinct messages: rerun with --run-id {run_id} "
                f"--show-errors {most} (a finished run runs nothing again)"
            ),
            soft_wrap=True,
        )
    n = len(trials_)
    passed = sum(t.passed for t in trials_)  # an infra error is a failure, as in the metrics
    # The classes printed above, by the same names and counts: counting every agent
    # trial that did not complete as "agent errors" put its timeouts in it too, under
    # a line that had just listed them apart.
    errors = ", ".join(_short(c.counted) for c in classes) or "no errors"
    costs = [t.cost_usd for t in trials_ if t.cost_usd is not None]
    # A total with an unpriced part is unknown; what is priced is a lower bound (costs >= 0).
    if n == 0:
        spend = "-"  # no trial saved: nothing measured (an interrupted one may have spent)
    elif not math.isfinite(sum(costs)):  # each trial's cost is finite; their sum may not be
        spend = "past the largest float (about 1.8e308): no total"
    elif len(costs) == n:
        spend = money(sum(costs))  # as every report writes dollars: $9.00e-06, not $0.0000
    elif costs:
        spend = f"at least {money(sum(costs))} ({n - len(costs)} of {counted(n, 'trial')} unpriced)"
    else:
        spend = unpriced_label(n, n)
    rate = f"{passed / n:.1%}" if n else "-"
    line = Text("run ")
    line.append(run_id, style="bold")
    line.append(f" in {store}: {counted(n, 'trial')}, success {rate}, {errors}, spend {spend}")
    out.print(line, soft_wrap=True)
    if passed < n:
        # Which trials failed, and why, is one command away; the summary names only classes.
        command = shlex.join(["agentgauge", "show", f"{store}:{run_id}", "--failed"])
        out.print(
            Text(f"see which trials did not pass, and why: {visible(command)}"), soft_wrap=True
        )


def _short(name: str) -> str:
    """An error class's name without its gloss (``agent timeouts (the agent hung)``),
    for the totals line; an unclassified one keeps it."""
    return name if name.endswith("(unclassified)") else name.split(" (")[0]


def _class_lines(cls: ErrorClass) -> Text:
    from agentgauge.harness.error_summary import one_line

    # Text, not markup: an agent's message is untrusted and may contain [brackets].
    text = Text()
    text.append(cls.counted, style="bold red" if cls.infra else "bold yellow")
    text.append(f" ({cls.distinct} distinct messages)" if cls.distinct > 1 else "")
    for m in cls.messages:
        text.append(f"\n  {m.count:>5} x ")
        text.append(one_line(m.text))
        text.append(f"  (e.g. {visible(m.example)})", style="dim")
    return text


def _ungraded_text(header: str, messages: list[ErrorMessage], advice: str) -> Text:
    """`ungraded_lines`'s group as `_class_lines` prints an error class."""
    from agentgauge.harness.error_summary import one_line

    text = Text()
    text.append(header, style="bold yellow")
    for m in messages:
        text.append(f"\n  {m.count:>5} x ")
        text.append(one_line(m.text))
        text.append(f"  (e.g. {visible(m.example)})", style="dim")
    text.append(f"\n  {advice}")
    return text


def _resume_command(suite: str, agent: str, store: str, run_id: str, given: dict[str, Any]) -> str:
    """The command that resumes this run: every option ``given`` is repeated, the design
    (trials, variants, seed...) included, since a run interrupted before its first trial
    was saved is not kept and has no header to take it from."""
    argv = ["agentgauge", "run", suite, "--agent", agent, "--store", store, "--run-id", run_id]
    for flag, value in given.items():
        if value is True:
            argv.append(flag)
        elif value is not None:
            argv += [flag, str(value)]
    return shlex.join(argv)
