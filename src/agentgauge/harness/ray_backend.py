"""The Ray backend (``--backend ray``; docs/ray.md): each cell a Ray task, the store
written by the driver alone.

What travels to the workers is a `WorkerKit`, put in Ray's object store once per
run: the suite's tasks, the agent *as the user gave it* (a spec string such as
``builtin:careful`` or ``my_agents:solve``, or a Python callable, which Ray's
cloudpickle sends by reference when it is importable and by value otherwise), the
environment factory (``None``: the tasks' own environments, as locally), the grader,
the timeout and the infra retries. A worker builds the agent and the factory from it
once and keeps them, with one event loop, for every later trial of the run it is
given (`_worker_kit`): the per-agent state an actor would hold (an endpoint's
connection pool, a reference agent's plans) is built once per process, while each
trial stays a plain task that Ray can schedule anywhere and that dies alone.

The driver keeps at most ``concurrency`` tasks outstanding (`asyncio.wait` over the
tasks' futures: `ray.wait`'s asyncio twin, so the store's writer keeps running on
the same loop), and each result goes through `agentgauge.harness.keep.keep_trial`
as a local trial does: one writer, one transaction per trial, the store's unique
index on the cell as the backstop, so every cell is written exactly once. A task
whose worker died (`_deaths`: the process was killed, its node left, it ran out of
memory) is submitted again, at most ``worker_retries`` times, then recorded as an
infra error with Ray's reason; any other failure (a module the worker cannot import)
is recorded at once. Ctrl-C cancels every outstanding task (`ray.cancel`,
``force=True``) and writes none of them. Ray shut down under the run (by other code
in the process) stops it as the circuit breaker does, the outstanding cells left
for a resume, instead of waiting for results that will never come.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from agentgauge.agents.base import Agent
from agentgauge.envs.base import EnvFactory
from agentgauge.errors import InputError
from agentgauge.harness.breaker import CircuitBreaker
from agentgauge.harness.cells import Cell
from agentgauge.harness.configuration import ObservingFactory
from agentgauge.harness.keep import keep_trial
from agentgauge.harness.stopping import Stop
from agentgauge.harness.trial import Scorer, attempt_cell, infra_error_trial
from agentgauge.schema import Task, Trial
from agentgauge.store import Store, TrialWriter
from agentgauge.textio import is_digits

__all__ = [
    "INSTALL_HINT",
    "WorkerKit",
    "check_shippable",
    "execute_on_ray",
    "ray_session",
    "require_ray",
]

INSTALL_HINT = "the Ray backend needs ray: pip install 'agentgauge[ray]'"

#: Times a trial is submitted again after its worker died, by default (Ray's own
#: default for ``max_retries``).
DEFAULT_WORKER_RETRIES = 3

#: Seconds without a result after which the driver checks again that Ray is connected.
LOST_CHECK = 5.0
LOST = "the connection to Ray was lost (ray.shutdown() was called in this process)"


def require_ray() -> ModuleType:
    """The ``ray`` module, or an `InputError` (exit 2) saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(INSTALL_HINT, field="--backend") from None
    return ray


#: Seconds `ray_session` waits for ``ray.init`` to connect to a cluster: an open port
#: that is not Ray's (a web server, the dashboard) leaves it retrying for minutes.
CONNECT_TIMEOUT = 20.0

#: The sessions of this process that use the Ray a `ray_session` started or connected
#: (runs may overlap: ``asyncio.gather`` of two `arun` calls): the last to leave shuts
#: it down, so that no run's Ray is shut down under another's feet.
_users = 0
_users_lock = threading.Lock()


@contextlib.contextmanager
def ray_session(
    address: str | None,
    *,
    num_cpus: int | None = None,
    stop: Stop | None = None,
    timeout: float | None = None,
) -> Iterator[ModuleType]:
    """Ray, connected: to ``address`` (``auto``, ``ray://HOST:10001``, ``HOST:6379``) when
    given, else to a local instance started here (``num_cpus``: Ray's detection when
    ``None``). A session this process already holds is used as it is: one a user
    started is left to them, one a `ray_session` started is shut down when the last
    session using it leaves.

    Connecting to ``address`` waits at most ``timeout`` seconds (`CONNECT_TIMEOUT`
    when ``None``), and a Ctrl-C
    (``stop.interrupted``) ends the wait: Ray is then not connected, and the caller
    reads ``stop`` before using it."""
    global _users
    ray = require_ray()
    if address is not None:
        _check_address(address)
    with _users_lock:
        if _users:
            _users += 1
            ours = True
        elif ray.is_initialized():
            ours = False  # the user's own session: theirs to shut down
        else:
            # Not ours when a Ctrl-C ended the wait: nothing to shut down.
            ours = _start(ray, address, num_cpus, stop, timeout or CONNECT_TIMEOUT)
            _users = 1 if ours else 0
    if not ours:
        yield ray
        return
    try:
        yield ray
    finally:
        with _users_lock:
            _users -= 1
            if not _users:
                ray.shutdown()


def _start(
    ray: ModuleType,
    address: str | None,
    num_cpus: int | None,
    stop: Stop | None,
    timeout: float,
) -> bool:
    """Start or connect Ray for `ray_session`; ``False`` when a Ctrl-C ended the wait."""
    if address is not None:
        _check_reachable(address)
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR"}
    if address is None:
        options |= {"num_cpus": num_cpus, "include_dashboard": False}
    try:
        if address is None:
            # Python code that starts Ray's processes: a Ctrl-C is seen when it ends,
            # and what it started is shut down then (a start abandoned halfway would
            # leave them running).
            ray.init(**options)
        elif not _connect(ray, address, options, stop, timeout):
            return False
    except (ConnectionError, ValueError, RuntimeError) as exc:
        if address == "auto" and isinstance(exc, ConnectionError):
            # Ray's own words point at its `--address` flag, which `agentgauge run` has not.
            raise InputError(
                "no Ray cluster is running on this machine (start one with `ray start "
                "--head`), or give --ray-address HOST:PORT",
                field="--ray-address",
            ) from None
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise InputError(f"cannot connect to {where}: {exc}", field="--ray-address") from None
    _quiet_worker_errors()
    return True


def _connect(
    ray: ModuleType, address: str, options: dict[str, Any], stop: Stop | None, timeout: float
) -> bool:
    """``ray.init(address)`` in a thread of its own, waited for at most ``timeout``
    seconds: it blocks in Ray's native code, where neither a deadline nor Ctrl-C
    reaches the main thread. ``False`` when a Ctrl-C ended the wait. A connection
    abandoned (past its deadline, or interrupted) that is made later is shut down."""
    done = threading.Event()
    lock = threading.Lock()
    outcome: dict[str, Any] = {}

    def connect() -> None:
        try:
            ray.init(address=address, **options)
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        with lock:
            done.set()
            if outcome.get("abandoned") and "error" not in outcome:
                ray.shutdown()

    threading.Thread(target=connect, name="agentgauge-ray-connect", daemon=True).start()
    end = time.monotonic() + timeout
    while not done.wait(0.05):
        late = time.monotonic() >= end
        if late or (stop is not None and stop.interrupted):
            with lock:
                if not done.is_set():
                    outcome["abandoned"] = True
                    if not late:
                        return False
                    raise InputError(
                        f"cannot connect to the Ray cluster at {address}: no answer in "
                        f"{timeout:g} s; is it a Ray cluster's address (HOST:6379, or "
                        "ray://HOST:10001 for Ray Client)?",
                        field="--ray-address",
                    )
    if "error" in outcome:
        raise outcome["error"]
    return True


def _check_address(address: str) -> None:
    """Refuse an address Ray would misread: an empty one (Ray's "Invalid address
    format: "), and an ``http://`` one (the dashboard's or a job server's, which Ray
    took for a host name called "http")."""
    if not address.strip():
        raise InputError(
            "empty address; give auto, HOST:6379 or ray://HOST:10001", field="--ray-address"
        )
    scheme = address.split("://", 1)[0].lower() if "://" in address else ""
    if scheme in ("http", "https"):
        raise InputError(
            f"{address} is not a Ray address ({scheme}:// is the dashboard's or a job "
            "server's); give the cluster's HOST:6379, or ray://HOST:10001 for Ray Client",
            field="--ray-address",
        )


def _check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) nothing listens on: ``ray.init``
    would retry it for minutes before giving up."""
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not is_digits(port):
        return  # ``auto``, or a form Ray itself reads and reports on
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise InputError(
            f"cannot reach the Ray cluster at {address} ({exc}); is `ray start --head` "
            "running there, with that port open to this machine?",
            field="--ray-address",
        ) from None


def _quiet_worker_errors() -> None:
    """Stop the thread Ray starts in the driver to print the cluster's error messages
    (``(raylet) A worker died or was killed...``, with colour escapes) to stdout,
    where only the run's summary belongs: a worker's death is recorded on its
    trial, with Ray's reason. Ray Client (``ray://``) has no such thread. Ray's own
    shutdown stops and closes it again, as it does for every session.

    Ray has no public switch for it (``log_to_driver=False`` silences the workers'
    output, not these): this reaches into ``ray._private.worker``, so a Ray in which
    that module or the driver's thread, subscriber or stop flag is not where Ray 2
    keeps them is left as it is (its messages print; the run is the same)."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    driver = getattr(ray_worker, "global_worker", None)
    thread = getattr(driver, "listener_thread", None)
    close = getattr(getattr(driver, "gcs_error_subscriber", None), "close", None)
    stopped = getattr(driver, "threads_stopped", None)
    if not (
        isinstance(thread, threading.Thread)
        and isinstance(stopped, threading.Event)
        and callable(close)
        and thread.is_alive()
    ):
        return
    stopped.set()  # read by that thread (and Ray's log printer) only
    try:
        close()  # the subscriber's: ends the thread's wait for the next message
        thread.join(timeout=5)
    finally:
        stopped.clear()


@dataclass(frozen=True)
class WorkerKit:
    """What a worker needs to run any cell of a run (pickled once, shared by its tasks)."""

    key: str
    """Unique per run session: a worker keeps what it built from one kit under it."""
    tasks: tuple[Task, ...]
    agent: Any
    """The agent as the user gave it: a spec string, a callable or an `Agent`."""
    agent_options: dict[str, Any] = field(default_factory=dict)
    env_factory: EnvFactory | None = None
    """``None``: `agentgauge.harness.runner.default_env_factory` of the tasks."""
    grader: Scorer | None = None
    timeout: float | None = None
    infra_retries: int = 0


def check_shippable(
    agent: Any,
    agent_options: dict[str, Any],
    env_factory: EnvFactory | None,
    grader: Scorer | None,
    *,
    agent_name: str,
) -> None:
    """An `InputError` naming what cannot be sent to the Ray workers (an agent holding
    a lock or a socket, say), before anything is written."""
    from ray import cloudpickle

    parts = (
        ("--agent", agent, f"the agent {agent_name}"),
        ("--agent", agent_options, f"the options of the agent {agent_name}"),
        ("environment", env_factory, "the environment factory"),
        ("grader", grader, "the grader"),
    )
    for field_name, value, label in parts:
        try:
            cloudpickle.dumps(value)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise InputError(
                f"{label} cannot be sent to Ray workers ({type(exc).__name__}: {exc}); "
                "give an importable package.module:function (importable on the workers "
                "too), or run it with --backend local",
                field=field_name,
            ) from None


@dataclass
class _Built:
    """What one worker process built from a kit, kept for the run's later trials."""

    key: str
    tasks: dict[str, Task]
    agent: Agent
    factory: ObservingFactory
    loop: asyncio.AbstractEventLoop
    kit: WorkerKit


_BUILT: list[_Built] = []  # at most one: a worker serves one run at a time


def _worker_kit(key: str, boxed: list[Any]) -> _Built:
    """The agent, factory and event loop of kit ``key`` in this worker, built on first use.
    ``boxed`` holds the kit's object ref inside a list, so Ray does not fetch and
    unpickle the kit for every task: only a worker that has not built it reads it."""
    if _BUILT and _BUILT[0].key == key:
        return _BUILT[0]
    import ray

    from agentgauge.agents.resolve import resolve_agent
    from agentgauge.harness.runner import default_env_factory, with_variants

    kit: WorkerKit = ray.get(boxed[0])
    if _BUILT:
        _close(_BUILT.pop())
    agent = resolve_agent(kit.agent, tasks=list(kit.tasks), **kit.agent_options)
    factory = with_variants(kit.env_factory) if kit.env_factory else default_env_factory(kit.tasks)
    built = _Built(
        key,
        {t.id: t for t in kit.tasks},
        agent,
        ObservingFactory(factory),
        asyncio.new_event_loop(),
        kit,
    )
    _BUILT.append(built)
    return built


def _close(built: _Built) -> None:
    close = getattr(built.agent, "aclose", None)
    with contextlib.suppress(Exception):  # best effort: the trials are recorded already
        if close is not None:
            built.loop.run_until_complete(close())
        built.loop.close()


@dataclass(frozen=True)
class WorkerResult:
    """What one Ray task brings back to the driver."""

    trial: Trial
    """The cell's trial, graded as locally."""
    seen: dict[str, list[str]]
    """The tool-set and policy digests this worker's environments offered so far (for
    the run's header)."""
    worker: str
    """The worker process (``HOST:PID``) that ran it."""
    still_running: list[str]
    """The trials (``TASK trial N``) whose agent thread this worker abandoned past its
    timeout and is still running: only the worker's agent knows them."""


def run_on_worker(
    key: str, boxed: list[Any], task_id: str, trial: int, variant: str, seed: int
) -> WorkerResult:
    """One cell, on a Ray worker: its trial and what the driver reports of the worker."""
    built = _worker_kit(key, boxed)
    kit = built.kit
    cell = Cell(built.tasks[task_id], trial, variant, seed)
    result = built.loop.run_until_complete(
        attempt_cell(
            cell,
            built.agent,
            built.factory,
            timeout=kit.timeout,
            grader=kit.grader,
            infra_retries=kit.infra_retries,
        )
    )
    still_running = getattr(built.agent, "still_running", None)
    return WorkerResult(
        result,
        built.factory.seen(),
        f"{socket.gethostname()}:{os.getpid()}",
        still_running() if still_running is not None else [],
    )


@dataclass
class _Outstanding:
    ref: Any
    cell: Cell
    attempts: int
    started: float


async def execute_on_ray(
    cells: Iterable[Cell],
    kit: WorkerKit,
    agent: Agent,
    observer: ObservingFactory,
    db: Store,
    run_id: str,
    *,
    concurrency: int,
    on_done: Callable[[Trial], None],
    breaker: CircuitBreaker,
    stop: Stop,
    worker_retries: int = DEFAULT_WORKER_RETRIES,
    still_running: dict[str, list[str]] | None = None,
) -> int:
    """Run ``cells`` as Ray tasks (Ray connected already: `ray_session`) until done or
    stopped; the number of trials committed. ``agent`` is the driver's own build of
    the agent, for the name and model of a trial whose worker died; ``observer``
    gathers the digests the workers report, and ``still_running`` the agent threads
    each worker last said it had abandoned (by worker), for the end-of-run report."""
    import ray

    if stop.stopped:  # before anything reaches Ray, which may not be connected
        return 0
    boxed = [ray.put(kit)]
    remote = ray.remote(num_cpus=1, max_retries=0)(run_on_worker)
    writer = TrialWriter(db, run_id)
    queue = iter(cells)
    outstanding: dict[asyncio.Future[Any], _Outstanding] = {}

    def launch(cell: Cell, attempts: int, started: float) -> None:
        if not ray.is_initialized():
            return  # lost (the loop stops the run): a task now would start another Ray
        ref = remote.remote(kit.key, boxed, cell.task.id, cell.trial, cell.variant, cell.seed)
        outstanding[asyncio.wrap_future(ref.future())] = _Outstanding(ref, cell, attempts, started)

    def cancel_outstanding() -> None:
        # Ctrl-C: nothing in flight is written; the cells stay missing for a resume.
        for future, task in outstanding.items():
            future.cancel()
            with contextlib.suppress(Exception):
                ray.cancel(task.ref, force=True)

    stop.on_interrupt(cancel_outstanding)
    try:
        while True:
            if not ray.is_initialized():
                # Nothing will come back, and a task launched now would start another
                # Ray: the run stops; a resume runs the outstanding cells again.
                breaker.trip(LOST)
                stop.halt(LOST)
                break
            while len(outstanding) < concurrency and not stop.stopped:
                cell = next(queue, None)
                if cell is None:
                    break
                launch(cell, 1, time.monotonic())
            if not outstanding:
                break
            finished, _ = await asyncio.wait(
                outstanding, timeout=LOST_CHECK, return_when=asyncio.FIRST_COMPLETED
            )
            for future in finished:
                task = outstanding.pop(future)
                if stop.interrupted or future.cancelled():
                    continue
                trial = _result(
                    future, task, agent, worker_retries, stop, launch, observer, still_running
                )
                if trial is not None:
                    await keep_trial(trial, writer, on_done, breaker, stop)
    finally:
        cancel_outstanding()
        outstanding.clear()
        await writer.close()  # waits for the last commits; raises a write error
    return writer.committed


def _result(
    future: asyncio.Future[Any],
    task: _Outstanding,
    agent: Agent,
    worker_retries: int,
    stop: Stop,
    launch: Callable[[Cell, int, float], None],
    observer: ObservingFactory,
    still_running: dict[str, list[str]] | None,
) -> Trial | None:
    """The trial a finished task brought back; ``None`` when it was submitted again."""
    from ray.exceptions import RayError, RayTaskError

    try:
        back: WorkerResult = future.result()
    except RayError as exc:
        # Only a death is worth another attempt: an agent or world the worker cannot
        # build, or a module it cannot import to unpickle them, fails every time.
        died = isinstance(exc, _deaths())
        if died and task.attempts <= worker_retries and not stop.stopped:
            launch(task.cell, task.attempts + 1, task.started)
            return None
        if died:
            times = "once" if task.attempts == 1 else f"{task.attempts} times"
            reason = f"the Ray worker running this trial died {times}: {_first_line(exc)}"
        else:
            cause = exc.cause if isinstance(exc, RayTaskError) else exc
            reason = f"the Ray worker could not run this trial: {_first_line(cause)}"
        trial = infra_error_trial(task.cell, agent, reason, started=task.started)
    else:
        trial = back.trial
        observer.tools.update(back.seen["tool_set"])
        observer.policies.update(back.seen["policy"])
        if still_running is not None:
            # The worker's latest word replaces its earlier one: a thread that has
            # ended since is no longer named.
            still_running[back.worker] = back.still_running
    if task.attempts > 1:
        trial.metadata["worker_attempts"] = task.attempts
    return trial


def _deaths() -> tuple[type[BaseException], ...]:
    """Ray's errors for a task whose process or node died under it (killed, out of
    memory, its node gone, its result lost with it): the same cell may succeed
    elsewhere."""
    from ray import exceptions

    return (
        exceptions.WorkerCrashedError,
        exceptions.NodeDiedError,
        exceptions.OutOfMemoryError,
        exceptions.LocalRayletDiedError,
        exceptions.ObjectLostError,
    )


#: The command-line option of an `InputError` a worker raises while building what the
#: user gave (the agent: its field in the Python API is ``agent``).
_OPTIONS = {"agent": "--agent"}


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, InputError):  # the user's to fix: worded as a local run words it
        field = _OPTIONS.get(exc.field or "", exc.field)
        return InputError(exc.reason, file=exc.file, line=exc.line, field=field).message
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
