"""``--backend ray`` on a real local Ray instance with 2 CPUs (one per module: it takes
seconds to start): the same trials and metrics as the local backend for the same
seeds; a worker killed mid-trial is retried and every cell stored exactly once; a
trial whose worker always dies is an infra error saying so; an interrupted run
resumes with only its missing cells; and without ray the command says how to
install it.

The test agents live in a module written to a temporary folder that is on the
import path of this process, of the Ray workers (the raylet inherits
``PYTHONPATH``) and of the CLI subprocess, as a user's agent module must be.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentgauge
from agentgauge.errors import InputError, RunStopped
from agentgauge.harness.runner import run
from agentgauge.schema import Task, Trial
from agentgauge.store import Store
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion, tool_call

ROOT = Path(__file__).resolve().parents[2]

AGENTS = '''
import asyncio
import os
import signal
import socket
import time
from pathlib import Path

from agentgauge.agents.base import TransientError
from agentgauge.testing.worlds import counting_agent

MARKS = Path(__file__).parent / "marks"


async def dies_once(session):
    """Kills its own process on its first attempt at task t1, trial 1 (a marker file
    remembers the attempt across processes); solves every other trial."""
    mark = MARKS / f"{session.task_id}-{session.trial}"
    if session.task_id == "t1" and session.trial == 1 and not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    await counting_agent(session)


async def dies_first(session):
    """Kills its own process on its first attempt at each task (marker files, by task)."""
    mark = MARKS / f"first-{session.task_id}"
    if not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    await counting_agent(session)


async def always_dies(session):
    """Kills its process on every attempt at task t1."""
    if session.task_id == "t1":
        (MARKS / f"attempt-{os.getpid()}").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    await counting_agent(session)


async def provider_down(session):
    """Every trial an infra error, as with an endpoint that is down."""
    raise TransientError("503 Service Unavailable")


async def slow(session):
    await asyncio.sleep(0.05)
    await counting_agent(session)


async def slow_second(session):
    await asyncio.sleep(3)
    await counting_agent(session)


def stuck_on_t1(session):
    """A plain def, so it runs in a thread: at task t1 it outlives any short timeout."""
    if session.task_id == "t1":
        time.sleep(20)
    else:
        session.say("done")
'''


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The test agents' module, importable here and on the workers; Ray running."""
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    folder = tmp_path_factory.mktemp("ray_agents")
    (folder / "ray_test_agents.py").write_text(AGENTS)
    (folder / "marks").mkdir()
    old_path, old_env = list(sys.path), os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(folder))
    # The raylet, hence every worker, inherits this process's environment at ray.init.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(folder), str(ROOT / "src"), *([old_env] if old_env else [])]
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield folder
    finally:
        ray.shutdown()
        sys.path[:] = old_path
        if old_env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_env


def counter_tasks(n: int = 3) -> list[Task]:
    # Each task names its world, so the workers build it from the task as locally.
    return [
        Task(
            id=f"t{i}",
            family=f"f{i % 2}",
            instruction=f"please add {i + 1}",
            environment="agentgauge.testing.worlds:make_counter_env",
            expectations={"final_state": {"counter": i + 1}, "control": "act"},
        )
        for i in range(n)
    ]


def cells(db: Path, run_id: str) -> Counter[tuple[str, int, str]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT task_id, trial, variant FROM trials WHERE run_id = ?", (run_id,)
        ).fetchall()
    finally:
        conn.close()
    return Counter((str(t), int(i), str(v)) for t, i, v in rows)


def stored(db: Path, run_id: str) -> dict[tuple[str, int, str], Trial]:
    with Store(db, readonly=True) as store:
        return {(t.task_id, t.trial, t.variant): t for t in store.trials(run_id)}


# First in the module: the tests after it keep a Ray instance running on this machine.
def test_auto_with_no_cluster_on_this_machine_says_how_to_start_one(tmp_path: Path) -> None:
    # Ray's own words sent the user to an `--address` flag that `agentgauge run` has not.
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    from ray._private.services import find_gcs_addresses

    if find_gcs_addresses():
        pytest.skip("a Ray instance is running on this machine: auto would connect to it")
    db = tmp_path / "s.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAY_TMPDIR": str(tmp_path)}
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", "builtin:retail", "--agent", "builtin:null",
         "--store", str(db), "--backend", "ray", "--ray-address", "auto"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "agentgauge: error: --ray-address: no Ray cluster is running on this machine (start "
        "one with `ray start --head`), or give --ray-address HOST:PORT"
    ]
    assert not db.exists()


def _listening_socket() -> socket.socket:
    """A port that accepts connections and never answers: not a Ray cluster."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    return server


#: A line Ray's native code logs (`[2026-12-07 02:40:27,541 W 28327 28468] rpc_client.h:153:
#: Failed to connect to GCS ...`): its thread of an abandoned connection may print one
#: after ours, on a loaded machine, before the process exits.
_RAY_NATIVE_LOG = re.compile(r"\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\] ")


def _ours(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are not Ray's native log lines."""
    return [line for line in stderr.strip().splitlines() if not _RAY_NATIVE_LOG.match(line)]


def _cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentgauge", *args]


def _env(*paths: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT / "src")])}
    env.pop("RAY_ADDRESS", None)
    return env


def test_a_port_that_is_not_ray_is_one_line_after_a_deadline(tmp_path: Path) -> None:
    # ray.init blocked for minutes in Ray's native code, deaf to Ctrl-C.
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    db = tmp_path / "s.db"
    wrapper = textwrap.dedent(
        """
        import sys
        from agentgauge.harness import ray_backend
        ray_backend.CONNECT_TIMEOUT = 3.0
        from agentgauge.cli import main
        sys.argv = ["agentgauge", *sys.argv[1:]]
        main()
        """
    )
    with _listening_socket() as server:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        started = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-c", wrapper, "run", "builtin:retail", "--agent", "builtin:null",
             "--store", str(db), "--backend", "ray", "--ray-address", address],
            capture_output=True, text=True, timeout=120, env=_env(),
        )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert time.monotonic() - started < 60
    assert _ours(out.stderr)[-1] == (
        f"agentgauge: error: --ray-address: cannot connect to the Ray cluster at {address}: "
        "no answer in 3 s; is it a Ray cluster's address (HOST:6379, or ray://HOST:10001 for "
        "Ray Client)?"
    )
    assert not db.exists()


def test_ctrl_c_while_connecting_to_a_port_that_is_not_ray_is_130(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    db = tmp_path / "s.db"
    with _listening_socket() as server:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        argv = _cli_argv("run", "builtin:retail", "--agent", "builtin:null", "--store", str(db),
                         "--run-id", "r", "--backend", "ray", "--ray-address", address)  # fmt: skip
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
        )
        server.settimeout(60)
        probed, _ = server.accept()  # the check that the port is open: ray.init next
        try:
            time.sleep(3)  # well inside ray.init, and far from its 20 s deadline
            _, err = _interrupt_when(proc, lambda: True)
        finally:
            probed.close()
    assert proc.returncode == 130, err
    assert _ours(err)[-1].startswith("interrupted: 0 trials saved; resume with: ")
    assert not db.exists()


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("", "--ray-address: empty address; give auto, HOST:6379 or ray://HOST:10001"),
        (
            "http://127.0.0.1:8265",
            "--ray-address: http://127.0.0.1:8265 is not a Ray address (http:// is the "
            "dashboard's or a job server's); give the cluster's HOST:6379, or "
            "ray://HOST:10001 for Ray Client",
        ),
    ],
)
def test_an_address_ray_would_misread_is_refused_in_its_own_words(
    tmp_path: Path, address: str, says: str
) -> None:
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    with pytest.raises(InputError) as caught:
        run(counter_tasks(), "builtin:null", store=tmp_path / "s.db", backend="ray",
            ray_address=address, progress=False)  # fmt: skip
    assert str(caught.value) == says
    assert not (tmp_path / "s.db").exists()


def test_a_resume_that_cannot_reach_the_cluster_changes_nothing(tmp_path: Path) -> None:
    # The header took the new --trials and a held-out use was logged before the
    # connection failed; the original command was then refused.
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    from agentgauge.metrics.validity import HELDOUT_ACTION

    db = tmp_path / "s.db"
    suite = tmp_path / "suite.jsonl"
    tasks = [t.model_copy(update={"split": "heldout"} if t.id == "t0" else {})
             for t in counter_tasks()]  # fmt: skip
    suite.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    agent = "agentgauge.testing.worlds:counting_agent"
    first = ["run", str(suite), "--include-heldout", "--agent", agent, "--store", str(db),
             "--run-id", "r", "--no-progress"]  # fmt: skip
    assert (
        subprocess.run(_cli_argv(*first, "--trials", "3"), env=_env(), timeout=120).returncode == 0
    )
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    grow = ["--trials", "5", "--backend", "ray", "--ray-address", f"127.0.0.1:{port}"]
    out = subprocess.run(
        _cli_argv(*first, *grow), capture_output=True, text=True, timeout=120, env=_env()
    )
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()  # no "extending run r" before it
    assert line.startswith("agentgauge: error: --ray-address: cannot reach the Ray cluster")
    with Store(db, readonly=True) as store:
        header = store.get_run("r")
        assert header is not None and header.config["trials"] == 3
        assert len(store.audit_log(HELDOUT_ACTION)) == 1
    again = subprocess.run(_cli_argv(*first, "--trials", "3"), env=_env(), timeout=120,
                           capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 0, again.stderr


def test_ray_gives_the_same_trials_and_metrics_as_local(agents_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    common: dict[str, Any] = {
        "trials": 2,
        "variants": ["base", "fault:tool_error"],
        "seed": 11,
        "store": db,
        "progress": False,
        "concurrency": 4,
    }
    run("builtin:retail", "builtin:careful", run_id="local", **common)
    header = run("builtin:retail", "builtin:careful", run_id="ray", backend="ray", **common)
    assert header.config["backend"] == "ray"
    local, on_ray = stored(db, "local"), stored(db, "ray")
    assert len(local) == header.n_trials and len(local) > 200  # 59 tasks x 2 x 2
    assert local.keys() == on_ray.keys()
    fields = ("task_id", "trial", "variant", "seed", "success", "score", "final_state", "events")
    for cell, trial in local.items():
        other = on_ray[cell]
        for name in fields:
            assert getattr(other, name) == getattr(trial, name), (cell, name)
    # Not every trial the careful agent runs passes: the comparison covers both outcomes.
    assert 0 < sum(t.success for t in local.values()) < len(local)
    # To the last digit and in one order, although the store keeps trials in the order
    # they finished, which on Ray is not the local order: groups come in label order,
    # and sums over trials are taken in one order (the latency mean differed in its
    # last digit, 6.502341211159077 and ...076). The careful agent's latencies are
    # simulated, so even they agree.
    a, b = (agentgauge.metrics(f"{db}:{run_id}").to_dict() for run_id in ("local", "ray"))
    assert a == b
    assert [g["variant"] for g in a["groups"]] == ["base", "fault:tool_error"]


def counter_model(request: dict[str, Any]) -> Reply:
    """A model that solves counter tasks: the add call its instruction asks for, then done."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return Reply(body=completion("Done."))
    amount = int(messages[-1]["content"].split()[-1])
    return Reply(body=completion(tool_calls=[tool_call("add", {"amount": amount})]))


def test_an_endpoint_agent_serves_many_trials_per_worker_as_locally(
    agents_dir: Path, tmp_path: Path
) -> None:
    # Each worker builds the openai: adapter (its HTTP session) once, for all its trials.
    db = tmp_path / "s.db"
    with OpenAIServer(counter_model) as server:
        for backend in ("local", "ray"):
            run(
                counter_tasks(),
                "openai:fake-model",
                trials=4,
                store=db,
                run_id=backend,
                progress=False,
                backend=backend,
                agent_options={"base_url": server.base_url},
            )
    local, on_ray = stored(db, "local"), stored(db, "ray")
    assert len(on_ray) == 12 and local.keys() == on_ray.keys()
    assert all(t.success for t in on_ray.values())
    for cell, trial in local.items():
        for name in ("success", "final_state", "tool_calls", "model_calls", "input_tokens"):
            assert getattr(on_ray[cell], name) == getattr(trial, name), (cell, name)


def test_a_killed_worker_is_retried_and_every_cell_is_written_once(
    agents_dir: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    header = run(
        counter_tasks(),
        "ray_test_agents:dies_once",
        trials=4,
        store=db,
        progress=False,
        backend="ray",
        concurrency=2,
    )
    assert (agents_dir / "marks" / "t1-1").exists()  # the worker really was killed
    assert cells(db, header.run_id) == Counter(
        {(f"t{i}", k, "base"): 1 for i in range(3) for k in range(4)}
    )
    trials = stored(db, header.run_id)
    assert all(t.success and t.status == "completed" for t in trials.values())
    assert trials[("t1", 1, "base")].metadata["worker_attempts"] == 2
    assert "worker_attempts" not in trials[("t1", 0, "base")].metadata


def test_a_worker_that_always_dies_is_an_infra_error_with_its_reason(
    agents_dir: Path, tmp_path: Path, cli: Any
) -> None:
    db = tmp_path / "s.db"
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in counter_tasks(2)))
    for old in (agents_dir / "marks").glob("attempt-*"):
        old.unlink()
    args = ["run", str(suite), "--agent", "ray_test_agents:always_dies", "--store", str(db)]
    code, out, err = cli(*args, "--backend", "ray", "--run-id", "r", "--no-progress")
    assert code == 0, err
    # Ray's default of 3 retries: 4 attempts, each in a process that died.
    assert len(list((agents_dir / "marks").glob("attempt-*"))) == 4
    trials = stored(db, "r")
    dead = trials[("t1", 0, "base")]
    assert dead.status == "error" and dead.error_kind == "infra" and not dead.success
    assert dead.error is not None
    assert dead.error.startswith("the Ray worker running this trial died 4 times: ")
    assert "WorkerCrashedError" in dead.error and dead.metadata["worker_attempts"] == 4
    assert trials[("t0", 0, "base")].success
    # The run's summary shows the message where the user is looking.
    assert "the Ray worker running this trial died 4 times" in out
    assert "1 infra error" in out and "1 infra errors" not in out


def test_an_agent_the_workers_cannot_import_is_an_infra_error_naming_it(
    agents_dir: Path, tmp_path: Path
) -> None:
    # Importable here (the driver), not on the workers: a module not installed on the nodes.
    (tmp_path / "driver_only_agents.py").write_text(
        "from agentgauge.testing.worlds import counting_agent as solve\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        # Every trial an infra error: the run is stopped (exit 3) though every cell ran,
        # as locally; it used to end as if it had measured the agent.
        with pytest.raises(RunStopped, match="all 3 trials were infra errors") as caught:
            run(
                counter_tasks(),
                "driver_only_agents:solve",
                store=tmp_path / "s.db",
                run_id="r",
                progress=False,
                backend="ray",
            )
    finally:
        sys.path.remove(str(tmp_path))
    assert caught.value.saved == caught.value.total == 3
    trials = stored(tmp_path / "s.db", "r")
    assert len(trials) == 3
    for trial in trials.values():
        assert trial.status == "error" and trial.error_kind == "infra"
        assert trial.error is not None
        # Worded as a local run words it: the option, not the Python API's field name.
        assert trial.error.startswith(
            "the Ray worker could not run this trial: --agent: cannot import "
            "'driver_only_agents' for agent 'driver_only_agents:solve'"
        )
        assert "worker_attempts" not in trial.metadata  # the same every time: not retried


def test_a_function_the_workers_cannot_unpickle_is_not_retried(
    agents_dir: Path, tmp_path: Path
) -> None:
    # Sent by reference, it fails to unpickle on every worker: it was tried 4 times.
    (tmp_path / "driver_only_functions.py").write_text(
        "from agentgauge.testing.worlds import counting_agent\n\n"
        "async def solve(session):\n    await counting_agent(session)\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        from driver_only_functions import solve  # type: ignore[import-not-found]

        with pytest.raises(RunStopped):
            run(counter_tasks(1), solve, store=tmp_path / "s.db", run_id="r", progress=False,
                backend="ray")  # fmt: skip
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("driver_only_functions", None)
    (trial,) = stored(tmp_path / "s.db", "r").values()
    assert trial.error_kind == "infra" and trial.error is not None
    assert trial.error.startswith("the Ray worker could not run this trial: RaySystemError: ")
    assert "No module named 'driver_only_functions'" in trial.error
    assert "worker_attempts" not in trial.metadata


OVERLAPPING = """
import asyncio, sys
from agentgauge.harness.runner import arun
from agentgauge.testing.worlds import make_counter_env  # noqa: F401
from agentgauge.schema import Task

tasks = [Task(id=f"t{i}", instruction=f"please add {i + 1}",
              environment="agentgauge.testing.worlds:make_counter_env",
              expectations={"final_state": {"counter": i + 1}, "control": "act"})
         for i in range(3)]
address, store = sys.argv[1], sys.argv[2]

async def main():
    quick = arun(tasks, "agentgauge.testing.worlds:counting_agent", backend="ray",
                 ray_address=address, store=store, run_id="quick", progress=False)
    slow = arun(tasks, "ray_test_agents:slow_second", trials=2, concurrency=2, backend="ray",
                ray_address=address, store=store, run_id="slow", progress=False)
    for header in await asyncio.gather(quick, slow):
        print(header.run_id, header.n_trials)

asyncio.run(main())
"""


def test_two_overlapping_ray_runs_in_one_process_both_finish(
    agents_dir: Path, tmp_path: Path
) -> None:
    # The first to finish shut Ray down under the other, which then waited forever.
    import ray

    address = ray.get_runtime_context().gcs_address
    out = subprocess.run(
        [sys.executable, "-c", OVERLAPPING, address, str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=150, env=_env(agents_dir),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["quick", "3", "slow", "6"]


LOST = """
import sys
import ray
from agentgauge.errors import RunStopped
from agentgauge.harness.runner import run
from agentgauge.schema import Task

tasks = [Task(id=f"t{i}", instruction=f"please add {i + 1}",
              environment="agentgauge.testing.worlds:make_counter_env",
              expectations={"final_state": {"counter": i + 1}, "control": "act"})
         for i in range(3)]
try:
    run(tasks, "ray_test_agents:slow", trials=4, concurrency=2, backend="ray",
        ray_address=sys.argv[1], store=sys.argv[2], run_id="r", progress=False,
        on_trial=lambda trial: ray.shutdown())  # other code in the process
except RunStopped as exc:
    print(exc)
"""


def test_ray_shut_down_under_a_run_stops_it_instead_of_waiting_forever(
    agents_dir: Path, tmp_path: Path
) -> None:
    import ray

    address = ray.get_runtime_context().gcs_address
    out = subprocess.run(
        [sys.executable, "-c", LOST, address, str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=150, env=_env(agents_dir),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    # The trial that shut it down, and any that came back with it.
    assert re.fullmatch(
        r"stopped: the connection to Ray was lost \(ray\.shutdown\(\) was called in this "
        r"process\); [12] of 12 trials saved\n",
        out.stdout,
    ), out.stdout


def test_a_dead_worker_prints_nothing_of_ray_s_on_stdout(agents_dir: Path, tmp_path: Path) -> None:
    # Ray's driver printed "(raylet) A worker died..." lines, with colour escapes, to stdout.
    import ray

    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in counter_tasks(1)))
    argv = _cli_argv("run", str(suite), "--agent", "ray_test_agents:dies_first", "--store",
                     str(tmp_path / "s.db"), "--run-id", "r", "--no-progress", "--backend", "ray",
                     "--ray-address", ray.get_runtime_context().gcs_address)  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=150, env=_env(agents_dir))
    assert out.returncode == 0, out.stderr
    assert (agents_dir / "marks" / "first-t0").exists()  # the worker really died
    assert stored(tmp_path / "s.db", "r")[("t0", 0, "base")].metadata["worker_attempts"] == 2
    assert "raylet" not in out.stdout and "\x1b" not in out.stdout, out.stdout


def test_a_ray_that_keeps_its_driver_s_error_thread_elsewhere_is_left_alone() -> None:
    # Ray has no public switch for its "(raylet) A worker died" lines: switching them off
    # reaches into ray._private.worker, which another Ray may not have or may lay out
    # otherwise. An ImportError or AttributeError there, after connecting, stopped the
    # run; such a Ray's lines now print and nothing else changes. In a process of its
    # own: this module's Ray instance must keep its worker.
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    script = textwrap.dedent(
        """
        import sys, threading, time, types
        import ray._private.worker
        from agentgauge.harness.ray_backend import _quiet_worker_errors

        # A driver without the stop flag Ray 2 has.
        listener = threading.Thread(target=time.sleep, args=(2,), daemon=True)
        listener.start()
        closed = []
        worker = ray._private.worker
        real = worker.global_worker  # put back for Ray's shutdown at exit
        worker.global_worker = types.SimpleNamespace(
            listener_thread=listener,
            gcs_error_subscriber=types.SimpleNamespace(close=lambda: closed.append(1)),
        )
        _quiet_worker_errors()
        assert closed == [], closed
        worker.global_worker = real
        # No ray._private.worker at all.
        del ray._private.worker
        sys.modules["ray._private.worker"] = None
        _quiet_worker_errors()
        print("left alone")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=_env())  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout == "left alone\n" and not out.stderr, out.stderr


def test_a_run_resumed_on_the_other_backend_records_both(agents_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    common: dict[str, Any] = {"store": db, "run_id": "r", "progress": False}
    run(counter_tasks(), "builtin:null", trials=1, **common)
    header = run(counter_tasks(), "builtin:null", trials=3, backend="ray", **common)
    assert header.n_trials == 9
    assert header.config["backend"] == "local"  # the one it was made with
    assert header.config["backends"] == ["local", "ray"]
    header = run(counter_tasks(), "builtin:null", trials=4, **common)  # nothing new
    assert header.config["backends"] == ["local", "ray"]
    assert "backends" not in run(counter_tasks(), "builtin:null", store=db, progress=False).config


def test_the_circuit_breaker_stops_a_ray_run_of_infra_errors(
    agents_dir: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with pytest.raises(RunStopped, match="the first 4 trials were all infra errors") as caught:
        run(
            counter_tasks(),
            "ray_test_agents:provider_down",
            trials=20,
            store=db,
            run_id="r",
            progress=False,
            backend="ray",
            concurrency=2,
            breaker_first=4,
        )
    saved = sum(cells(db, "r").values())
    # Launching stopped at the trip; the trials in flight then were still written.
    assert caught.value.saved == saved and 4 <= saved <= 6 < caught.value.total == 60
    trials = stored(db, "r")
    assert all(t.error_kind == "infra" and "503" in (t.error or "") for t in trials.values())


def test_an_agent_thread_a_worker_abandoned_is_named_at_the_end(
    agents_dir: Path, tmp_path: Path
) -> None:
    # The driver asked its own build of the agent, which runs no trial on Ray: a thread
    # a worker had abandoned past its timeout was never named.
    said: list[str] = []
    header = run(
        counter_tasks(),
        "ray_test_agents:stuck_on_t1",
        store=tmp_path / "s.db",
        progress=False,
        backend="ray",
        concurrency=2,
        timeout=2,
        notify=said.append,
    )
    assert header.n_trials == 3
    assert stored(tmp_path / "s.db", header.run_id)[("t1", 0, "base")].status == "timeout"
    assert said == [
        "1 agent thread was still running on the Ray workers when they last reported: "
        "t1 trial 0; they were abandoned"
    ]


def test_an_interrupted_ray_run_resumes_with_only_its_missing_cells(
    agents_dir: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in counter_tasks()))
    import ray

    address = ray.get_runtime_context().gcs_address
    argv = [sys.executable, "-m", "agentgauge", "run", str(suite)]
    argv += ["--agent", "ray_test_agents:slow", "--store", str(db), "--run-id", "r"]
    argv += ["--trials", "30", "--concurrency", "2", "--no-progress"]
    argv += ["--backend", "ray", "--ray-address", address]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = _interrupt_when(proc, lambda: db.exists() and sum(_count(db).values()) >= 6)
    assert proc.returncode == 130, err
    saved = sum(cells(db, "r").values())
    assert 6 <= saved < 90
    assert f"interrupted: {saved} trial{'' if saved == 1 else 's'} saved; resume with: " in err
    assert "--backend ray" in err and f"--ray-address {address}" in err
    assert max(cells(db, "r").values()) == 1
    ran: list[Trial] = []
    run(
        counter_tasks(),
        "ray_test_agents:slow",
        store=db,
        run_id="r",
        progress=False,
        backend="ray",
        on_trial=ran.append,
    )
    assert len(ran) == 90 - saved
    assert cells(db, "r") == Counter({(f"t{i}", k, "base"): 1 for i in range(3) for k in range(30)})


def _interrupt_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], *, poll: float = 0.1
) -> tuple[str, str]:
    """Ctrl-C to ``proc`` once ``ready()`` (within two minutes; it must still be
    running then), and its stdout and stderr once it has stopped."""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if ready():
                break
            time.sleep(poll)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()


def _count(db: Path) -> Counter[tuple[str, int, str]]:
    try:
        return cells(db, "r")
    except sqlite3.OperationalError:  # the schema is not there yet
        return Counter()


def test_ctrl_c_while_ray_starts_says_how_to_resume_and_leaves_no_run(tmp_path: Path) -> None:
    # Starting Ray blocks for seconds. A Ctrl-C then reached asyncio's handler, which
    # cancelled the run at its first await, once the header was written: a bare
    # "agentgauge: interrupted", and an empty run that refused a corrected command.
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    db = tmp_path / "s.db"
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in counter_tasks()))
    agent = "agentgauge.testing.worlds:counting_agent"
    argv = [sys.executable, "-m", "agentgauge", "run", str(suite), "--agent", agent, "--store",
            str(db), "--run-id", "nightly", "--backend", "ray", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAY_ADDRESS", None)  # a local Ray instance, started by the run
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)  # fmt: skip
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    # Ray's own processes (its GCS, its raylet) are the run's first children.
    out, err = _interrupt_when(
        proc, lambda: children.exists() and bool(children.read_text().split()), poll=0.02
    )
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        f"interrupted: 0 trials saved; resume with: agentgauge run {suite} --agent {agent} "
        f"--store {db} --run-id nightly --backend ray"
    )
    assert out == ""
    if db.exists():
        with Store(db, readonly=True) as store:
            assert store.list_runs() == []
    # The id is free for another command (here another agent, run locally).
    header = run(counter_tasks(), "builtin:null", store=db, run_id="nightly", progress=False)
    assert header.n_trials == 3


def test_an_agent_that_cannot_be_pickled_is_named_before_anything_is_written(
    agents_dir: Path, tmp_path: Path
) -> None:
    import threading

    class Locked:
        def __init__(self) -> None:
            self.lock = threading.Lock()

        async def __call__(self, session: Any) -> None:
            return None

    with pytest.raises(InputError, match="cannot be sent to Ray workers") as caught:
        run(counter_tasks(), Locked(), store=tmp_path / "s.db", backend="ray", progress=False)
    assert "lock" in str(caught.value) and caught.value.field == "--agent"
    assert not (tmp_path / "s.db").exists()


def test_without_ray_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    wrapper = textwrap.dedent(
        """
        import sys
        sys.modules["ray"] = None  # as if ray were not installed
        from agentgauge.cli import main
        sys.argv = ["agentgauge", *sys.argv[1:]]
        main()
        """
    )
    argv = [sys.executable, "-c", wrapper, "run", "builtin:retail", "--agent", "builtin:null"]
    out = subprocess.run(
        [*argv, "--backend", "ray", "--store", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "agentgauge: error: --backend: the Ray backend needs ray: pip install 'agentgauge[ray]'"
    ]
    assert not db.exists()


def test_a_cluster_nobody_listens_at_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed: pip install 'agentgauge[ray]'")
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db = tmp_path / "s.db"
    argv = [sys.executable, "-m", "agentgauge", "run", "builtin:retail", "--agent", "builtin:null"]
    out = subprocess.run(
        [*argv, "--store", str(db), "--backend", "ray", "--ray-address", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(
        f"agentgauge: error: --ray-address: cannot reach the Ray cluster at 127.0.0.1:{port}"
    )
    assert not db.exists()


def test_a_ray_address_without_the_ray_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--ray-address: applies to --backend ray only$"):
        run(counter_tasks(), "builtin:null", store=tmp_path / "s.db", ray_address="auto")
    assert not (tmp_path / "s.db").exists()
