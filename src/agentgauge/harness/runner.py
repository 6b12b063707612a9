"""The local harness: run an agent over a suite's grid of cells into the store.

`arun` (and its blocking twin `run`, exported as ``agentgauge.run``) does:

1. resolve the agent spec and the suite; check the variant names;
2. create the run header (agent, model, suite name and version, config) — or,
   with the ``run_id`` of an existing run, check that agent, model, suite
   version and seed match and take the recorded settings for anything not
   given again;
3. plan the (task, trial, variant) grid, drop the cells already stored, and
   run the rest with ``concurrency`` asyncio workers, each trial in a fresh
   environment under its own timeout (`agentgauge.harness.trial`);
4. write each finished trial, with its transcript, in its own transaction, so
   a killed process loses only the trials in flight and a rerun with the same
   ``run_id`` completes exactly the missing cells.

Trials whose agent raised, hung or misbehaved are recorded with their error
class and the run goes on. ``infra_retries`` re-runs a cell (fresh
environment, same seed) whose trial ended in an infra error, up to that many
times; the attempts are recorded in the trial's metadata.
"""

from __future__ import annotations

import asyncio
import importlib
import secrets
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentgauge.agents.base import Agent
from agentgauge.agents.resolve import resolve_agent
from agentgauge.envs.base import EnvFactory, Environment
from agentgauge.errors import InputError
from agentgauge.harness.cells import Cell, cells_of_run, check_variants
from agentgauge.harness.progress import RunProgress
from agentgauge.harness.trial import Scorer, default_grader, run_cell
from agentgauge.schema import Run, Task, Trial
from agentgauge.store import DEFAULT_STORE, Store, TrialWriter, utc_now
from agentgauge.suite import SuiteLike, as_suite

__all__ = ["DEFAULTS", "arun", "default_env_factory", "new_run_id", "run"]

DEFAULTS: dict[str, Any] = {
    "trials": 1,
    "variants": ["base"],
    "seed": 0,
    "concurrency": 8,
    "timeout": 300.0,
    "max_paraphrases": None,
}
"""Settings used when neither the caller nor a resumed run gives them."""

#: Settings that must agree when a run is resumed (others may be changed, e.g. more trials).
_PINNED = ("seed",)


def new_run_id() -> str:
    """``run-YYYYmmdd-HHMMSS-xxxxxx``: sortable by time, unique enough to never collide."""
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def default_env_factory(tasks: Sequence[Task] = ()) -> EnvFactory:
    """Environments by each task's ``environment`` field.

    ``package.module:factory`` names a user's own factory (called as
    ``factory(task, variant=..., seed=...)``); anything else goes to the built-in
    worlds and their fault variants, `agentgauge.envs.faults.make_env`. The
    factories ``tasks`` need are loaded at once, so a bad name fails before
    anything runs.
    """
    cache: dict[str, EnvFactory] = {}
    for name in {t.environment or "" for t in tasks}:
        cache[name] = _import_factory(name) if ":" in name else _builtin_factory()

    def make(task: Task, *, variant: str, seed: int) -> Environment:
        name = task.environment or ""
        if name not in cache:
            cache[name] = _import_factory(name) if ":" in name else _builtin_factory()
        return cache[name](task, variant=variant, seed=seed)

    return make


def _import_factory(spec: str) -> EnvFactory:
    module_name, _, attr = spec.partition(":")
    try:
        factory: EnvFactory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot load environment {spec!r}: {exc}", field="environment") from None
    return factory


def _builtin_factory() -> EnvFactory:
    try:
        from agentgauge.envs.faults import make_env  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise InputError(
            f"the built-in environments are not available ({exc})", field="environment"
        ) from None
    factory: EnvFactory = make_env
    return factory


def run(
    suite: SuiteLike | str | Path | Sequence[Any],
    agent: str | Callable[..., Any] | Agent,
    **kwargs: Any,
) -> Run:
    """Run ``agent`` over ``suite`` and return the stored `Run` (blocking).

    Same arguments as `arun`. From inside a running event loop (a notebook),
    ``await agentgauge.harness.runner.arun(...)`` instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun(suite, agent, **kwargs))
    raise RuntimeError("agentgauge.run() blocks; inside an event loop use `await arun(...)`")


async def arun(
    suite: SuiteLike | str | Path | Sequence[Any],
    agent: str | Callable[..., Any] | Agent,
    *,
    trials: int | None = None,
    variants: Sequence[str] | str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    store: Store | str | Path = DEFAULT_STORE,
    run_id: str | None = None,
    progress: bool | None = None,
    grader: Scorer | None = default_grader,
    env_factory: EnvFactory | None = None,
    max_paraphrases: int | None = None,
    infra_retries: int = 0,
    backend: str = "local",
    agent_options: dict[str, Any] | None = None,
    on_trial: Callable[[Trial], None] | None = None,
) -> Run:
    """Run trials and return the run's header (with its trial count).

    ``suite``: a suite object (``name``, ``version``, ``tasks``), a list of
    tasks, or a spec/path for `agentgauge.suite.load_suite`. ``agent``: a spec
    for `resolve_agent` or an agent/callable. ``timeout`` is per trial, in
    seconds (``0`` or negative: none). ``progress``: ``None`` shows the bar
    only on a terminal. ``grader(task, trial) -> (success, score, grades)``
    grades completed trials (``None``: leave them ungraded, success false).
    """
    if backend != "local":
        if backend == "ray":
            raise InputError(
                "the Ray backend is not available yet; use --backend local", field="backend"
            )
        raise InputError(f"unknown backend {backend!r}; use local", field="backend")
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.split(",") if v.strip()]
    the_suite = as_suite(suite)
    the_agent = resolve_agent(agent, tasks=the_suite.tasks, **(agent_options or {}))
    factory = env_factory or default_env_factory(the_suite.tasks)
    owns_store = not isinstance(store, Store)
    db = Store(store) if not isinstance(store, Store) else store
    try:
        header, cfg = _open_run(
            db,
            run_id,
            the_suite,
            the_agent,
            {
                "trials": trials,
                "variants": None if variants is None else list(variants),
                "seed": seed,
                "concurrency": concurrency,
                "timeout": timeout,
                "max_paraphrases": max_paraphrases,
            },
        )
        heldout = [t.id for t in the_suite.tasks if t.split == "heldout"]
        if heldout:
            # Every use of the held-out set is logged; reports say how often.
            from agentgauge.metrics.validity import HELDOUT_ACTION

            db.audit(
                HELDOUT_ACTION,
                run_id=header.run_id,
                detail={"command": "run", "runs": [header.run_id], "tasks": heldout},
            )
        done = {
            (t, i, v)
            for t, i, v, a, m in db.existing_cells(header.run_id)
            if a == the_agent.name and m == the_agent.model
        }
        cells = [
            c
            for c in cells_of_run(
                the_suite.tasks,
                trials=cfg["trials"],
                variants=cfg["variants"],
                seed=cfg["seed"],
                max_paraphrases=cfg["max_paraphrases"],
            )
            if c.key not in done
        ]
        limit = cfg["timeout"] if cfg["timeout"] and cfg["timeout"] > 0 else None
        show = sys.stderr.isatty() if progress is None else progress
        with RunProgress(len(cells) + len(done), len(done), enabled=show) as bar:
            await _execute(
                cells,
                the_agent,
                factory,
                db,
                header.run_id,
                concurrency=cfg["concurrency"],
                timeout=limit,
                grader=grader,
                infra_retries=infra_retries,
                on_done=_notify(bar, on_trial),
            )
        final = db.get_run(header.run_id)
        assert final is not None
        return final
    finally:
        close = getattr(the_agent, "aclose", None)
        if close is not None:
            await close()
        if owns_store:
            db.close()


def _notify(bar: RunProgress, on_trial: Callable[[Trial], None] | None) -> Callable[[Trial], None]:
    def done(trial: Trial) -> None:
        bar.advance(trial)
        if on_trial is not None:
            on_trial(trial)

    return done


def _open_run(
    db: Store,
    run_id: str | None,
    suite: SuiteLike,
    agent: Agent,
    given: dict[str, Any],
) -> tuple[Run, dict[str, Any]]:
    existing = db.get_run(run_id) if run_id else None
    if existing is None:
        cfg = {k: (DEFAULTS[k] if v is None else v) for k, v in given.items()}
    else:
        for label, old, new in (
            ("agent", existing.agent, agent.name),
            ("model", existing.model, agent.model),
            ("suite_version", existing.suite_version, suite.version),
        ):
            if old != new:
                raise InputError(
                    f"run {existing.run_id!r} was made with {label} {old!r}, not {new!r}; "
                    "resume with the same settings or choose another --run-id",
                    field=label,
                )
        recorded = existing.config
        cfg = {k: (recorded.get(k, DEFAULTS[k]) if v is None else v) for k, v in given.items()}
        for key in _PINNED:
            if key in recorded and cfg[key] != recorded[key]:
                raise InputError(
                    f"run {existing.run_id!r} was made with {key}={recorded[key]!r}; "
                    f"resuming with {key}={cfg[key]!r} would mix two designs",
                    field=key,
                )
    cfg["variants"] = check_variants(cfg["variants"])
    if not isinstance(cfg["trials"], int) or cfg["trials"] < 1:
        raise InputError(
            f"trials must be a positive integer, got {cfg['trials']!r}", field="trials"
        )
    if not isinstance(cfg["concurrency"], int) or cfg["concurrency"] < 1:
        raise InputError(
            f"concurrency must be a positive integer, got {cfg['concurrency']!r}",
            field="concurrency",
        )
    if existing is not None:
        merged = {**existing.config, **cfg}
        if merged != existing.config:  # extended (more trials, more variants): say so
            db.update_run_config(existing.run_id, merged)
            existing = existing.model_copy(update={"config": merged})
        return existing, cfg
    header = Run(
        run_id=run_id or new_run_id(),
        agent=agent.name,
        model=agent.model,
        suite=suite.name,
        suite_version=suite.version,
        created_at=utc_now(),
        source="harness",
        config={**cfg, "backend": "local"},
    )
    with db.transaction():
        db.create_run(header)
        db.add_tasks(header.run_id, suite.tasks)
    return header, cfg


async def _execute(
    cells: list[Cell],
    agent: Agent,
    factory: EnvFactory,
    db: Store,
    run_id: str,
    *,
    concurrency: int,
    timeout: float | None,
    grader: Scorer | None,
    infra_retries: int,
    on_done: Callable[[Trial], None],
) -> None:
    queue = iter(cells)
    # Each trial is committed in its own transaction, on the writer's thread: a
    # crash loses only trials in flight or not yet committed.
    writer = TrialWriter(db, run_id)

    async def worker() -> None:
        # Workers pull from one iterator: bounded concurrency without one task per cell.
        for cell in queue:
            trial = await run_cell(cell, agent, factory, timeout=timeout, grader=grader)
            attempt = 1
            while trial.is_infra_error and attempt <= infra_retries:
                attempt += 1
                trial = await run_cell(cell, agent, factory, timeout=timeout, grader=grader)
            if attempt > 1:
                trial.metadata["attempts"] = attempt
            while writer.pending > writer.max_pending:  # the disk is slower than the agent
                await asyncio.sleep(0.005)
            writer.submit(trial)
            on_done(trial)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(cells)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        writer.close()  # waits for the last commits; raises a write error
