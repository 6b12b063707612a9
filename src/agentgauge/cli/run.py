"""``agentgauge run SUITE --agent AGENT``: run trials into the store (resumable)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, StoreOption, console, split_list
from agentgauge.errors import InputError


@app.command("run")
def run_cmd(
    suite: Annotated[
        str, typer.Argument(metavar="SUITE", help="builtin:retail, or a YAML/JSONL file of tasks.")
    ],
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="openai:MODEL, cmd:PROGRAM ARGS, builtin:NAME or package.module:function.",
        ),
    ],
    trials: Annotated[
        int | None, typer.Option("--trials", "-k", help="Trials per task and variant [1].")
    ] = None,
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants",
            help="Comma list: base, paraphrase, paraphrase:N, fault, fault:KIND, env:KIND [base].",
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
    seed: Annotated[int | None, typer.Option("--seed", help="Run seed [0].")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Endpoint for openai: agents.")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option("--api-key-env", help="Environment variable holding the API key."),
    ] = None,
    prices: Annotated[
        str | None,
        typer.Option("--prices", help="JSON/YAML file: model -> {input, output} USD per 1M."),
    ] = None,
    paraphrases: Annotated[
        int | None,
        typer.Option("--paraphrases", help="Use at most this many paraphrases per task."),
    ] = None,
    infra_retries: Annotated[
        int, typer.Option("--infra-retries", help="Re-run a trial that hit an infra error.")
    ] = 0,
    backend: Annotated[str, typer.Option("--backend", help="local (ray: not yet).")] = "local",
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Progress bar [on a TTY].")
    ] = None,
    include_heldout: Annotated[
        bool,
        typer.Option(
            "--include-heldout", help="Also run the suite's held-out tasks (logged in the store)."
        ),
    ] = False,
) -> None:
    """Run an agent over a suite: trials x variants per task, each in a fresh environment."""
    from agentgauge.harness.runner import run
    from agentgauge.store import Store

    options: dict[str, Any] = {}
    if agent.startswith("openai:"):
        options = {"base_url": base_url, "api_key_env": api_key_env, "prices": prices}
    elif base_url or api_key_env or prices:
        raise InputError(
            "--base-url, --api-key-env and --prices apply to openai: agents", field="agent"
        )
    the_suite: Any = suite
    if include_heldout:
        from agentgauge.suite import load_suite

        the_suite = load_suite(suite, include_heldout=True)
    header = run(
        the_suite,
        agent,
        trials=trials,
        variants=split_list(variants) if variants else None,
        concurrency=concurrency,
        timeout=timeout,
        seed=seed,
        store=store,
        run_id=run_id,
        progress=progress,
        max_paraphrases=paraphrases,
        infra_retries=infra_retries,
        backend=backend,
        agent_options=options,
    )
    with Store(store, readonly=True) as db:
        trials_ = db.trials(header.run_id, events=False)
    n = len(trials_)
    passed = sum(bool(t.success) for t in trials_)
    infra = sum(t.is_infra_error for t in trials_)
    agent_err = sum(t.status != "completed" and t.error_kind == "agent" for t in trials_)
    costs = [t.cost_usd for t in trials_ if t.cost_usd is not None]
    spend = f"${sum(costs):.4f}" + (f" ({n - len(costs)} unpriced)" if len(costs) < n else "")
    rate = f"{passed / n:.1%}" if n else "-"
    console().print(
        f"run [bold]{header.run_id}[/] in {store}: {n} trials, success {rate}, "
        f"{infra} infra errors, {agent_err} agent errors, spend {spend}",
        soft_wrap=True,
    )
