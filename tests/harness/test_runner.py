from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

import agentgauge
from agentgauge.agents.base import AgentError, Session, TransientError
from agentgauge.agents.provider import provider_call
from agentgauge.errors import InputError, RunStopped
from agentgauge.harness.cells import cell_seed
from agentgauge.harness.runner import run
from agentgauge.harness.trial import state_grader
from agentgauge.schema import Grade, Task, Trial
from agentgauge.store import Store
from agentgauge.testing.worlds import counting_agent, make_counter_env


def counter_tasks(n: int = 3) -> list[Task]:
    return [
        Task(
            id=f"t{i}",
            family=f"f{i % 2}",
            capability="arith",
            human_minutes=float(i + 1),
            instruction=f"please add {i + 1}",
            paraphrases=[f"could you add {i + 1}", f"increase it by {i + 1}"],
            expectations={"final_state": {"counter": i + 1}, "control": "act"},
        )
        for i in range(n)
    ]


def go(tmp_path: Path, agent: Any, tasks: list[Task] | None = None, **kw: Any) -> agentgauge.Run:
    kw.setdefault("progress", False)
    kw.setdefault("env_factory", make_counter_env)
    return run(tasks or counter_tasks(), agent, store=tmp_path / "s.db", **kw)


def go_stopped(tmp_path: Path, agent: Any, tasks: list[Task] | None = None, **kw: Any) -> str:
    """The id of a run whose every trial was an infra error: each is stored, then the
    circuit breaker stops the run (exit 3), however few trials there were."""
    with pytest.raises(RunStopped, match=r"infra errors?;") as caught:
        go(tmp_path, agent, tasks, **kw)
    return caught.value.run_id


def stored(tmp_path: Path, run_id: str) -> list[Trial]:
    with Store(tmp_path / "s.db") as db:
        return db.trials(run_id)


def test_grid_of_trials_and_variants_is_run_graded_and_stored(tmp_path: Path) -> None:
    header = go(tmp_path, counting_agent, trials=2, variants=["base", "paraphrase"], seed=7)
    # 3 tasks x 2 trials x (base + 2 paraphrases) = 18 cells
    assert header.n_trials == 18
    assert header.agent == "python:agentgauge.testing.worlds.counting_agent"
    assert header.suite == "python" and header.suite_version
    assert header.config["trials"] == 2 and header.config["seed"] == 7
    assert header.config["variants"] == ["base", "paraphrase"]
    trials = stored(tmp_path, header.run_id)
    cells = {(t.task_id, t.trial, t.variant) for t in trials}
    assert len(cells) == 18
    assert {t.variant for t in trials} == {"base", "paraphrase:1", "paraphrase:2"}
    assert all(t.success and t.status == "completed" for t in trials)
    t = next(t for t in trials if t.task_id == "t1" and t.trial == 1 and t.variant == "base")
    assert t.seed == cell_seed(7, "t1", 1, "base")
    assert (t.family, t.capability, t.human_minutes) == ("f1", "arith", 2.0)
    assert t.final_state == {"counter": 2}
    assert t.tool_calls == 1 and t.control == "act" and t.expected_control == "act"
    grades = {g.grader: g for g in t.grades}
    assert grades["state"].passed is True and grades["control"].passed is True
    assert [e.type for e in t.events] == ["message", "tool_call", "tool_result", "message"]
    with Store(tmp_path / "s.db") as db:
        assert [task.id for task in db.get_tasks(header.run_id)] == ["t0", "t1", "t2"]


def test_paraphrase_variant_sends_the_paraphrase(tmp_path: Path) -> None:
    header = go(tmp_path, counting_agent, variants=["paraphrase:2"])
    for t in stored(tmp_path, header.run_id):
        assert t.events[0].content.startswith("increase it by")  # type: ignore[union-attr]


def test_wrong_final_state_fails_with_evidence(tmp_path: Path) -> None:
    async def off_by_one(session: Session) -> None:
        await session.call_tool("add", {"amount": 99})

    header = go(tmp_path, off_by_one, tasks=counter_tasks(1))
    (t,) = stored(tmp_path, header.run_id)
    assert t.status == "completed" and not t.success and t.score == 0.0
    grades = {g.grader: g for g in t.grades}
    assert grades["state"].passed is False and "counter" in str(grades["state"].evidence)
    assert grades["control"].passed is True  # it acted, as expected: only the state is wrong
    # The state-only grader (no grader package) gives the differing keys.
    header = go(tmp_path, off_by_one, tasks=counter_tasks(1), grader=state_grader)
    (t,) = stored(tmp_path, header.run_id)
    assert not t.success and t.grades[0].evidence == ["counter"]


def test_a_task_nothing_grades_is_refused_before_any_trial(tmp_path: Path) -> None:
    # Its trials were stored as "not evaluated" and counted as failures: a suite of them
    # reported 0.0% (consistency 1.000) with nothing said.
    bare = [Task(id="x", instruction="add 1"), *counter_tasks(1)]
    with pytest.raises(InputError) as err:
        go(tmp_path, counting_agent, tasks=bare)
    assert "nothing grades the outcome of 1 task, 'x'" in str(err.value)
    db = tmp_path / "s.db"
    if db.exists():
        with Store(db) as store:
            assert store.runs() == []
    # A grader the caller gives decides for itself: no check, the trial is stored.
    header = go(tmp_path, counting_agent, tasks=bare[:1], grader=state_grader)
    (t,) = stored(tmp_path, header.run_id)
    assert not t.success and t.grades[-1].status == "not_evaluated"


async def raises(session: Session) -> None:
    await session.call_tool("get", {})
    raise ValueError("boom")


async def hangs(session: Session) -> None:
    await session.call_tool("get", {})
    await asyncio.sleep(3600)


async def malformed(session: Session) -> None:
    await session.call_tool("get", {})
    await session.call_tool("add", "amount=3")  # type: ignore[arg-type]


def sync_hangs(session: Any) -> None:
    session.call_tool("get", {})
    time.sleep(0.5)  # past the timeout: the next session call must raise TrialOver
    session.call_tool("add", {"amount": 1})


@pytest.mark.parametrize(
    ("agent", "status", "error_start"),
    [
        (raises, "error", "ValueError: boom"),
        (hangs, "timeout", "timed out after 0.2s in the agent"),
        (malformed, "error", "AgentError: tool 'add' called with non-object arguments"),
        (sync_hangs, "timeout", "timed out after 0.2s in the agent"),
    ],
)
# sync_hangs' threads may outlive the run, which says so (tests/harness/test_timeouts.py).
@pytest.mark.filterwarnings("ignore:.*agent threads were still running:RuntimeWarning")
def test_faulty_agents_are_recorded_with_their_error_class_and_the_run_goes_on(
    tmp_path: Path, agent: Any, status: str, error_start: str
) -> None:
    header = go(tmp_path, agent, trials=2, timeout=0.2, concurrency=4)
    trials = stored(tmp_path, header.run_id)
    assert len(trials) == 6  # every cell recorded despite the faults
    for t in trials:
        assert t.status == status
        assert t.error is not None and t.error.startswith(error_start), t.error
        assert t.error_kind == "agent" and not t.is_infra_error
        assert not t.success
        assert t.events[1].type == "tool_call"  # the transcript up to the fault is kept


def test_agent_errors_and_successes_mix_in_one_run(tmp_path: Path) -> None:
    async def flaky(session: Session) -> None:
        if session.task_id == "t1":
            raise AgentError("gave up")
        await counting_agent(session)

    header = go(tmp_path, flaky)
    by_task = {t.task_id: t for t in stored(tmp_path, header.run_id)}
    assert by_task["t0"].success and by_task["t2"].success
    assert by_task["t1"].error == "AgentError: gave up"


def test_timeout_during_a_provider_call_is_an_infra_error(tmp_path: Path) -> None:
    async def slow_provider(session: Session) -> None:
        with provider_call():
            await asyncio.sleep(3600)

    run_id = go_stopped(tmp_path, slow_provider, tasks=counter_tasks(1), timeout=0.1)
    (t,) = stored(tmp_path, run_id)
    assert t.status == "timeout" and t.error_kind == "infra" and t.is_infra_error
    assert t.error == "timed out after 0.1s in a provider call"


def test_transient_errors_are_infra_and_infra_retries_rerun_the_cell(tmp_path: Path) -> None:
    calls: dict[str, int] = {}

    async def unlucky_once(session: Session) -> None:
        calls[session.task_id] = calls.get(session.task_id, 0) + 1
        if calls[session.task_id] == 1:
            raise TransientError("HTTP 503")
        await counting_agent(session)

    run_id = go_stopped(tmp_path, unlucky_once, tasks=counter_tasks(2))
    assert all(
        t.is_infra_error and t.error == "TransientError: HTTP 503" for t in stored(tmp_path, run_id)
    )
    calls.clear()
    header = go(tmp_path, unlucky_once, tasks=counter_tasks(2), infra_retries=1)
    trials = stored(tmp_path, header.run_id)
    assert all(t.success and t.metadata == {"attempts": 2} for t in trials)


def test_environment_that_fails_to_build_is_an_infra_error(tmp_path: Path) -> None:
    def broken(task: Task, *, variant: str, seed: int) -> Any:
        raise OSError("disk full")

    run_id = go_stopped(tmp_path, counting_agent, env_factory=broken)
    assert all(
        t.status == "error" and t.error_kind == "infra" and t.error == "OSError: disk full"
        for t in stored(tmp_path, run_id)
    )


def test_sync_callable_runs_in_a_thread_with_a_blocking_session(tmp_path: Path) -> None:
    def sync_agent(session: Any) -> None:
        out = session.call_tool("get", {})
        assert out.content == {"counter": 0}
        time.sleep(0.01)  # blocking is allowed in a sync agent
        session.call_tool("add", {"amount": int(session.instruction.split()[-1])})
        session.control("confirm", "user asked")
        session.answer("done")
        session.report_confidence(0.9)

    header = go(tmp_path, sync_agent, concurrency=3)
    trials = stored(tmp_path, header.run_id)
    assert all(t.control == "confirm" and t.answer == "done" for t in trials)
    # The state is right, but the tasks expected the agent to act, not to confirm.
    for t in trials:
        grades = {g.grader: g for g in t.grades}
        assert grades["state"].passed is True and grades["control"].passed is False
        assert not t.success
    assert all(t.confidence == 0.9 for t in trials)


def test_resume_runs_only_missing_cells_and_checks_settings(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    async def agent(session: Session) -> None:
        seen.append((session.task_id, int(session.rng.integers(1 << 30))))
        await counting_agent(session)

    first = go(tmp_path, agent, trials=2, seed=3, run_id="r1")
    assert first.n_trials == 6 and len(seen) == 6
    again = go(tmp_path, agent, run_id="r1")  # same settings, taken from the header
    assert again.n_trials == 6 and len(seen) == 6  # nothing left to run
    more = go(tmp_path, agent, run_id="r1", trials=3)
    assert more.n_trials == 9 and len(seen) == 9
    assert more.config["trials"] == 3 and more.config["seed"] == 3  # the header follows
    trials = stored(tmp_path, "r1")
    assert sorted((t.task_id, t.trial) for t in trials) == [
        (f"t{i}", k) for i in range(3) for k in range(3)
    ]
    with pytest.raises(InputError, match="made with --seed 3"):
        go(tmp_path, agent, run_id="r1", seed=4)
    with pytest.raises(InputError, match="agent"):
        go(tmp_path, counting_agent, run_id="r1")
    with pytest.raises(InputError, match="suite_version"):
        go(tmp_path, agent, run_id="r1", tasks=counter_tasks(2))


def test_a_resume_with_other_agent_settings_is_refused(tmp_path: Path) -> None:
    # The agent's declared configuration is part of the run: resuming with another
    # system prompt or temperature would pool two configurations under one run id.
    def settings(**components: Any) -> dict[str, Any]:
        return {"version": "1.0", "components": {"system_prompt": "Be brief.", **components}}

    first = go(tmp_path, counting_agent, run_id="r", agent_options=settings(temperature=0.0))
    assert first.config["components"]["temperature"] == 0.0
    before = [(t.task_id, t.trial) for t in stored(tmp_path, "r")]
    with pytest.raises(InputError, match=r"made with temperature 0\.0, not 0\.7") as caught:
        go(tmp_path, counting_agent, run_id="r", trials=2, agent_options=settings(temperature=0.7))
    assert caught.value.field == "temperature"
    changed = {"version": "1.0", "components": {"system_prompt": "Be thorough."}}
    with pytest.raises(InputError, match="system prompt 'sha256:"):
        go(tmp_path, counting_agent, run_id="r", trials=2, agent_options=changed)
    with pytest.raises(InputError, match="agent version"):
        go(tmp_path, counting_agent, run_id="r", trials=2, agent_options={"version": "2.0"})
    assert [(t.task_id, t.trial) for t in stored(tmp_path, "r")] == before  # nothing ran
    # Unknown on one side is not a difference (no temperature declared now); the same
    # settings resume.
    go(tmp_path, counting_agent, run_id="r", trials=2, agent_options=settings())
    assert len(stored(tmp_path, "r")) == 2 * len(before)


def test_same_seed_gives_the_same_agent_randomness_in_a_new_run(tmp_path: Path) -> None:
    draws: dict[str, list[int]] = {}

    def recorder(label: str) -> Any:
        async def agent(session: Session) -> None:
            draws.setdefault(label, []).append(int(session.rng.integers(1 << 30)))

        return agent

    go(tmp_path, recorder("a"), seed=11, concurrency=1)
    go(tmp_path, recorder("b"), seed=11, concurrency=1)
    go(tmp_path, recorder("c"), seed=12, concurrency=1)
    assert draws["a"] == draws["b"] and draws["a"] != draws["c"]


def test_custom_grader_and_a_grader_that_raises(tmp_path: Path) -> None:
    def lenient(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
        return True, 0.5, [Grade(grader="custom", score=0.5, passed=True)]

    def buggy(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
        raise KeyError("oops")

    h1 = go(tmp_path, counting_agent, grader=lenient, tasks=counter_tasks(1))
    (t,) = stored(tmp_path, h1.run_id)
    assert t.success and t.score == 0.5 and t.grades[0].grader == "custom"
    h2 = go(tmp_path, counting_agent, grader=buggy, tasks=counter_tasks(1))
    (t,) = stored(tmp_path, h2.run_id)
    assert not t.success and t.grades[0].status == "grader_error"
    assert t.status == "completed" and t.events  # the transcript survives a grader bug


def test_bad_settings_fail_before_anything_is_written(tmp_path: Path) -> None:
    for kw, match in [
        ({"backend": "spark"}, "unknown backend 'spark'; use local or ray"),
        ({"variants": ["base", "fault:meteor"]}, "unknown variant 'fault:meteor'"),
        ({"trials": 0}, "--trials: must be a positive integer"),
        ({"concurrency": 0}, "--concurrency: must be a positive integer"),
        # The option's name, as the CLI's refusal says it (it said breaker.first).
        ({"breaker_first": -1}, "^--breaker-first: must be a whole number, 0 to turn"),
        ({"breaker_window": 2.5}, "^--breaker-window: must be a whole number, 0 to turn"),
    ]:
        with pytest.raises(InputError, match=match):
            go(tmp_path, counting_agent, **kw)
    assert not (tmp_path / "s.db").exists()  # not even an empty store


def test_a_seed_that_is_not_a_whole_number_is_refused_as_the_cli_refuses_it(
    tmp_path: Path,
) -> None:
    # The seed is hashed as text into each cell's seed: 0.0 ran other trials than 0, and
    # "x" and -1 (which `run --seed -1` refuses) ran and were stored.
    for seed in (0.0, "x", -1, True):
        with pytest.raises(InputError, match=r"^--seed: must be a whole number >= 0, got "):
            go(tmp_path, counting_agent, seed=seed)
    assert not (tmp_path / "s.db").exists()


def test_an_empty_or_misspelt_task_list_is_refused_in_one_line_as_a_file_is(
    tmp_path: Path,
) -> None:
    # `agentgauge.run([], agent)` stored an empty run and returned it (the CLI refuses an
    # empty suite file), and a misspelt key gave pydantic's error over several lines.
    for tasks, message in [
        ([], "suite: holds no tasks: a suite needs at least one"),
        (
            [{"id": "a", "instrction": "x"}],
            "tasks[0].instrction: task 'a': unknown key (put free-form data under 'metadata')",
        ),
        (
            [{"id": "a", "instruction": "x"}, {"instruction": "y"}],
            "tasks[1].id: task 1: required field is missing",
        ),
    ]:
        with pytest.raises(InputError) as caught:
            run(tasks, counting_agent, store=tmp_path / "s.db", progress=False)
        assert str(caught.value) == message
    assert not (tmp_path / "s.db").exists()


def test_environment_named_by_the_task_is_imported(tmp_path: Path) -> None:
    tasks = [
        t.model_copy(update={"environment": "agentgauge.testing.worlds:make_counter_env"})
        for t in counter_tasks(2)
    ]
    header = run(tasks, counting_agent, store=tmp_path / "s.db", progress=False)
    assert all(t.success for t in stored(tmp_path, header.run_id))
    bad = [tasks[0].model_copy(update={"environment": "no_such_module:make"})]
    with pytest.raises(
        InputError,
        match="cannot find module 'no_such_module' for environment 'no_such_module:make'",
    ):
        run(bad, counting_agent, store=tmp_path / "s.db", progress=False)


def test_progress_bar_and_on_trial_callback(tmp_path: Path) -> None:
    seen: list[Trial] = []
    go(tmp_path, counting_agent, progress=True, on_trial=seen.append)
    assert len(seen) == 3 and all(t.success for t in seen)


def test_public_api_is_exported() -> None:
    assert agentgauge.run is run
    assert "run" in agentgauge.__all__
