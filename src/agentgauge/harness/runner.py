"""The harness: run an agent over a suite's grid of cells into the store.

`arun` (and its blocking twin `run`, exported as ``agentgauge.run``) does:

1. resolve the agent spec and the suite; check the variant names;
2. create the run header (agent, model, suite name and version, config) — or,
   with the ``run_id`` of an existing run, check that agent, model, suite
   version and seed match and take the recorded settings for anything not
   given again;
3. plan the (task, trial, variant) grid, drop the cells already stored, and
   run the rest with ``concurrency`` asyncio workers, each trial in a fresh
   environment under its own timeout (`agentgauge.harness.trial`) — or, with
   ``backend="ray"``, as at most ``concurrency`` Ray tasks whose trials come back
   to this process (`agentgauge.harness.ray_backend`);
4. write each finished trial, with its transcript, in its own transaction, so
   a killed process loses only the trials in flight and a rerun with the same
   ``run_id`` completes exactly the missing cells.

Before step 3 the agent is checked once (its ``preflight()``, when it has one), and
so are the model judges its grader names (`_preflight`).
Trials whose agent raised, hung or misbehaved are recorded with their error
class and the run goes on, unless infra errors dominate (the circuit breaker,
`agentgauge.harness.breaker`) or the user presses Ctrl-C
(`agentgauge.harness.stopping`): then nothing more is launched, what finished is
committed, and `RunStopped` or `RunInterrupted` says how much was saved.
``infra_retries`` re-runs a cell (fresh environment, same seed) whose trial
ended in an infra error, up to that many times; the attempts are recorded in
the trial's metadata.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
import sqlite3
import sys
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentgauge.agents.base import Agent
from agentgauge.agents.resolve import import_from_path_or_here, resolve_agent
from agentgauge.components import COMPONENTS, COMPONENTS_KEY, ENVIRONMENT_POLICY
from agentgauge.envs.base import EnvFactory, Environment
from agentgauge.errors import (
    AgentgaugeError,
    InputError,
    Note,
    RunInterrupted,
    RunStopped,
    RunTakenOver,
    import_failure,
    whole_number,
)
from agentgauge.harness.breaker import CircuitBreaker
from agentgauge.harness.cells import (
    MAX_RUN_TRIALS,
    Cell,
    cells_of_run,
    check_variants,
    count_cells,
)
from agentgauge.harness.configuration import (
    SEEN_KEY,
    ObservingFactory,
    initial_components,
    observed_components,
)
from agentgauge.harness.gc_threshold import fewer_young_collections
from agentgauge.harness.keep import keep_trial
from agentgauge.harness.progress import RunProgress
from agentgauge.harness.stopping import Stop, sigint_stops
from agentgauge.harness.trial import Scorer, attempt_cell, default_grader
from agentgauge.metrics.baselines import ROLE_KEY, check_role
from agentgauge.report.formats import counted, plural
from agentgauge.schema import Run, Task, Trial
from agentgauge.sources import check_run_id
from agentgauge.store import DEFAULT_STORE, Store, TrialWriter, check_store_path, utc_now
from agentgauge.store.claims import Heartbeat, RunClaimed, claim, refuse_claimed, release
from agentgauge.store.database import write_follows
from agentgauge.store.removal import remove_if_empty
from agentgauge.suite import SuiteLike, as_suite, scenario_defect, task_place

__all__ = [
    "DEFAULTS",
    "AbandonedThreadsWarning",
    "TrialErrorsWarning",
    "arun",
    "check_store_path",
    "default_env_factory",
    "new_run_id",
    "run",
    "with_variants",
]

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


def _check_gradable(suite: SuiteLike) -> None:
    """Refuse tasks whose outcome no code grader decides, before any trial runs: each
    of their trials would be stored as "not evaluated" and counted as a failure (a
    suite of them reported 0.0% with a consistency of 1.000). The error names where
    the first of them is written, when the suite says (`task_place`)."""
    from agentgauge.graders import decides_outcome

    undecided = [t for t in suite.tasks if not decides_outcome(t)]
    if not undecided:
        return
    shown = ", ".join(repr(t.id) for t in undecided[:5])
    more = f" and {len(undecided) - 5} more" if len(undecided) > 5 else ""
    rubric = any(t.expectations.rubric for t in undecided)
    hint = (
        "; a rubric is graded by a model judge, which `run` does not call: grade with it "
        "from Python (agentgauge.run(..., grader=...), docs/judge.md)"
        if rubric
        else ""
    )
    file, line = task_place(suite, undecided[0].id)
    raise InputError(
        f"nothing grades the outcome of {counted(len(undecided), 'task')}, {shown}{more}: their "
        "expectations give no final_state, answer, tool_calls, control, minefields, "
        f"checkpoints or executable check (docs/writing-tasks.md){hint}",
        file=file,
        line=line,
        field="expectations",
    )


def _preflight(
    agent: Agent, grader: Scorer | None, tasks: Sequence[Task]
) -> Callable[[], Awaitable[None]] | None:
    """The run's check before its first trial: the agent's ``preflight()``, then the
    judges its ``grader`` declares (a ``judges`` attribute,
    `agentgauge.harness.trial.uses_judges`) and those of the graders it names (a
    ``graders`` attribute, as `agentgauge.harness.trial.grade_with` has) that a task
    needs (`agentgauge.graders.rubric.check_judges`); ``None`` when there is nothing to
    check."""
    own = getattr(agent, "preflight", None)
    graders = getattr(grader, "graders", None)
    if not graders and getattr(grader, "judges", None) is None:
        return own

    async def check() -> None:
        from agentgauge.graders.rubric import check_judges

        if own is not None:
            await own()
        await check_judges([*(graders or ()), grader], tasks)

    return check


def _check_numbers(
    timeout: float | None, max_paraphrases: int | None, infra_retries: int, seed: int | None
) -> None:
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
    ):
        raise InputError(
            f"must be a finite number of seconds (0 for none), got {timeout!r}", field="--timeout"
        )
    for flag, value in (
        ("--paraphrases", max_paraphrases),
        ("--infra-retries", infra_retries),
        # The seed is hashed as text into each cell's seed: 0.0 gave other trials than 0.
        ("--seed", seed),
    ):
        if value is not None:
            whole_number(value, flag, least=0)


def _check_design(
    trials: int | None, variants: Sequence[str] | None, concurrency: int | None
) -> None:
    """Refuse a bad ``--trials``, ``--variants`` or ``--concurrency`` before the store is
    opened: they were checked once the run's header was being written, which left a new
    store file behind (docs/cli.md: refused before anything runs or is written). What a
    resumed run takes from its header is checked again there."""
    for flag, value in (("--trials", trials), ("--concurrency", concurrency)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise InputError(f"must be a positive integer, got {value!r}", field=flag)
    if variants is not None:
        try:
            check_variants(variants)
        except InputError as exc:
            raise InputError(exc.reason, field="--variants") from None


def new_run_id() -> str:
    """``run-YYYYmmdd-HHMMSS-xxxxxx``: sortable by time, unique enough to never collide."""
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def default_env_factory(tasks: Sequence[Task] = (), suite: SuiteLike | None = None) -> EnvFactory:
    """Environments by each task's ``environment`` field.

    ``package.module:factory`` names a user's own factory (called as
    ``factory(task, variant=..., seed=...)``, its environments given the fault and
    perturbation variants: `with_variants`); anything else goes to the built-in
    worlds and their fault variants, `agentgauge.envs.faults.make_env`. The
    factories ``tasks`` need are loaded at once, so a bad name fails before
    anything runs; the error names where ``suite`` writes the first task that names
    it (`task_place`), as the suite loader's errors do.
    """
    from agentgauge.envs.builtin import BUILTIN_ENVIRONMENTS, builtin_environment

    cache: dict[str, EnvFactory] = {}
    first: dict[str, Task] = {}
    for task in tasks:
        first.setdefault(task.environment or "", task)
    for name, task in first.items():
        try:
            cache[name] = _load_factory(name)
        except InputError as exc:
            raise _placed(_of_task(exc, task), suite, task) from None
    for task in tasks:
        if not task.environment and builtin_environment(task) is None:
            # Without a factory of one's own (Python's env_factory=) such a task has no
            # world: every trial was an infra error "unknown environment None".
            missing = InputError(
                f"task {task.id!r} names no environment: set environment: to one of "
                f"{', '.join(BUILTIN_ENVIRONMENTS)} or package.module:factory for a world "
                "of your own (docs/writing-tasks.md)",
                field="environment",
            )
            raise _placed(missing, suite, task)
        try:
            _check_scenario(task, cache[task.environment or ""])
        except InputError as exc:
            raise _placed(exc, suite, task) from None

    def make(task: Task, *, variant: str, seed: int) -> Environment:
        name = task.environment or ""
        if name not in cache:
            try:
                cache[name] = _load_factory(name)
            except InputError as exc:
                raise _of_task(exc, task) from None
        return cache[name](task, variant=variant, seed=seed)

    return make


def _of_task(exc: InputError, task: Task) -> InputError:
    """``exc`` naming the task it stopped at (``task 'a': cannot load environment
    ...``), as the other errors about one task's fields do; an environment many tasks
    name is loaded once, and the error names the first of them."""
    return InputError(
        f"task {task.id!r}: {exc.reason}", file=exc.file, line=exc.line, field=exc.field
    )


def _placed(exc: InputError, suite: SuiteLike | None, task: Task) -> InputError:
    """``exc`` with the file and line where ``suite`` writes ``task``'s field that
    ``exc`` names (the task's line when it does not know the field's; unchanged when it
    does not say: a suite built in Python)."""
    file, line = (None, None) if suite is None else task_place(suite, task.id, exc.field)
    if file is None or exc.file is not None:
        return exc
    return InputError(exc.reason, file=file, line=line, field=exc.field)


def _check_scenario(task: Task, factory: EnvFactory) -> None:
    """A factory of one's own may say which ``user_scenario`` keys its world reads, as
    a built-in world does: a ``scenario`` attribute holding a pydantic model (unknown
    keys forbidden). The suite loader does not import a user's factory, so the task's
    scenario is checked here, before the first trial: a typo fails at once instead of
    leaving the simulated user without what the task meant it to say."""
    scenario = getattr(factory, "scenario", None)
    if not (isinstance(scenario, type) and issubclass(scenario, BaseModel)):
        return
    defect = scenario_defect(scenario, task.user_scenario, f"the {task.environment}")
    if defect is not None:
        where, reason = defect
        raise InputError(f"task {task.id!r}: {reason}", field=".".join(str(part) for part in where))


def _check_paraphrases(
    tasks: Sequence[Task],
    given: Mapping[str, Any],
    recorded: Mapping[str, Any],
    env_factory: EnvFactory | None,
) -> None:
    """Refuse ``paraphrase:N`` before any trial runs on a world of one's own that
    cannot open with the paraphrase.

    Such a world is given the paraphrase by the harness (`with_variants`): an opening
    message that is, or holds, the task's instruction has it replaced. One whose
    opening holds neither the instruction nor the paraphrase (a greeting of its own, a
    simulated user's first words) would have run its own opening under the
    paraphrase's name, and prompt robustness would read as perfect; one environment
    per task with paraphrase trials is built to find out (a factory that applies the
    paraphrases itself, ``applies_variants``, is trusted and not built).

    The variants, seed and paraphrase cap are those ``given``, else a resumed run's
    ``recorded`` ones, else the defaults, as `_open_run` settles them."""
    design = {
        key: given[key] if given.get(key) is not None else recorded.get(key, DEFAULTS[key])
        for key in ("variants", "seed", "max_paraphrases")
    }
    first: dict[str, Cell] = {}
    for cell in cells_of_run(tasks, trials=1, **design):
        if cell.variant.startswith("paraphrase:"):
            first.setdefault(cell.task.id, cell)
    if not first:
        return
    from agentgauge.envs.faults import applied_kinds, paraphrase_refusal
    from agentgauge.envs.faults import with_variants as wrap

    refused: list[str] = []
    for cell in first.values():
        name = cell.task.environment or ""
        try:
            own = env_factory or (_import_factory(name) if ":" in name else None)
        except InputError as exc:
            raise _of_task(exc, cell.task) from None
        if own is None or "paraphrase" in applied_kinds(own):
            continue  # a built-in world opens with the paraphrase itself
        reason = paraphrase_refusal(wrap(own), cell.task, cell.variant, cell.seed)
        if reason is not None:
            refused.append(reason)
    if refused:
        more = f" (and {counted(len(refused) - 1, 'more task')})" if len(refused) > 1 else ""
        raise InputError(
            f"cannot run the paraphrase variants: {refused[0]}{more}. Open with "
            "task.paraphrases[N-1] under variant paraphrase:N, or with a message that "
            "holds task.instruction; a factory that rewords the opening its own way "
            "declares applies_variants = {'paraphrase'}; or leave paraphrase out of the "
            'variants (docs/running-agents.md, "Your own environment")',
            field="--variants",
        )


def _load_factory(name: str) -> EnvFactory:
    return with_variants(_import_factory(name)) if ":" in name else _builtin_factory()


def with_variants(factory: EnvFactory) -> EnvFactory:
    """``factory`` whose environments get the ``fault:KIND`` and ``env:KIND`` variants
    (`agentgauge.envs.faults.with_variants`), which wrap tool calls and so apply to
    any world."""
    try:
        from agentgauge.envs.faults import with_variants as wrap
    except ImportError as exc:
        raise InputError(
            f"the fault and env: variants are not available ({exc})", field="environment"
        ) from None
    wrapped: EnvFactory = wrap(factory)
    return wrapped


def _import_factory(spec: str) -> EnvFactory:
    module_name, _, attr = spec.partition(":")
    try:
        # From the import path, then the current folder, as an agent's module is found.
        module = import_from_path_or_here(module_name)
    except Exception as exc:  # importing runs the module's code, which may raise anything
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == module_name.split(".")[0]:
            hint = (
                f" (looked on the import path and in the current folder {Path.cwd()}; run "
                "from the folder that holds it, or add its folder to PYTHONPATH)"
            )
        raise InputError(
            f"cannot load environment {spec!r}: {import_failure(exc)}{hint}",
            field="environment",
        ) from None
    try:
        factory: EnvFactory = getattr(module, attr)
    except AttributeError as exc:
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
    # Said where `arun` is: a notebook user told to "use arun" has no such name at hand.
    raise RuntimeError(
        "agentgauge.run() cannot run inside a running event loop (a Jupyter notebook runs "
        "one): use `await agentgauge.harness.runner.arun(...)` with the same arguments"
    )


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
    ray_address: str | None = None,
    worker_retries: int = 3,
    agent_options: dict[str, Any] | None = None,
    on_trial: Callable[[Trial], None] | None = None,
    preflight: bool = True,
    breaker_first: int = 10,
    breaker_window: int = 50,
    notify: Callable[[str], None] | None = None,
    baseline_role: str | None = None,
) -> Run:
    """Run trials and return the run's header (with its trial count).

    ``suite``: a suite object (``name``, ``version``, ``tasks``), a list of
    tasks, or a spec/path for `agentgauge.suite.load_suite`. ``agent``: a spec
    for `resolve_agent` or an agent/callable. ``timeout`` is per trial, in
    seconds (``0`` or negative: none; NaN and infinity are refused).
    ``progress``: ``None`` shows the bar only on a terminal.
    ``grader(task, trial) -> (success, score, grades)`` grades completed trials
    (``None``: leave them ungraded, success false).

    Before the first trial the agent is checked once (``preflight``; the
    adapter's ``preflight()``: a program that starts, an endpoint whose chat
    route answers) and `agentgauge.errors.AgentUnavailable` is raised if it
    fails. The circuit breaker (``breaker_first``, ``breaker_window``;
    `agentgauge.harness.breaker`) stops launching when infra errors dominate and
    raises `agentgauge.errors.RunStopped`, as it does at the end of a run whose
    finished trials meet its rules (`CircuitBreaker.at_end`); Ctrl-C raises
    `agentgauge.errors.RunInterrupted`. Both after committing every finished
    trial; the same ``run_id`` resumes. A call with nothing left to run judges the
    run's stored trials by the breaker's rules instead (``RunStopped`` again for a
    run that measured only its infrastructure). A run this call made that ends
    before its first trial is committed (Ctrl-C, an error) is not kept, so its id
    stays free. A design of more than `MAX_RUN_TRIALS` trials is refused before
    anything is written. ``notify`` receives sentences for the user (e.g. that a
    resumed run is being extended to more trials).

    The preflight also checks each model judge a task needs, of a ``grader`` that names
    its graders (`agentgauge.harness.trial.grade_with`): `agentgauge.errors.InputError`
    for one with no chat route, before anything is written (docs/judge.md).

    The header's config records the run's configuration as named components
    (``config["components"]``: `agentgauge.components`), and ``baseline_role``
    (``null``, ``previous``, ``human``, ``ablation``) marks the run as that
    baseline for comparisons (docs/compare-and-plan.md, "Baselines").

    ``backend="ray"`` runs each trial as a Ray task (docs/ray.md) on the cluster at
    ``ray_address`` (``auto``, ``ray://HOST:10001``), or on a local Ray instance
    started for the run; the trials, the store and everything above are as
    locally. A trial whose Ray worker died is run again up to ``worker_retries``
    times, then recorded as an infra error.
    """
    check_store_path(store)
    check_run_id(run_id)
    _check_numbers(timeout, max_paraphrases, infra_retries, seed)
    # A numpy integer passed the checks: stored (in the run's JSON config) as the int it is.
    seed = None if seed is None else int(seed)
    max_paraphrases = None if max_paraphrases is None else int(max_paraphrases)
    infra_retries = int(infra_retries)
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.split(",") if v.strip()]
    _check_design(trials, variants, concurrency)
    if baseline_role is not None:
        check_role(baseline_role)
    if backend == "ray":
        from agentgauge.harness.ray_backend import require_ray

        require_ray()
    elif backend != "local":
        raise InputError(f"unknown backend {backend!r}; use local or ray", field="--backend")
    elif ray_address is not None:
        raise InputError("applies to --backend ray only", field="--ray-address")
    breaker = CircuitBreaker(first=breaker_first, window=breaker_window)
    given: dict[str, Any] = {
        "trials": trials,
        "variants": None if variants is None else list(variants),
        "seed": seed,
        "concurrency": concurrency,
        "timeout": timeout,
        "max_paraphrases": max_paraphrases,
    }
    stop = Stop()
    # Ctrl-C is this run's from here on, not asyncio's: asyncio's handler cancels the
    # main task, which a step that blocks (loading a suite, starting Ray) sees only at
    # its next await, once the run's header was written: the run ended with a bare
    # "interrupted", no resume command, and an empty run under its id.
    with sigint_stops(stop, asyncio.get_running_loop()):
        return await _session(
            suite,
            agent,
            given,
            stop,
            breaker,
            store=store,
            run_id=run_id,
            progress=progress,
            grader=grader,
            env_factory=env_factory,
            infra_retries=infra_retries,
            backend=backend,
            ray_address=ray_address,
            worker_retries=worker_retries,
            agent_options=agent_options,
            on_trial=on_trial,
            preflight=preflight,
            notify=notify,
            baseline_role=baseline_role,
        )


async def _session(
    suite: SuiteLike | str | Path | Sequence[Any],
    agent: str | Callable[..., Any] | Agent,
    given: dict[str, Any],
    stop: Stop,
    breaker: CircuitBreaker,
    *,
    store: Store | str | Path,
    run_id: str | None,
    progress: bool | None,
    grader: Scorer | None,
    env_factory: EnvFactory | None,
    infra_retries: int,
    backend: str,
    ray_address: str | None,
    worker_retries: int,
    agent_options: dict[str, Any] | None,
    on_trial: Callable[[Trial], None] | None,
    preflight: bool,
    notify: Callable[[str], None] | None,
    baseline_role: str | None,
) -> Run:
    """`arun` once its arguments are checked, with Ctrl-C setting ``stop``: every step
    looks at it before the next, so that an interrupt at any moment ends as one does
    while trials run (`RunInterrupted`, what is saved, how to resume)."""
    the_suite = as_suite(suite)
    if grader is default_grader:
        _check_gradable(the_suite)
    factory = (
        with_variants(env_factory)
        if env_factory
        else default_env_factory(the_suite.tasks, the_suite)
    )
    resuming = _resuming(store, run_id)
    design = {k: given[k] for k in ("variants", "seed", "max_paraphrases")}
    planned = 0
    if not resuming:  # before the store is made; a resumed run's, once its header is read
        _check_paraphrases(the_suite.tasks, design, {}, env_factory)
        planned = _check_plan(the_suite.tasks, _settled(given, {}))
    the_agent = resolve_agent(agent, tasks=the_suite.tasks, **(agent_options or {}))
    declared = initial_components(the_agent, the_suite, grader)
    if backend == "ray":
        from agentgauge.harness.ray_backend import check_shippable

        check_shippable(
            agent, dict(agent_options or {}), env_factory, grader, agent_name=the_agent.name
        )
        if isinstance(worker_retries, bool) or not isinstance(worker_retries, int):
            raise InputError(
                f"must be a whole number, got {worker_retries!r}", field="worker_retries"
            )
        if worker_retries < 0:
            raise InputError(f"must be 0 or more, got {worker_retries}", field="worker_retries")
    check = _preflight(the_agent, grader, the_suite.tasks)
    # A new run checks its agent before the store is touched: a typo in an endpoint
    # leaves neither an empty store file nor an empty run. A resumed run checks it only
    # when cells remain (below), so a finished run resumes with the endpoint down, but
    # still before its header takes the new design and a held-out use is logged.
    checked = False
    connected = False  # a resumed run's connection to Ray, made before its header changes
    on_ray = contextlib.ExitStack()
    try:
        if backend == "ray" and not resuming and not stop.interrupted:
            # Likewise a new Ray run connects first: a wrong address leaves nothing behind.
            from agentgauge.harness.ray_backend import ray_session

            on_ray.enter_context(ray_session(ray_address, stop=stop))
        if preflight and check is not None and not resuming and not stop.interrupted:
            await _unless_interrupted(check(), stop)
            checked = True
        if stop.interrupted and not resuming:
            # Nothing is written yet, and nothing will be: the same command starts afresh.
            raise RunInterrupted(
                "interrupted: 0 trials saved",
                run_id=run_id or new_run_id(),
                saved=0,
                total=planned,
            )
        owns_store = not isinstance(store, Store)
        # A store file this session makes is removed again if the run ends before its
        # first trial is saved: an empty store is no result, and left behind it reads
        # as one (`agentgauge runs` shows no runs where there were none to show).
        made_file = owns_store and str(store) != ":memory:" and not Path(str(store)).exists()
        db = Store(store) if not isinstance(store, Store) else store
    except BaseException:
        close = getattr(the_agent, "aclose", None)
        if close is not None:
            await close()
        on_ray.close()
        raise
    created: str | None = None  # the id of the run this session made, while it holds no trial
    claimed: tuple[str, str, Heartbeat] | None = None  # this session's claim on the run
    on_workers: dict[str, list[str]] = {}  # Ray: the agent threads each worker abandoned
    try:
        if resuming:  # before its header takes new variants, which a resume cannot drop
            existing = db.get_run(run_id) if run_id else None
            recorded = existing.config if existing is not None else {}
            _check_paraphrases(the_suite.tasks, design, recorded, env_factory)
            left = _left_to_run(db, existing, the_suite, the_agent, given)
            # Connected and checked before anything is written: an unreachable cluster
            # or an endpoint that is down leaves the run as it was (its design, its
            # held-out log), and the command that made it still resumes it.
            if left and backend == "ray" and not stop.interrupted:
                from agentgauge.harness.ray_backend import ray_session

                on_ray.enter_context(ray_session(ray_address, stop=stop))
                connected = True
            if left and preflight and check is not None and not stop.interrupted:
                await _unless_interrupted(check(), stop)
                checked = True
            if stop.interrupted and existing is not None:
                saved = existing.n_trials
                raise RunInterrupted(
                    f"interrupted: {counted(saved, 'trial')} saved",
                    run_id=existing.run_id,
                    saved=saved,
                    total=saved + (left or 0),
                )
        header, cfg, created, opened, token = _open_run(
            db,
            run_id,
            resuming,
            the_suite,
            the_agent,
            given,
            notify or _quiet,
            backend,
            {COMPONENTS_KEY: declared, **({ROLE_KEY: baseline_role} if baseline_role else {})},
        )
        lost: list[str] = []  # why this session's claim was taken over, if it was

        def on_lost(why: str) -> None:
            lost.append(why)
            stop.halt(why)  # from the heartbeat's thread: the next launch sees it

        claimed = (header.run_id, token, Heartbeat(db.path, header.run_id, token, on_lost))
        if baseline_role is not None and header.config.get(ROLE_KEY) != baseline_role:
            # Given again on a resume: the user asks for the mark, so it is written.
            db.update_run_config(header.run_id, {**header.config, ROLE_KEY: baseline_role})
        observer = ObservingFactory(factory, header.config.get(SEEN_KEY))
        heldout = [t.id for t in the_suite.tasks if t.split == "heldout"]
        if heldout:
            # Every use of the held-out set is logged; reports say how often.
            from agentgauge.metrics.validity import HELDOUT_ACTION

            db.audit(
                HELDOUT_ACTION,
                run_id=header.run_id,
                detail={"command": "run", "runs": [header.run_id], "tasks": heldout},
            )
        done = _done_cells(db, header.run_id, the_agent)
        # The cells are generated as they are launched, never held as one list: the
        # plan was counted (and refused past MAX_RUN_TRIALS) before the header was made.
        _, remaining = count_cells(
            the_suite.tasks,
            trials=cfg["trials"],
            variants=cfg["variants"],
            max_paraphrases=cfg["max_paraphrases"],
            skip=done,
        )
        cells = (
            c
            for c in cells_of_run(
                the_suite.tasks,
                trials=cfg["trials"],
                variants=cfg["variants"],
                seed=cfg["seed"],
                max_paraphrases=cfg["max_paraphrases"],
            )
            if c.key not in done
        )
        limit = cfg["timeout"] if cfg["timeout"] and cfg["timeout"] > 0 else None
        if remaining and preflight and check is not None and not checked and not stop.stopped:
            await _unless_interrupted(check(), stop)
        show = sys.stderr.isatty() if progress is None else progress
        total = remaining + len(done)
        ray_cells = backend == "ray" and remaining > 0 and not stop.stopped
        if ray_cells and resuming and not connected:
            # Cells `_left_to_run` did not foresee: connected only when cells remain.
            from agentgauge.harness.ray_backend import ray_session

            on_ray.enter_context(ray_session(ray_address, stop=stop))
        if remaining and resuming:
            header = _record_backend(db, header, backend)
        with RunProgress(total, len(done), enabled=show) as bar:
            try:
                if ray_cells:
                    from agentgauge.harness.ray_backend import WorkerKit, execute_on_ray

                    kit = WorkerKit(
                        key=f"{header.run_id}/{secrets.token_hex(4)}",
                        tasks=tuple(the_suite.tasks),
                        agent=agent,
                        agent_options=dict(agent_options or {}),
                        env_factory=env_factory,
                        grader=grader,
                        timeout=limit,
                        infra_retries=infra_retries,
                    )
                    written = await execute_on_ray(
                        cells,
                        kit,
                        the_agent,
                        observer,
                        db,
                        header.run_id,
                        concurrency=cfg["concurrency"],
                        on_done=_notify(bar, on_trial),
                        breaker=breaker,
                        stop=stop,
                        worker_retries=worker_retries,
                        still_running=on_workers,
                    )
                else:
                    written = await _execute(
                        cells,
                        remaining,
                        the_agent,
                        observer,
                        db,
                        header.run_id,
                        concurrency=cfg["concurrency"],
                        timeout=limit,
                        grader=grader,
                        infra_retries=infra_retries,
                        on_done=_notify(bar, on_trial),
                        breaker=breaker,
                        stop=stop,
                    )
            except BaseException:
                # The error that stopped the run is the one to report: a full disk that
                # stopped the writer also refuses this update, which must not hide it.
                with contextlib.suppress(AgentgaugeError, sqlite3.Error):
                    _record_observed(db, header.run_id, observer, declared)
                raise
            # Taken over meanwhile (`lost`, or about to be told so by the heartbeat): the
            # run's config is the other session's to write now, and the store refuses it.
            with contextlib.suppress(RunClaimed):
                _record_observed(db, header.run_id, observer, declared)
        saved = len(done) + written
        if stop.interrupted:
            raise RunInterrupted(
                f"interrupted: {counted(saved, 'trial')} saved",
                run_id=header.run_id,
                saved=saved,
                total=total,
            )
        if remaining == 0:
            # Nothing ran in this session: its stored trials are judged instead, so that
            # running a finished run again (to see its errors with --show-errors) ends as
            # its first session did, and a run that measured only its infrastructure
            # never passes as done.
            for trial in db.trials(header.run_id, events=False):
                if (trial.task_id, trial.trial, trial.variant) in done:
                    breaker.record(trial.is_infra_error)
        if lost:  # another session writes the run now: what this one did is saved
            raise RunTakenOver(
                f"stopped: {lost[0]}; {saved} of {counted(total, 'trial')} saved",
                run_id=header.run_id,
                saved=saved,
                total=total,
            )
        # Decided when every trial has finished, not only when some were left unlaunched:
        # a run that tripped after its last launch, or was too short for a rule to be
        # decided while it went, measured its infrastructure and must not pass as done.
        tripped = breaker.at_end()
        if tripped is not None:
            raise RunStopped(
                f"stopped: {tripped}; {saved} of {counted(total, 'trial')} saved",
                run_id=header.run_id,
                saved=saved,
                total=total,
            )
        final = db.get_run(header.run_id)
        assert final is not None
        if notify is None:
            _report_errors(db, final, the_suite.tasks)
        return final
    except BaseException:
        if created is not None:
            # A run this session made that ended (Ctrl-C, an error) before its first
            # trial was committed holds nothing: it goes, so that its id is free for a
            # corrected command (another agent, fewer trials) instead of refusing it.
            # Not when another session has opened it since (resumed it): that one is
            # writing its trials to it.
            with contextlib.suppress(AgentgaugeError, sqlite3.Error):
                db.delete_run_if_empty(created, opened=opened)
        raise
    finally:
        if claimed is not None:  # first: nothing below may keep the run claimed
            claimed[2].stop()
            release(db.conn, claimed[0], claimed[1])
        close = getattr(the_agent, "aclose", None)
        if close is not None:
            await close()
        if owns_store:
            db.close()
            if made_file:
                remove_if_empty(Path(str(store)))
        on_ray.close()  # shuts down what this run started or connected
        _report_abandoned(the_agent, notify, on_workers)


def _left_to_run(
    db: Store, existing: Run | None, suite: SuiteLike, agent: Agent, given: dict[str, Any]
) -> int | None:
    """How many cells a resume of ``existing`` would run, read before anything is
    written (as `_open_run` will settle its design); ``None`` when the design is one
    `_open_run` refuses."""
    if existing is None:
        return None
    cfg = _settled(given, existing.config)
    try:
        variants = check_variants(cfg["variants"])
        _, left = count_cells(
            suite.tasks,
            trials=cfg["trials"],
            variants=variants,
            max_paraphrases=cfg["max_paraphrases"],
            skip=_done_cells(db, existing.run_id, agent),
        )
    except (InputError, TypeError, ValueError):
        return None
    return left


def _done_cells(db: Store, run_id: str, agent: Agent) -> set[tuple[str, int, str]]:
    """The cells of ``run_id`` stored with ``agent``'s name and model: a resume skips them."""
    return {
        (t, i, v)
        for t, i, v, a, m in db.existing_cells(run_id)
        if a == agent.name and m == agent.model
    }


def _record_backend(db: Store, header: Run, backend: str) -> Run:
    """``header`` naming ``backend`` among the backends its sessions ran trials on:
    ``backend`` stays the one the run was made with, and ``backends`` lists them all,
    in the order first used, once a resume ran on another."""
    used = list(header.config.get("backends") or [header.config.get("backend", "local")])
    if backend in used:
        return header
    config = {**header.config, "backends": [*used, backend]}
    db.update_run_config(header.run_id, config)
    return header.model_copy(update={"config": config})


def _record_observed(
    db: Store, run_id: str, observer: ObservingFactory, declared: dict[str, Any]
) -> None:
    current = db.get_run(run_id)
    if current is None:
        return
    updated = observed_components(current.config, observer, declared)
    if updated is not None:
        db.update_run_config(run_id, updated)


def _resuming(store: str | Path | Store, run_id: str | None) -> bool:
    """Whether ``run_id`` names a run the store already holds (read without writing).
    A run another session is writing is refused here (`RunClaimed`), before the agent
    is checked or anything is written; `_open_run` checks again as it claims the run."""
    if run_id is None:
        return False
    if isinstance(store, Store):
        refuse_claimed(store.conn, run_id)
        return store.get_run(run_id) is not None
    if not Path(store).exists():
        return False
    try:  # the session's writable open says what it does of stale records, not this look
        with write_follows(), Store(store, readonly=True) as db:
            refuse_claimed(db.conn, run_id)
            return db.get_run(run_id) is not None
    except InputError:
        # A database without tables (a first run that found the disk full left one)
        # holds no run; anything else that is not a store is refused as it was.
        if _holds_no_tables(Path(store)):
            return False
        raise


def _holds_no_tables(path: Path) -> bool:
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return bool(conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0)
        finally:
            conn.close()
    except sqlite3.Error:
        return False


class TrialErrorsWarning(Note, RuntimeWarning):
    """Trials of the run ended in an error or a timeout, or could not be graded: their
    classes and most frequent messages (a `RuntimeWarning` from Python; the command line
    prints its own summary instead)."""


def _report_errors(db: Store, run: Run, tasks: Sequence[Task]) -> None:
    """Warn, from Python, of the run's trials that erred, timed out or could not be
    graded, as ``agentgauge run`` prints them at its end: a notebook user otherwise got
    the run's header alone, and an agent that raised on every trial looked like one that
    failed its tasks."""
    from agentgauge.display import shell_command
    from agentgauge.harness.error_summary import (
        one_line,
        summarize_errors,
        summarize_ungraded,
        ungraded_lines,
    )

    trials = db.trials(run.run_id, events=False)
    lines = []
    for cls in summarize_errors(trials, per_class=3):
        lines.append(f"{cls.counted}:")
        lines += [f"  {m.count} x {one_line(m.text)}  (e.g. {m.example})" for m in cls.messages]
    regrade = shell_command(["agentgauge", "grade", f"{db.path}:{run.run_id}", "--activate"])
    by_id = {t.id: t for t in tasks}
    for header, messages, advice in ungraded_lines(*summarize_ungraded(trials, by_id), regrade):
        lines.append(f"{header}:")
        lines += [f"  {m.count} x {one_line(m.text)}  (e.g. {m.example})" for m in messages]
        lines.append(f"  {advice}")
    if not lines:
        return
    failed = shell_command(["agentgauge", "show", f"{db.path}:{run.run_id}", "--failed"])
    message = "\n".join([f"run {run.run_id} ({counted(len(trials), 'trial')}):", *lines])
    warnings.warn(f"{message}\nsee them: {failed}", TrialErrorsWarning, stacklevel=2)


class AbandonedThreadsWarning(Note, RuntimeWarning):
    """Agent threads that outlived their trial's timeout were abandoned at the end of the
    run (a `RuntimeWarning`; the command line prints it as one line ``note: ...``)."""


def _report_abandoned(
    agent: Agent, notify: Callable[[str], None] | None, on_workers: Mapping[str, list[str]]
) -> None:
    """Name the trials whose agent thread outlived its timeout and is still running: the
    run does not wait for them (a thread cannot be stopped), so they are abandoned.

    On Ray the threads are those of the agent each worker built, which the workers
    report with each trial (``on_workers``: each one's latest report); the driver's
    own agent ran no trial."""
    still_running = getattr(agent, "still_running", None)
    labels: list[str] = still_running() if still_running is not None else []
    when = "at the end of the run"
    remote = [label for worker in sorted(on_workers) for label in on_workers[worker]]
    if remote:
        labels += remote
        when = "on the Ray workers when they last reported"
    if not labels:
        return
    threads = "1 agent thread was" if len(labels) == 1 else f"{len(labels)} agent threads were"
    message = f"{threads} still running {when}: {', '.join(labels)}; they were abandoned"
    if notify is not None:
        notify(message)
    else:
        warnings.warn(message, AbandonedThreadsWarning, stacklevel=2)


def _quiet(message: str) -> None:
    return None


def _notify(bar: RunProgress, on_trial: Callable[[Trial], None] | None) -> Callable[[Trial], None]:
    def done(trial: Trial) -> None:
        bar.advance(trial)
        if on_trial is not None:
            on_trial(trial)

    return done


def _open_run(
    db: Store,
    run_id: str | None,
    resuming: bool,
    suite: SuiteLike,
    agent: Agent,
    given: dict[str, Any],
    notify: Callable[[str], None],
    backend: str,
    recorded_once: dict[str, Any],
) -> tuple[Run, dict[str, Any], str | None, str, str]:
    """The run's header and settings, the run's id when it was made here (``None``
    for a resumed run), this session's mark on it (`Store.mark_opened`), and its claim
    on it (`agentgauge.store.claims.claim`); a run another session is writing is refused,
    the claim of one that died is taken over with a note;
    ``recorded_once`` goes into a new run's config (its components and baseline role;
    a resumed run keeps what it recorded). The plan is checked (`_check_plan`) before
    anything is written.

    All in one write transaction, from reading whether the run exists to making or
    updating it: of two sessions started together with the same ``--run-id`` one makes
    it, and the other (``resuming`` False: the run was not there when it started) says
    so; it was told the run "already exists", though the same command resumes it."""
    with db.transaction():
        if not resuming and run_id is not None and db.get_run(run_id) is not None:
            # Not resumed at once: both sessions would run every cell, and the second to
            # write one would stop with "already stored", having paid for its trials.
            raise InputError(
                f"run {run_id!r} was made by another session after this command started; "
                "once that session has ended, running this command again resumes it",
                field="--run-id",
            )
        token = _claim(db, run_id, notify) if run_id is not None else None
        header, cfg, created = _make_or_resume(
            db, run_id, suite, agent, given, notify, backend, recorded_once
        )
        if token is None:
            token = _claim(db, header.run_id, notify)
        return header, cfg, created, db.mark_opened(header.run_id), token


def _claim(db: Store, run_id: str, notify: Callable[[str], None]) -> str:
    token, took_over = claim(db.conn, run_id)
    if took_over is not None:
        notify(took_over)
    return token


def _make_or_resume(
    db: Store,
    run_id: str | None,
    suite: SuiteLike,
    agent: Agent,
    given: dict[str, Any],
    notify: Callable[[str], None],
    backend: str,
    recorded_once: dict[str, Any],
) -> tuple[Run, dict[str, Any], str | None]:
    """`_open_run`'s work, in its transaction."""
    existing = db.get_run(run_id) if run_id else None
    if existing is None:
        cfg = _settled(given, {})
    else:
        maker = _maker(existing.source)
        if maker is not None:
            # Its settings were never run's (agent None...): compared below, they would
            # name a setting to change that could not make the resume possible.
            raise InputError(
                f"run {existing.run_id!r} was made by {maker}, not run; choose another --run-id",
                field="--run-id",
            )
        # Each named by the option (or argument) that gives it: the model is part of
        # --agent (openai:MODEL), the suite's version is the SUITE's content.
        for label, option, old, new in (
            ("agent", "--agent", existing.agent, agent.name),
            ("model", "--agent", existing.model, agent.model),
            ("suite_version", "suite", existing.suite_version, suite.version),
        ):
            if old != new:
                raise InputError(
                    f"run {existing.run_id!r} was made with {label} {old!r}, not {new!r}; "
                    "resume with the same settings or choose another --run-id",
                    field=option,
                )
        _check_components(existing, recorded_once.get(COMPONENTS_KEY) or {})
        recorded = existing.config
        cfg = _settled(given, recorded)
        for key in _PINNED:
            if key in recorded and cfg[key] != recorded[key]:
                raise InputError(
                    f"run {existing.run_id!r} was made with --{key} {recorded[key]!r}; "
                    f"resuming with --{key} {cfg[key]!r} would mix two designs",
                    field=f"--{key}",
                )
    try:
        cfg["variants"] = check_variants(cfg["variants"])
    except InputError as exc:
        raise InputError(exc.reason, field="--variants") from None
    for key in ("trials", "concurrency"):
        if not isinstance(cfg[key], int) or isinstance(cfg[key], bool) or cfg[key] < 1:
            # As `_check_design` words it: the option, then what is wrong with it.
            raise InputError(f"must be a positive integer, got {cfg[key]!r}", field=f"--{key}")
    _check_plan(suite.tasks, cfg)
    if existing is not None:
        _check_growth(existing, cfg, notify)
        merged = {**existing.config, **cfg}
        if merged != existing.config:
            db.update_run_config(existing.run_id, merged)
            existing = existing.model_copy(update={"config": merged})
        return existing, cfg, None
    header = Run(
        run_id=run_id or new_run_id(),
        agent=agent.name,
        model=agent.model,
        suite=suite.name,
        suite_version=suite.version,
        created_at=utc_now(),
        source="harness",
        config={**cfg, "backend": backend, **recorded_once},
    )
    db.create_run(header)
    db.add_tasks(header.run_id, suite.tasks)
    return header, cfg, header.run_id


def _maker(source: str | None) -> str | None:
    """The command that made a run of ``source``, when it was not ``run`` (the
    harness): ``collect``, ``import otel``... A run that records no source (made
    before runs kept one) is taken as run's."""
    if source is None or source.startswith("harness"):
        return None
    kind, _, rest = source.partition(":")
    if kind == "import" and rest:
        return f"import {rest.partition(':')[0]}"
    return kind or repr(source)


def _settled(given: Mapping[str, Any], recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The run's settings: those ``given``, else a resumed run's ``recorded`` ones, else
    the defaults."""
    return {k: (recorded.get(k, DEFAULTS[k]) if v is None else v) for k, v in given.items()}


def _check_plan(tasks: Sequence[Task], cfg: Mapping[str, Any]) -> int:
    """The number of trials the run plans, refused past `MAX_RUN_TRIALS` before anything
    is written: ``--trials 100000000`` (a typo) ran out of memory listing its cells,
    after the run's header was written, and the empty run it left refused the
    corrected command as one that would shrink it."""
    per_trial, planned = count_cells(
        tasks,
        trials=cfg["trials"],
        variants=cfg["variants"],
        max_paraphrases=cfg["max_paraphrases"],
    )
    if planned == 0 and tasks and cfg["variants"]:
        # The variants select nothing (``paraphrase:3`` beyond every task's paraphrases):
        # refused as an empty suite is, not stored as an empty run that exits 0.
        raise InputError(
            f"{','.join(cfg['variants'])} selects no trial: "
            f"{_why_no_variant(tasks, cfg['variants'], cfg['max_paraphrases'])}",
            field="--variants",
        )
    if planned > MAX_RUN_TRIALS:
        raise InputError(
            f"{cfg['trials']:,} {plural(cfg['trials'], 'trial')} per task and variant "
            f"({per_trial:,} of them) make "
            f"{planned:,} trials, more than the {MAX_RUN_TRIALS:,} one run may hold: give "
            "a smaller --trials (a larger design goes into several runs)",
            field="--trials",
        )
    return planned


def _why_no_variant(
    tasks: Sequence[Task], variants: Sequence[str], max_paraphrases: int | None
) -> str:
    """Why ``variants`` make no cell for any of ``tasks`` (only paraphrase variants
    can: a task without enough paraphrases is skipped for them)."""
    most = max(len(t.paraphrases) for t in tasks)
    if max_paraphrases == 0 and "paraphrase" in variants:
        return "--paraphrases 0 allows none (add base, or allow some paraphrases)"
    wanted = [int(v.split(":", 1)[1]) for v in variants if v.startswith("paraphrase:")]
    if wanted:
        n = min(wanted)
        have = f"the most any task has is {most}" if most else "no task has any"
        return f"no task has {n} paraphrase{'s' if n > 1 else ''} ({have})"
    return "no task has paraphrases (add them under the task's paraphrases, or add base)"


async def _unless_interrupted(step: Awaitable[Any], stop: Stop) -> None:
    """Await ``step`` (the agent's check), cancelled by Ctrl-C: the caller reads
    ``stop.interrupted`` next. asyncio's own handler did this before the run's handler
    was installed for the whole run (`arun`)."""
    task = asyncio.ensure_future(step)

    def cancel() -> None:
        task.cancel()

    stop.on_interrupt(cancel)
    try:
        await task
    except asyncio.CancelledError:
        if not (stop.interrupted and task.cancelled()):
            raise


#: Components a resume need not repeat: the tool set is observed as trials run, and the
#: graders name agentgauge's version, which an upgrade between the two changes (the
#: grades of each trial stay those it was recorded with; `agentgauge grade` re-grades).
_RESUME_FREE = frozenset({"tool_set", "graders"})


def _check_components(existing: Run, declared: Mapping[str, Any]) -> None:
    """Refuse a resume whose agent declares a component other than the one the run
    recorded (a new system prompt, temperature, agent version...): its trials would
    measure two configurations as one. A component unknown on either side is not
    compared."""
    recorded = existing.config.get(COMPONENTS_KEY)
    if not isinstance(recorded, Mapping):
        return
    for key, words in COMPONENTS.items():
        new, old = declared.get(key), recorded.get(key)
        if key in _RESUME_FREE or new is None or old is None or new == old:
            continue
        if key == "system_prompt" and new == ENVIRONMENT_POLICY:
            continue  # recorded as the digest of the policies the environments offered
        raise InputError(
            f"run {existing.run_id!r} was made with {words} {old!r}, not {new!r}; resuming "
            "would measure two configurations as one: resume with the same agent settings "
            "or choose another --run-id",
            field=key,
        )


def _check_growth(existing: Run, cfg: dict[str, Any], notify: Callable[[str], None]) -> None:
    """A resume may add trials or variants, never take them away: trials are not deleted,
    so a smaller design would leave the run's header describing fewer cells than it holds."""
    recorded_trials = existing.config.get("trials", DEFAULTS["trials"])
    recorded_variants = list(existing.config.get("variants", DEFAULTS["variants"]))
    if cfg["trials"] < recorded_trials:
        raise InputError(
            f"run {existing.run_id!r} already has {counted(recorded_trials, 'trial')} per task and "
            f"variant; resuming with {cfg['trials']} would not remove any: give "
            f"--trials {recorded_trials} or more, or leave --trials out",
            field="--trials",
        )
    dropped = [v for v in recorded_variants if v not in cfg["variants"]]
    if dropped:
        raise InputError(
            f"run {existing.run_id!r} was made with variants {', '.join(recorded_variants)}; "
            f"resuming without {', '.join(dropped)} would not remove them: give them again "
            "(more may be added), or leave --variants out",
            field="--variants",
        )
    if cfg["trials"] > recorded_trials:
        notify(
            f"extending run {existing.run_id} from {recorded_trials} to {cfg['trials']} "
            "trials per task and variant"
        )
    added = [v for v in cfg["variants"] if v not in recorded_variants]
    if added:
        notify(f"extending run {existing.run_id} with variants {', '.join(added)}")


async def _execute(
    cells: Iterable[Cell],
    count: int,
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
    breaker: CircuitBreaker,
    stop: Stop,
) -> int:
    """Run ``cells`` (``count`` of them) until done or stopped; the number of trials
    committed."""
    queue = iter(cells)
    # Each trial is committed in its own transaction, on the writer's thread: a
    # crash loses only trials in flight or not yet committed.
    writer = TrialWriter(db, run_id)

    async def worker() -> None:
        # Workers pull from one iterator: bounded concurrency without one task per cell.
        try:
            for cell in queue:
                if stop.stopped:
                    return
                trial = await attempt_cell(
                    cell,
                    agent,
                    factory,
                    timeout=timeout,
                    grader=grader,
                    infra_retries=infra_retries,
                    stopped=lambda: stop.stopped,
                )
                if stop.interrupted:
                    # Finished after Ctrl-C, which may have cut it short: not the agent's
                    # error, so the resume reruns it.
                    return
                await keep_trial(trial, writer, on_done, breaker, stop)
        except asyncio.CancelledError:
            if not stop.interrupted:
                raise
            # Ctrl-C: the trial in flight is dropped, its cell stays missing for a resume.

    # A Ctrl-C before the first launch (while the run started) launches nothing.
    launched = 0 if stop.stopped else min(concurrency, count)
    workers = [asyncio.create_task(worker()) for _ in range(launched)]

    def cancel_workers() -> None:
        for w in workers:
            w.cancel()

    stop.on_interrupt(cancel_workers)
    try:
        with fewer_young_collections():  # the trials in flight are not garbage
            await asyncio.gather(*workers)
    except asyncio.CancelledError:
        # A worker cancelled by Ctrl-C before its first step never reached its own
        # handler above; the interrupt is reported by the caller, not as a cancellation.
        if not stop.interrupted:
            raise
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await writer.close()  # waits for the last commits; raises a write error
    return writer.committed
