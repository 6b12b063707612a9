"""The end of a run shows its errors; infra errors trip the circuit breaker; resumes say
what they change.

On the main branch before this change: the run printed only "10 infra errors" (the
messages stayed in the store), ran all 30 trials into a provider that was down and
exited 0, and a resume with fewer ``--trials`` was accepted without a word (while
rewriting the run's recorded trial count).
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.agents.base import TransientError
from agentgauge.errors import InputError, RunStopped
from agentgauge.harness.breaker import CircuitBreaker
from agentgauge.harness.error_summary import summarize_errors
from agentgauge.harness.runner import run
from agentgauge.schema import Trial
from agentgauge.store import Store
from agentgauge.testing.worlds import counting_agent

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"

AGENTS = """
import asyncio
import os
from agentgauge.agents.base import AgentError, TransientError
from agentgauge.testing.worlds import counting_agent

async def provider_down(session):
    if os.environ.get("PROVIDER_DOWN"):
        # Markup and a terminal escape: both must reach the user as plain text.
        raise TransientError("HTTP 503: [bold red]upstream[/] unavailable\\x1b[2J")
    await counting_agent(session)

async def lavish(session):
    session.record_cost(1e308)  # finite for each trial; not for the run
    await counting_agent(session)

async def clumsy(session):
    raise AgentError(f"cannot parse the plan for {session.task_id}")

async def raises_or_hangs(session):
    if session.task_id == "add-small":
        raise AgentError("no plan")
    if session.task_id == "add-large":
        await asyncio.sleep(30)
    await counting_agent(session)
"""


def agentgauge(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "my_agents.py").write_text(AGENTS)
    # The checkout's own code, not an installed copy of agentgauge.
    path = os.pathsep.join([str(tmp_path), str(ROOT / "src")])
    environ = {**os.environ, "PYTHONPATH": path, **env}
    if "PROVIDER_DOWN" not in env:
        environ.pop("PROVIDER_DOWN", None)
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        cwd=tmp_path,
    )


def count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    finally:
        conn.close()


async def down(session: object) -> None:
    raise TransientError("HTTP 503: Service Unavailable")


def trial(task: str, k: int, status: str, kind: str | None, error: str | None) -> Trial:
    return Trial(task_id=task, trial=k, success=False, status=status, error_kind=kind,
                 error=error)  # type: ignore[arg-type]  # fmt: skip


# ----------------------------------------------------------------------------- summary


def test_errors_are_grouped_by_class_most_frequent_first() -> None:
    trials = [
        trial("a", 0, "error", "agent", "boom"),
        trial("b", 0, "error", "infra", "HTTP 500"),
        trial("a", 1, "error", "agent", "bang"),
        trial("c", 0, "error", "agent", "bang"),
        trial("c", 1, "timeout", "agent", "timed out after 5s in the agent"),
        trial("d", 0, "completed", None, None),
    ]
    infra, agent, hung = summarize_errors(trials, per_class=1)
    assert (infra.name, infra.count, infra.infra) == ("infra errors", 1, True)
    assert (agent.name, agent.count, agent.distinct) == ("agent errors", 3, 2)
    (top,) = agent.messages  # "bang" twice beats "boom" once; its first trial is the example
    assert (top.text, top.count, top.example) == ("bang", 2, "a trial 1")
    assert (hung.name, hung.infra) == ("agent timeouts (the agent hung)", False)
    assert summarize_errors([trials[-1]]) == []


def test_a_class_of_one_trial_is_counted_in_the_singular() -> None:
    infra, agent, hung = summarize_errors(
        [
            trial("a", 0, "error", "infra", "HTTP 500"),
            trial("b", 0, "error", "agent", "boom"),
            trial("b", 1, "error", "agent", "boom"),
            trial("c", 0, "timeout", "agent", "timed out"),
        ]
    )
    assert infra.counted == "1 infra error"
    assert agent.counted == "2 agent errors"
    assert hung.counted == "1 agent timeout (the agent hung)"


def test_the_run_prints_each_class_with_messages_trial_ids_and_how_to_see_more(
    tmp_path: Path,
) -> None:
    out = agentgauge(tmp_path, "run", str(SUITE), "--agent", "my_agents:clumsy",
                     "--store", "s.db", "--run-id", "r", "--show-errors", "2")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "3 agent errors (3 distinct messages)"
    shown = "1 x AgentError: cannot parse the plan for add-small  (e.g. add-small trial 0)"
    assert lines[1].strip() == shown
    assert "1 more distinct messages: rerun with --run-id r --show-errors 3" in out.stdout
    again = agentgauge(tmp_path, "run", str(SUITE), "--agent", "my_agents:clumsy",
                       "--store", "s.db", "--run-id", "r", "--show-errors", "3")  # fmt: skip
    assert (
        "cannot parse the plan for from-ten" in again.stdout and "more distinct" not in again.stdout
    )
    assert count(tmp_path / "s.db") == 3  # nothing was run again


def test_a_run_whose_spend_passes_the_largest_float_says_so(tmp_path: Path) -> None:
    # The summary line said "spend $inf".
    out = agentgauge(tmp_path, "run", str(SUITE), "--agent", "my_agents:lavish",
                     "--store", "s.db", "--run-id", "r")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "spend past the largest float (about 1.8e308): no total" in out.stdout
    assert "$inf" not in out.stdout


def test_show_errors_0_shows_only_the_counts(tmp_path: Path) -> None:
    # It used to add "3 more distinct messages: rerun with ... --show-errors 3".
    out = agentgauge(tmp_path, "run", str(SUITE), "--agent", "my_agents:clumsy",
                     "--store", "s.db", "--run-id", "r", "--show-errors", "0")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "3 agent errors (3 distinct messages)"
    assert lines[1].startswith("run r in s.db: 3 trials")
    assert "more distinct" not in out.stdout and "AgentError" not in out.stdout


def test_the_totals_line_names_the_classes_listed_above_it(tmp_path: Path) -> None:
    # It counted every agent trial that did not complete as "agent errors", timeouts
    # included, under a summary that had just listed them apart: "2 agent errors ...
    # 2 agent timeouts (the agent hung) ... 0 infra errors, 4 agent errors".
    out = agentgauge(tmp_path, "run", str(SUITE), "--agent", "my_agents:raises_or_hangs",
                     "--store", "s.db", "--run-id", "r", "--trials", "2", "--timeout", "0.5",
                     "--no-progress")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "2 agent errors" and lines[2] == "2 agent timeouts (the agent hung)"
    assert "run r in s.db: 6 trials, success 33.3%, 2 agent errors, 2 agent timeouts, " in (
        out.stdout
    )
    clean = agentgauge(tmp_path, "run", str(SUITE), "--agent", "my_agents:provider_down",
                       "--store", "s.db", "--run-id", "ok", "--no-progress")  # fmt: skip
    assert "run ok in s.db: 3 trials, success 100.0%, no errors, spend $0.00" in clean.stdout


# ----------------------------------------------------------------------------- breaker


def test_the_breaker_trips_on_the_first_trials_or_on_a_window() -> None:
    first = CircuitBreaker(first=3, window=0)
    assert [first.record(True) for _ in range(3)] == [
        None,
        None,
        "the first 3 trials were all infra errors",
    ]
    mixed = CircuitBreaker(first=3, window=0)
    assert [mixed.record(x) for x in (True, False, True, True, True)] == [None] * 5
    window = CircuitBreaker(first=0, window=4)
    # T F T F: 2 of 4 is not more than half; then F T F T: 2 again; then T F T T: 3 of 4
    assert [window.record(x) for x in (True, False, True, False, True, True)] == [None] * 5 + [
        "3 of the last 4 trials were infra errors"
    ]
    with pytest.raises(InputError):
        CircuitBreaker(first=-1)


def test_a_provider_that_is_down_stops_the_run_with_exit_3_and_a_resume_command(
    tmp_path: Path,
) -> None:
    args = ["run", str(SUITE), "--agent", "my_agents:provider_down", "--store", "s.db",
            "--trials", "10", "--concurrency", "1"]  # fmt: skip
    out = agentgauge(tmp_path, *args, PROVIDER_DOWN="1")
    assert out.returncode == 3, out.stderr
    assert count(tmp_path / "s.db") == 10  # 10 of 30 cells, then nothing more launched
    assert "10 infra errors" in out.stdout.splitlines()[0]
    # The agent's text is shown as written: markup not interpreted, the escape visible
    # as `show` shows it (it read as a space).
    shown = (
        "10 x TransientError: HTTP 503: [bold red]upstream[/] unavailable\\x1b[2J  (e.g. add-small"
    )
    assert shown in out.stdout
    assert "\x1b" not in out.stdout
    message = out.stderr.strip().splitlines()[-1]
    head, _, command = message.partition("; resume with: ")
    assert head == "stopped: the first 10 trials were all infra errors; 10 of 30 trials saved"
    argv = shlex.split(command)
    assert argv[:2] == ["agentgauge", "run"] and "--run-id" in argv
    resumed = agentgauge(tmp_path, *argv[1:])
    assert resumed.returncode == 0, resumed.stderr
    assert count(tmp_path / "s.db") == 30 and "30 trials" in resumed.stdout


def test_the_breaker_decides_at_the_end_what_it_could_not_while_the_run_went() -> None:
    tripped = CircuitBreaker(first=3, window=0)
    [tripped.record(True) for _ in range(4)]
    assert tripped.at_end() == "the first 3 trials were all infra errors"
    short = CircuitBreaker(first=10, window=50)
    [short.record(True) for _ in range(4)]
    assert short.at_end() == "all 4 trials were infra errors"
    mostly = CircuitBreaker(first=10, window=50)
    [mostly.record(x) for x in (True, False, True, True, False, True, True)]
    assert mostly.at_end() == "5 of the 7 trials were infra errors"
    half = CircuitBreaker(first=10, window=50)
    [half.record(x) for x in (True, False, True, False)]
    assert half.at_end() is None  # not more than half
    off = CircuitBreaker(first=0, window=0)
    [off.record(True) for _ in range(4)]
    assert off.at_end() is None
    assert CircuitBreaker().at_end() is None  # a resume that ran nothing


@pytest.mark.parametrize(
    ("trials", "reason"),
    [("4", "the first 10 trials were all infra errors"), ("1", "all 3 trials were infra errors")],
)
def test_a_run_of_only_infra_errors_exits_3_when_every_trial_was_launched(
    tmp_path: Path, trials: str, reason: str
) -> None:
    # 12 trials at the default concurrency of 8: the breaker trips at the 10th, after
    # the last was launched; 3 trials are too few for it to trip while the run goes.
    # Both exited 0, as if the run had measured the agent.
    args = ["run", str(SUITE), "--agent", "my_agents:provider_down", "--store", "s.db",
            "--trials", trials, "--run-id", "r"]  # fmt: skip
    out = agentgauge(tmp_path, *args, PROVIDER_DOWN="1")
    assert out.returncode == 3, out.stderr
    total = 3 * int(trials)
    assert count(tmp_path / "s.db") == total
    assert f"{total} infra errors" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == (
        f"stopped: {reason}; {total} of {total} trials saved; every cell has a trial, so "
        "resuming would run nothing: once the cause is fixed, run again with a new --run-id"
    )
    # From Python likewise, after the commits.
    with pytest.raises(RunStopped, match=f"stopped: {reason}") as caught:
        run(SUITE, down, trials=int(trials), store=tmp_path / "py.db", progress=False)
    assert caught.value.saved == caught.value.total == total == count(tmp_path / "py.db")
    # Run again (as the docs advise, to see more messages) it runs nothing and ends as
    # it did: it exited 0, and a CI retry step went green on a run of infra errors.
    again = agentgauge(tmp_path, *args, "--show-errors", "10", PROVIDER_DOWN="1")
    assert again.returncode == 3, again.stderr
    assert again.stderr.strip().splitlines()[-1] == out.stderr.strip().splitlines()[-1]
    assert count(tmp_path / "s.db") == total
    with pytest.raises(RunStopped, match=f"stopped: {reason}; {total} of {total}"):
        run(SUITE, down, store=tmp_path / "py.db", run_id=caught.value.run_id, progress=False)


def test_the_breaker_can_be_turned_off(tmp_path: Path) -> None:
    args = ["run", str(SUITE), "--agent", "my_agents:provider_down", "--store", "s.db",
            "--trials", "4", "--breaker-first", "0", "--breaker-window", "0"]  # fmt: skip
    out = agentgauge(tmp_path, *args, PROVIDER_DOWN="1")
    assert out.returncode == 0, out.stderr
    assert count(tmp_path / "s.db") == 12


# ----------------------------------------------------------------------------- design


def test_a_design_past_what_a_run_may_hold_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    # Within 2 GB of memory, as the report ran it: the cells were listed at once, after
    # the run's header was written, and the run died of a MemoryError (a traceback),
    # leaving an empty run that refused the corrected command as a smaller design.
    import resource

    def two_gigabytes() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    agent = "agentgauge.testing.worlds:counting_agent"
    argv = [sys.executable, "-m", "agentgauge", "run", str(SUITE), "--agent", agent,
            "--store", "s.db", "--run-id", "big", "--no-progress"]  # fmt: skip
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([*argv, "--trials", "100000000"], capture_output=True, text=True,
                         timeout=120, env=environ, cwd=tmp_path,
                         preexec_fn=two_gigabytes)  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        "agentgauge: error: --trials: 100,000,000 trials per task and variant (3 of them) "
        "make 300,000,000 trials, more than the 1,000,000 one run may hold: give a smaller "
        "--trials (a larger design goes into several runs)\n"
    )
    assert not (tmp_path / "s.db").exists()
    fixed = subprocess.run([*argv, "--trials", "2"], capture_output=True, text=True,
                           timeout=120, env=environ, cwd=tmp_path)  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr
    # A resume is held to the same bound, before its header takes the new design.
    with pytest.raises(InputError, match="1,000,002 trials, more than the 1,000,000") as caught:
        run(SUITE, agent, trials=333_334, store=tmp_path / "s.db", run_id="big")
    assert caught.value.field == "--trials"
    with Store(tmp_path / "s.db", readonly=True) as store:
        big = store.get_run("big")
    assert big is not None and big.config["trials"] == 2 and big.n_trials == 6


# ----------------------------------------------------------------------------- resume


def test_a_resume_grows_a_run_with_a_note_and_refuses_to_shrink_it(tmp_path: Path) -> None:
    def go(**kw: object) -> None:
        run(SUITE, counting_agent, store=tmp_path / "s.db", run_id="r", progress=False, **kw)

    notes: list[str] = []
    go(trials=2)
    with pytest.raises(InputError, match="already has 2 trials per task and variant") as caught:
        go(trials=1)
    assert caught.value.field == "--trials"  # the option, as the CLI names it
    go(trials=3, notify=notes.append)
    assert notes == ["extending run r from 2 to 3 trials per task and variant"]
    assert count(tmp_path / "s.db") == 9
    # A variant added grows the run; leaving it out again is refused. (Both calls sat in
    # one `raises` block, so the test passed whichever of them raised.)
    go(trials=3, variants=["base", "paraphrase:1"])
    assert count(tmp_path / "s.db") == 18
    with pytest.raises(InputError, match="resuming without paraphrase:1") as caught:
        go(trials=3, variants=["base"])
    assert caught.value.field == "--variants"
    assert count(tmp_path / "s.db") == 18


def test_run_refuses_a_run_that_collect_or_import_made(tmp_path: Path) -> None:
    # run compared its settings with the collect run's and named one it could never
    # match: "--agent: run 'mine' was made with agent None, not '...'; resume with the
    # same settings or choose another --run-id".
    from tests.collect.test_receiver import Collector
    from tests.importers.otlp_docs import AGENT_ROOT, request

    collector = Collector(tmp_path / "s.db")  # makes run 'live'
    try:
        # One trace stored: a collect that stored nothing keeps no run.
        sent = collector.post(json.dumps(request(AGENT_ROOT)).encode(), "application/json")
        assert sent[0] == 200
        assert collector.stop()[0] == 0
    finally:
        collector.kill()
    trials = tmp_path / "t.jsonl"
    trials.write_text('{"task_id": "add-small", "trial": 0, "success": true}\n')
    imported = agentgauge(
        tmp_path, "import", "jsonl", str(trials), "--store", "s.db", "--run-id", "mine"
    )
    assert imported.returncode == 0, imported.stderr
    agent = "agentgauge.testing.worlds:counting_agent"
    for run_id, maker in (("live", "collect"), ("mine", "import jsonl")):
        args = ["run", str(SUITE), "--store", "s.db", "--run-id", run_id, "--agent", agent]
        refused = agentgauge(tmp_path, *args)
        assert refused.returncode == 2
        assert refused.stderr == (
            f"agentgauge: error: --run-id: run {run_id!r} was made by {maker}, not run; "
            "choose another --run-id\n"
        )
    with pytest.raises(InputError, match="run 'live' was made by collect, not run") as caught:
        run(SUITE, counting_agent, store=tmp_path / "s.db", run_id="live", progress=False)
    assert caught.value.field == "--run-id"
    with Store(tmp_path / "s.db", readonly=True) as db:
        assert len(db.trials("live")) == 1 and len(db.trials("mine")) == 1


def test_a_refused_resume_names_the_option_to_change(tmp_path: Path) -> None:
    # The refusals named internal fields ("agent: run 'r' was made with agent ...",
    # "seed: ...", "variants: ..."): the user fixes an option, so they name it, in the
    # CLI and in agentgauge.run alike.
    args = ["run", str(SUITE), "--store", "s.db", "--run-id", "r"]
    assert agentgauge(tmp_path, *args, "--agent", "my_agents:lavish").returncode == 0
    other = agentgauge(tmp_path, *args, "--agent", "agentgauge.testing.worlds:counting_agent")
    assert other.returncode == 2
    assert other.stderr.startswith("agentgauge: error: --agent: run 'r' was made with agent ")
    seed = agentgauge(tmp_path, *args, "--agent", "my_agents:lavish", "--seed", "3")
    assert seed.returncode == 2
    assert seed.stderr.strip() == (
        "agentgauge: error: --seed: run 'r' was made with --seed 0; resuming with --seed 3 "
        "would mix two designs"
    )
    db = tmp_path / "p.db"
    run(SUITE, counting_agent, store=db, run_id="r", variants=["base", "paraphrase:1"],
        progress=False)  # fmt: skip
    with pytest.raises(InputError, match="resuming without paraphrase:1") as caught:
        run(SUITE, counting_agent, store=db, run_id="r", variants=["base"], progress=False)
    assert caught.value.field == "--variants"
    with pytest.raises(InputError, match="made with --seed 0; resuming with --seed 1") as caught:
        run(SUITE, counting_agent, store=db, run_id="r", seed=1, progress=False)
    assert caught.value.field == "--seed"


def test_the_cli_says_when_a_resume_extends_a_run(tmp_path: Path) -> None:
    args = ["run", str(SUITE), "--agent", "agentgauge.testing.worlds:counting_agent",
            "--store", "s.db", "--run-id", "r"]  # fmt: skip
    assert agentgauge(tmp_path, *args, "--trials", "2").returncode == 0
    fewer = agentgauge(tmp_path, *args, "--trials", "1")
    assert fewer.returncode == 2
    assert fewer.stderr.strip() == (
        "agentgauge: error: --trials: run 'r' already has 2 trials per task and variant; "
        "resuming with 1 would not remove any: give --trials 2 or more, or leave --trials out"
    )
    more = agentgauge(tmp_path, *args, "--trials", "3")
    assert more.returncode == 0
    assert "extending run r from 2 to 3 trials per task and variant" in more.stderr
    assert "9 trials" in more.stdout


def test_a_python_run_warns_of_its_failed_trials_with_their_messages(tmp_path: Path) -> None:
    """``agentgauge.run`` from Python (a notebook) returned the run's header alone: an
    agent that raised on every trial looked like one that failed its tasks, its message
    only in the store. It now warns as the command line prints."""
    from agentgauge.harness.runner import TrialErrorsWarning

    def broken(session: object) -> None:
        raise ValueError("my bug: no key 'status'")

    store = tmp_path / "s.db"
    with pytest.warns(TrialErrorsWarning) as caught:
        header = run(str(SUITE), broken, trials=2, store=store, run_id="r", progress=False)
    n = header.n_trials
    assert len(caught) == 1
    text = str(caught[0].message)
    assert f"{n} agent errors:" in text
    assert f"{n} x ValueError: my bug: no key 'status'" in text
    assert f"agentgauge show {store}:r --failed" in text


def test_a_python_run_with_no_failed_trial_warns_nothing(tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(str(SUITE), counting_agent, trials=1, store=tmp_path / "s.db", progress=False)


def test_run_inside_an_event_loop_says_where_arun_is_and_that_it_works(tmp_path: Path) -> None:
    """A notebook runs an event loop: the refusal named a bare `arun`, which is no
    attribute of `agentgauge`; the name it gives now is importable and runs."""
    import asyncio
    import importlib
    import re

    async def notebook_cell() -> str:
        with pytest.raises(RuntimeError) as caught:
            run(str(SUITE), counting_agent, trials=1, store=tmp_path / "s.db", progress=False)
        message = str(caught.value)
        assert "Jupyter" in message
        named = re.search(r"`await ([\w.]+)\(\.\.\.\)`", message)
        assert named is not None, message
        module, _, name = named.group(1).rpartition(".")
        arun = getattr(importlib.import_module(module), name)
        header = await arun(str(SUITE), counting_agent, trials=1, store=tmp_path / "s.db")
        return str(header.run_id)

    assert asyncio.run(notebook_cell())
