"""``paraphrase:N`` on a world of one's own opens with the paraphrase, or is refused.

Before this change a factory of one's own (``module:function``, ``env_factory=``)
whose world opened with ``task.instruction`` whatever the variant ran every
``paraphrase:N`` trial on the instruction: base trials under the paraphrase's name,
prompt robustness 1.0 for an agent that only understood the instruction's wording.
Now the harness puts the paraphrase in the opening message (`ParaphrasedEnv`), and a
world whose opening holds neither the instruction nor the paraphrase is refused
before any trial runs (exit 2), its header left as it was on a resume.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.base import Session
from agentgauge.envs.base import ToolOutcome
from agentgauge.envs.faults import (
    ParaphrasedEnv,
    ParaphraseNotApplied,
    applied_kinds,
    with_variants,
)
from agentgauge.errors import InputError, RunStopped
from agentgauge.harness.runner import run
from agentgauge.metrics.robustness import robustness
from agentgauge.schema import MessageEvent, Task, ToolResultEvent, Trial
from agentgauge.store import Store
from agentgauge.table import TrialTable
from agentgauge.testing.worlds import CounterEnv, counting_agent

ROOT = Path(__file__).resolve().parents[2]

TASK = Task(
    id="t",
    instruction="Please add 3",
    paraphrases=["Increase the counter by three", "Bump it up by three"],
    user_scenario={"replies": ["Yes, three."]},
    expectations={"final_state": {"counter": 3}},
)


class Plain(CounterEnv):
    """A user's world that opens with the task's instruction and ignores the variant."""

    def __init__(self, task: Task, *, variant: str = "base", seed: int = 0) -> None:
        super().__init__(task, variant="base", seed=seed)


class Greeting(Plain):
    """Holds the instruction inside an opening of its own."""

    def first_message(self) -> str:
        return f"Hi, I'm Ana. {self._first} Thanks!"


class OwnOpening(Plain):
    """Opens with words of its own (as a simulated user that writes its first message
    from the instruction would): the paraphrase cannot be put in them."""

    def first_message(self) -> str:
        return "Hello! Something about my counter: " + self._first.upper()


def plain(task: Task, *, variant: str, seed: int) -> Plain:
    return Plain(task, variant=variant, seed=seed)


def greeting(task: Task, *, variant: str, seed: int) -> Greeting:
    return Greeting(task, variant=variant, seed=seed)


def own_opening(task: Task, *, variant: str, seed: int) -> OwnOpening:
    return OwnOpening(task, variant=variant, seed=seed)


async def literal_agent(session: Session) -> None:
    """Understands only the words "add N": a paraphrase trips it. Asks the user first,
    and says what it saw, so the transcript shows both."""
    session.record_cost(0.0)
    reply = await session.say("How much should I add?")
    session.note("reply", reply)
    match = re.search(r"\badd (\d+)", session.instruction)
    if match:
        await session.call_tool("add", {"amount": int(match.group(1))})


def opening(trial: Trial) -> str | None:
    first = trial.events[0]
    assert isinstance(first, MessageEvent) and first.role == "user"
    return first.content


def by_variant(store: Path, run_id: str) -> dict[str, Trial]:
    with Store(store) as db:
        return {t.variant: t for t in db.trials(run_id)}


def test_the_agent_sees_the_paraphrase_from_a_world_that_ignores_the_variant(
    tmp_path: Path,
) -> None:
    header = run(
        [TASK],
        literal_agent,
        store=tmp_path / "s.db",
        env_factory=plain,
        variants=["base", "paraphrase"],
        progress=False,
    )
    trials = by_variant(tmp_path / "s.db", header.run_id)
    assert opening(trials["base"]) == "Please add 3" and trials["base"].success
    for n, text in ((1, "Increase the counter by three"), (2, "Bump it up by three")):
        trial = trials[f"paraphrase:{n}"]
        assert opening(trial) == text
        # the literal agent fails on a real paraphrase: it ran the base instruction
        # before, and passed
        assert not trial.success and trial.final_state == {"counter": 0}
    # prompt robustness was 1.0: min(0 / 1, 1) now
    assert robustness(TrialTable.from_trials(list(trials.values())), "prompt").value == 0.0


def test_the_simulated_user_still_answers_under_a_paraphrase(tmp_path: Path) -> None:
    """A paraphrase rewords the opening message only: the world's simulated user
    answers from its scenario as in base, as the built-in worlds' users do."""
    header = run(
        [TASK],
        literal_agent,
        store=tmp_path / "s.db",
        env_factory=plain,
        variants=["base", "paraphrase:1"],
        progress=False,
    )
    trials = by_variant(tmp_path / "s.db", header.run_id)
    for trial in trials.values():
        said = [e.content for e in trial.events if isinstance(e, MessageEvent)]
        assert said[1:] == ["How much should I add?", "Yes, three."], said
    assert opening(trials["paraphrase:1"]) == "Increase the counter by three"


def test_an_opening_that_holds_the_instruction_holds_the_paraphrase(tmp_path: Path) -> None:
    header = run(
        [TASK],
        literal_agent,
        store=tmp_path / "s.db",
        env_factory=greeting,
        variants=["base", "paraphrase:2"],
        progress=False,
    )
    trials = by_variant(tmp_path / "s.db", header.run_id)
    assert opening(trials["base"]) == "Hi, I'm Ana. Please add 3 Thanks!"
    assert opening(trials["paraphrase:2"]) == "Hi, I'm Ana. Bump it up by three Thanks!"


def test_a_world_that_opens_with_the_paraphrase_itself_is_kept(tmp_path: Path) -> None:
    def counter(task: Task, *, variant: str, seed: int) -> CounterEnv:
        return CounterEnv(task, variant=variant, seed=seed)  # reads paraphrase:N

    header = run(
        [TASK],
        literal_agent,
        store=tmp_path / "s.db",
        env_factory=counter,
        variants=["paraphrase:1"],
        progress=False,
    )
    (trial,) = by_variant(tmp_path / "s.db", header.run_id).values()
    assert opening(trial) == "Increase the counter by three"


def test_a_world_with_an_opening_of_its_own_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    built: list[str] = []

    def counted(task: Task, *, variant: str, seed: int) -> OwnOpening:
        built.append(variant)
        return own_opening(task, variant=variant, seed=seed)

    with pytest.raises(InputError) as caught:
        run(
            [TASK],
            literal_agent,
            store=tmp_path / "s.db",
            env_factory=counted,
            variants=["base", "paraphrase"],
            progress=False,
        )
    message = str(caught.value)
    assert message.startswith("--variants: cannot run the paraphrase variants: task 't':")
    assert "holds neither the task's instruction nor its paraphrase 1" in message
    assert "applies_variants = {'paraphrase'}" in message and "SPEC" not in message
    assert not (tmp_path / "s.db").exists()  # nothing was written
    assert built == ["paraphrase:1"]  # one world built to find out, none run
    # without paraphrases the world runs as it is
    run([TASK], literal_agent, store=tmp_path / "s.db", env_factory=own_opening,
        variants=["base"], progress=False)  # fmt: skip


def test_a_resume_that_adds_refused_paraphrases_leaves_the_header_alone(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    kwargs: dict[str, Any] = {"store": store, "env_factory": own_opening, "progress": False}
    run([TASK], literal_agent, run_id="r", variants=["base"], **kwargs)
    with pytest.raises(InputError, match="cannot run the paraphrase variants"):
        run([TASK], literal_agent, run_id="r", variants=["base", "paraphrase:1"], **kwargs)
    with Store(store) as db:
        header = db.get_run("r")
        assert header is not None and header.config["variants"] == ["base"]
        assert [t.variant for t in db.trials("r")] == ["base"]
    run([TASK], literal_agent, run_id="r", **kwargs)  # still resumes as it was made


def test_a_factory_that_rewords_the_opening_itself_says_so(tmp_path: Path) -> None:
    """``applies_variants = {"paraphrase"}``: trusted with the paraphrase (not built
    beforehand), while the harness still injects the faults."""
    built: list[str] = []

    def rewording(task: Task, *, variant: str, seed: int) -> OwnOpening:
        built.append(variant)
        return own_opening(task, variant=variant, seed=seed)

    rewording.applies_variants = {"paraphrase"}  # type: ignore[attr-defined]
    header = run(
        [TASK],
        counting_agent,
        store=tmp_path / "s.db",
        env_factory=rewording,
        variants=["paraphrase:1", "fault:tool_error@1.0"],
        progress=False,
    )
    assert sorted(built) == ["fault:tool_error@1.0", "paraphrase:1"]
    trials = by_variant(tmp_path / "s.db", header.run_id)
    assert opening(trials["paraphrase:1"]) == "Hello! Something about my counter: PLEASE ADD 3"
    faulted = [e.content for e in trials["fault:tool_error@1.0"].events
               if isinstance(e, ToolResultEvent)]  # fmt: skip
    assert faulted == ["Error: internal error in add (transient); no changes were made. Retry."]


def test_applies_variants_names_kinds_of_variant() -> None:
    def factory(task: Task, *, variant: str, seed: int) -> Plain:
        return plain(task, variant=variant, seed=seed)

    assert applied_kinds(factory) == frozenset()
    factory.applies_variants = True  # type: ignore[attr-defined]
    assert applied_kinds(factory) == {"paraphrase", "fault", "env"}
    assert with_variants(factory) is factory
    factory.applies_variants = "paraphrase"  # type: ignore[attr-defined]
    assert applied_kinds(factory) == {"paraphrase"}
    factory.applies_variants = ["paraphrases"]  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="'paraphrases', not a kind of variant"):
        with_variants(factory)


def test_a_world_whose_opening_changes_after_the_check_fails_its_trial(tmp_path: Path) -> None:
    """The check builds one world; a later one that opens with words of its own is the
    environment's error (infra), never a base trial under the paraphrase's name."""
    built: list[str] = []

    def fickle(task: Task, *, variant: str, seed: int) -> Plain:
        built.append(variant)
        return (plain if len(built) == 1 else own_opening)(task, variant=variant, seed=seed)

    with pytest.raises(RunStopped, match="only trial it ran was an infra error"):
        run([TASK], literal_agent, store=tmp_path / "s.db", run_id="r", env_factory=fickle,
            variants=["paraphrase:1"], progress=False)  # fmt: skip
    (trial,) = by_variant(tmp_path / "s.db", "r").values()
    assert trial.status == "error" and trial.error_kind == "infra" and not trial.success
    assert trial.error is not None and "ParaphraseNotApplied" in trial.error


@pytest.mark.parametrize(
    ("instruction", "paraphrase", "world", "expected"),
    [
        ("Please add 3", "Add three", "Please add 3", "Add three"),
        ("Please add 3", "Add three", "  Please add 3\n", "Add three"),
        ("Please add 3", "Add three", "Add three", "Add three"),
        ("Please add 3", "Add three", "Hi. Add three", "Hi. Add three"),
        ("Please add 3", "Add three", "Hi. Please add 3", "Hi. Add three"),
        # a paraphrase that holds the instruction: applied, not replaced again
        ("add 3", "please add 3 now", "Hi. please add 3 now", "Hi. please add 3 now"),
        # a paraphrase that is a piece of the instruction shows nothing
        ("add 3 please", "add 3", "Hi. add 3 please", "Hi. add 3"),
        ("add 3 please", "add 3", "add 3 please", "add 3"),
        ("add 3 please", "add 3", "Hi. add 3", "Hi. add 3"),
    ],
)
def test_the_paraphrase_goes_where_the_instruction_was(
    instruction: str, paraphrase: str, world: str, expected: str
) -> None:
    task = Task(id="t", instruction=instruction, paraphrases=[paraphrase])

    class Opening(Plain):
        def first_message(self) -> str:
            return world

    env = ParaphrasedEnv(Opening(task), task, 1)
    assert env.first_message() == expected
    assert env.first_message() == expected  # read once from the world


def test_an_opening_without_either_text_is_not_paraphrased() -> None:
    env = ParaphrasedEnv(OwnOpening(TASK), TASK, 2)
    with pytest.raises(ParaphraseNotApplied, match="nor its paraphrase 2"):
        env.first_message()
    assert env.call_tool("add", {"amount": 1}) == ToolOutcome(content={"counter": 1})


WORLD_MODULE = """
from agentgauge.testing.worlds import CounterEnv, counting_agent


class Plain(CounterEnv):
    def __init__(self, task, *, variant, seed):
        super().__init__(task, variant="base", seed=seed)


class Own(Plain):
    def first_message(self):
        return "Hello! " + self._first.upper()


def plain(task, *, variant, seed):
    return Plain(task, variant=variant, seed=seed)


def own(task, *, variant, seed):
    return Own(task, variant=variant, seed=seed)
"""

SUITE = """
name: mine
tasks:
  - id: t1
    environment: myworld:{factory}
    instruction: Please add 3
    paraphrases: [Increase the counter by 3]
    expectations: {{final_state: {{counter: 3}}}}
"""


def agentgauge_run(tmp_path: Path, factory: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "myworld.py").write_text(WORLD_MODULE)
    (tmp_path / f"{factory}.yaml").write_text(textwrap.dedent(SUITE.format(factory=factory)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(tmp_path)])}
    command = [sys.executable, "-m", "agentgauge", "run", f"{factory}.yaml"]
    command += ["--agent", "agentgauge.testing.worlds:counting_agent", "--store", "s.db"]
    return subprocess.run(
        [*command, *extra], capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env
    )


def test_cli_paraphrase_on_a_module_function_world(tmp_path: Path) -> None:
    done = agentgauge_run(tmp_path, "plain", "--variants", "base,paraphrase", "--run-id", "r")
    assert done.returncode == 0, done.stderr
    trials = by_variant(tmp_path / "s.db", "r")
    assert opening(trials["paraphrase:1"]) == "Increase the counter by 3"
    assert opening(trials["base"]) == "Please add 3"


def test_cli_refuses_paraphrase_on_a_world_with_an_opening_of_its_own(tmp_path: Path) -> None:
    done = agentgauge_run(tmp_path, "own", "--variants", "base,paraphrase")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "cannot run the paraphrase variants: task 't1'" in line
    assert "'Hello! PLEASE ADD 3'" in line
    assert not (tmp_path / "s.db").exists()
