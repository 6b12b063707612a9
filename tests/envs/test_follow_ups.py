"""Conversations with follow-ups in the retail world: the scripted user's turns, the
turn record a run keeps (through the store and the JSONL interchange), the built-in
family's tasks, and the reference agents on them."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentgauge.api import regrade
from agentgauge.envs.retail.user import ScriptedUser
from agentgauge.errors import InputError
from agentgauge.exporters.jsonl import trials_jsonl
from agentgauge.graders import grade_trial
from agentgauge.harness.runner import run
from agentgauge.importers.jsonl import read
from agentgauge.schema import ToolCallEvent, Trial
from agentgauge.store import Store
from agentgauge.suite import Suite, load_suite
from agentgauge.turns import turns_of

RETAIL = load_suite("builtin:retail")
FOLLOW_UPS = [t for t in RETAIL.tasks if t.family == "follow_ups"]


def test_the_user_sends_each_follow_up_after_a_statement_then_leaves() -> None:
    user = ScriptedUser(
        {"known": {"email": "a@x"}, "follow_ups": ["Also B.", "And C."]},
        np.random.default_rng(0),
    )
    assert (user.user_turns, user.user_turn) == (3, 1)
    assert user.reply("What is your email?") == "My email is a@x."
    assert user.user_turn == 1  # a question does not end the turn
    assert user.reply("Done.") == "Also B." and user.user_turn == 2
    assert user.reply("Done too.") == "And C." and user.user_turn == 3
    assert user.reply("All done.") is None and user.user_turn == 3


def test_the_family_has_multi_turn_tasks_with_a_checkpoint_per_turn() -> None:
    assert len(FOLLOW_UPS) >= 4
    for t in FOLLOW_UPS:
        follow_ups = t.user_scenario["follow_ups"]
        assert follow_ups and len(t.expectations.checkpoints) == 1 + len(follow_ups), t.id
        assert len(t.paraphrases) == 2 and t.human_minutes, t.id
        # The reference plan is the checkpoints' calls, turn after turn.
        plan = [c for cp in t.expectations.checkpoints for c in cp.calls]
        assert t.expectations.reference_calls == plan, t.id
    assert max(len(t.expectations.checkpoints) for t in FOLLOW_UPS) >= 3


def _run(tmp_path: Path, agent: str, trials: int, variants: str = "base") -> list[Trial]:
    suite = Suite(name="follow_ups", version=RETAIL.version, tasks=FOLLOW_UPS)
    db = tmp_path / "s.db"
    header = run(suite, agent, trials=trials, variants=variants, store=db, progress=False)
    with Store(db) as store:
        return store.trials(header.run_id)


def test_oracle_passes_every_follow_up_task_in_every_turn(tmp_path: Path) -> None:
    # A fault variant wraps the world: the wrapper must pass the user's turns through.
    trials = _run(tmp_path, "builtin:oracle", 1, "base,paraphrase,fault:timeout")
    assert len(trials) == 4 * len(FOLLOW_UPS)
    for t in trials:
        assert t.success, (t.task_id, t.variant, [(g.grader, g.status) for g in t.grades])
        grade = next(g for g in t.grades if g.grader == "checkpoints")
        assert grade.passed and grade.evidence["n_turns"] == grade.evidence["n_checkpoints"]


@pytest.mark.parametrize("agent", ["builtin:careful", "builtin:hasty"])
def test_careful_and_hasty_fail_some_through_a_checkpoint(tmp_path: Path, agent: str) -> None:
    trials = _run(tmp_path, agent, 12)
    statuses = collections.Counter(
        g.status for t in trials for g in t.grades if g.grader == "checkpoints"
    )
    assert statuses["passed"] > 0
    assert any(s.startswith("checkpoint:") for s in statuses), statuses
    if agent == "builtin:hasty":
        # A skipped lookup leaves the state right: only the call check catches it.
        caught = [
            t
            for t in trials
            for g in t.grades
            if g.grader == "checkpoints" and g.status == "checkpoint:calls"
        ]
        assert caught


def test_the_turn_record_survives_the_store_and_the_jsonl_interchange(tmp_path: Path) -> None:
    stored = _run(tmp_path, "builtin:careful", 2)
    three = next(t for t in stored if t.task_id == "followup_three_turns_C04" and t.success)
    record = three.turns
    assert (
        record is not None
        and len(record) == 2
        and all(isinstance(r["state"], dict) for r in record)
    )
    turns = turns_of(three)
    assert turns is not None and [t.index for t in turns] == [1, 2, 3]
    # The hand-back of turn 2 is the agent's statement about W1010 and W1029, after
    # which the user's last follow-up opens turn 3.
    said = three.events[turns[2].start]
    assert said.type == "message" and said.role == "user" and "cancel W1012" in str(said.content)
    path = tmp_path / "t.jsonl"
    path.write_text(trials_jsonl(stored))
    imported = read(path).trials
    task = {t.id: t for t in FOLLOW_UPS}
    for before, after in zip(stored, imported, strict=True):
        assert after.metadata == before.metadata and after.turns == before.turns
        old = next(g for g in before.grades if g.grader == "checkpoints")
        again = next(
            g for g in grade_trial(task[after.task_id], after).grades if g.grader == "checkpoints"
        )
        assert again == old


def test_regrading_the_stored_run_reads_the_turns_and_changes_nothing(tmp_path: Path) -> None:
    suite = Suite(name="follow_ups", version=RETAIL.version, tasks=FOLLOW_UPS)
    db = tmp_path / "s.db"
    header = run(suite, "builtin:hasty", trials=3, store=db, progress=False)
    result = regrade(f"{db}:{header.run_id}")  # every enabled code grader, checkpoints too
    assert result.n_trials == 3 * len(FOLLOW_UPS) and result.n_unknown == 0
    assert result.n_changed == 0 and result.success_before == result.success_after


def test_a_single_turn_trial_keeps_its_record_as_it_was(tmp_path: Path) -> None:
    suite = Suite(name="one", version="v", tasks=[RETAIL.task("cancel_pending_W1001")])
    header = run(suite, "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    assert trial.turns is None and "turns" not in trial.metadata


CHECKPOINTED = """\
tasks:
  - id: two
    environment: retail
    instruction: "Ship W1014 to 12 Oxford St, Cambridge, MA 02138."
    user_scenario: {follow_ups: ["Actually, what's the status of W1030?"]}
    expectations:
      checkpoints:
        - calls:
            - name: modify_pending_order_address
              arguments: {order_id: W1014, street: 12 Oxford St, city: Cambridge, state: MA,
                          zip: "02138"}
          state_assertions: [{path: orders.W1014.street, equals: 12 Oxford St}]
        - calls: [{name: get_order_details, arguments: {order_id: W1030}}]
"""


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.exit_code == 2
    return str(info.value).replace(str(path), "FILE")


def test_a_checkpointed_task_loads_and_bad_checkpoints_are_located(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(CHECKPOINTED)
    task = load_suite(path).task("two")
    assert [c.name for c in task.expectations.reference_calls] == [
        "modify_pending_order_address",
        "get_order_details",
    ]
    empty = CHECKPOINTED.replace(
        "        - calls: [{name: get_order_details, arguments: {order_id: W1030}}]\n",
        "        - {mode: any_order}\n",
    )
    assert _error(tmp_path, empty).startswith(
        "FILE:13: expectations.checkpoints.1: task 'two': a checkpoint needs state, "
        "state_assertions or calls"
    )
    typo = CHECKPOINTED.replace("        - calls: [{name: get", "        - cals: [{name: get")
    assert _error(tmp_path, typo).startswith("FILE:13: expectations.checkpoints.1.cals: ")
    mode = CHECKPOINTED.replace(
        "      checkpoints:\n        - calls:",
        "      checkpoints:\n        - mode: exact\n          calls:",
    )
    assert "expectations.checkpoints.0.mode" in _error(tmp_path, mode)
    one_more = CHECKPOINTED.replace('["Actually', '["Also W1001.", "Actually')
    # Each at its own line and field: they were all at the task's first line.
    assert _error(tmp_path, one_more).startswith(
        "FILE:7: expectations.checkpoints: task 'two': 2 checkpoint(s) for 3 user turn(s)"
    )
    wrong = CHECKPOINTED.replace("equals: 12 Oxford St", "equals: 13 Oxford St")
    assert _error(tmp_path, wrong).startswith(
        "FILE:8: expectations.checkpoints.0: task 'two': checkpoint 1 does not hold on its "
        "own calls"
    )
    failing = CHECKPOINTED.replace("order_id: W1030", "order_id: W9999")
    assert _error(tmp_path, failing).startswith(
        "FILE:13: expectations.checkpoints.1.calls.0: task 'two': checkpoint 2's call 0 "
        "(get_order_details) failed"
    )


def test_the_worked_example_in_the_task_guide_loads_and_the_oracle_passes_it(
    tmp_path: Path,
) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "writing-tasks.md").read_text()
    (block,) = [b.split("```", 1)[0] for b in guide.split("```yml\n")[1:]]
    path = tmp_path / "guide.yaml"
    path.write_text(block)
    suite = load_suite(path)
    (task,) = suite.tasks
    assert len(task.expectations.checkpoints) == 2 and len(task.expectations.reference_calls) == 3
    header = run(suite, "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    assert trial.success, [(g.grader, g.status) for g in trial.grades]
    assert {g.grader for g in trial.grades} >= {"checkpoints", "state", "answer", "control"}


def test_a_statement_gets_the_next_follow_up_after_max_turns_answers() -> None:
    # max_turns bounds answers to questions (a looping agent), not the scenario's
    # follow-ups: one answer used, the statement still gets the follow-up.
    user = ScriptedUser(
        {"known": {"order_id": "W1"}, "max_turns": 1, "follow_ups": ["Also B."]},
        np.random.default_rng(0),
    )
    assert (user.reply("Shall I proceed (yes/no)?") or "").startswith("Yes")
    assert user.reply("Done, cancelled.") == "Also B." and user.user_turn == 2
    assert user.reply("Which order?") is None  # the budget is spent: the user leaves
    assert user.reply("All done.") is None  # no follow-up left


_ONE_QUESTION_SUITE = """\
name: one-question
tasks:
  - id: ta
    environment: retail
    instruction: "Ana Silva (ana.silva@example.com). Please cancel my order W1001."
    user_scenario:
      known: {email: ana.silva@example.com, order_id: W1001, reason: no longer needed}
      max_turns: 1
      follow_ups: ["Thanks. Also, what's the tracking number of my order W1030?"]
    expectations:
      checkpoints:
        - calls:
            - name: cancel_pending_order
              arguments: {order_id: W1001, reason: no longer needed}
        - calls: [{name: get_order_details, arguments: {order_id: W1030}}]
"""


def test_an_agent_that_asks_once_per_max_turns_1_still_gets_its_follow_up(
    tmp_path: Path,
) -> None:
    async def confirms_then_acts(session: Any) -> None:
        await session.say("Shall I cancel W1001 (yes/no)?")
        args = {"order_id": "W1001", "reason": "no longer needed"}
        await session.call_tool("cancel_pending_order", args)
        follow_up = await session.say("Done, cancelled.")
        assert follow_up and "W1030" in follow_up
        await session.call_tool("get_order_details", {"order_id": "W1030"})
        await session.say("Its tracking number is 1Z1030.")

    (tmp_path / "suite.yaml").write_text(_ONE_QUESTION_SUITE)
    header = run(
        load_suite(tmp_path / "suite.yaml"),
        confirms_then_acts,
        store=tmp_path / "s.db",
        progress=False,
    )
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    grade = next(g for g in trial.grades if g.grader == "checkpoints")
    assert (trial.status, trial.success, grade.status) == ("completed", True, "passed")


LIST_ARGUMENT = """\
tasks:
  - id: two
    environment: retail
    instruction: "What's the status of W1030?"
    user_scenario: {follow_ups: ["Also return the shoes of W1002 to my card."]}
    expectations:
      checkpoints:
        - calls: [{name: get_order_details, arguments: {order_id: W1030}}]
        - calls:
            - {name: return_delivered_order_items,
               arguments: {order_id: W1002, item_ids: ["2002"], payment_id: card_4242}}
      trajectory: {arguments: ast}
"""


def test_a_checkpoint_call_with_a_list_argument_is_written_once(tmp_path: Path) -> None:
    # The calls are run as written when the suite loads, and were graded under `ast`,
    # where a list is a list of acceptable values: `item_ids: ["2002"]` failed its own
    # check ("missing call return_delivered_order_items"), and `[["2002"]]` failed to
    # run ("argument 'item_ids' must be a array").
    path = tmp_path / "s.yaml"
    path.write_text(LIST_ARGUMENT)
    suite = load_suite(path)
    (task,) = suite.tasks
    assert task.expectations.reference_calls[1].arguments["item_ids"] == ["2002"]
    header = run(suite, "builtin:oracle", trials=1, store=tmp_path / "s.db", progress=False)
    with Store(tmp_path / "s.db") as store:
        (trial,) = store.trials(header.run_id)
    assert trial.success, [(g.grader, g.status) for g in trial.grades]
    # The derived reference calls too (`trajectory` under `ast`), and so does a re-grade
    # of the stored run, which reads the stored task.
    assert {g.grader: g.status for g in trial.grades}["trajectory"] == "passed"
    again = regrade(f"{tmp_path / 's.db'}:{header.run_id}")
    assert (again.n_trials, again.n_changed) == (1, 0)
    # The list is one value: returning another item, or a scalar, is no match.
    for wrong in (["2003"], "2002"):
        calls = [c.model_copy() for c in trial.events]
        for e in calls:
            if isinstance(e, ToolCallEvent) and e.name == "return_delivered_order_items":
                e.arguments = {**e.arguments, "item_ids": wrong}
        other = trial.model_copy(update={"events": calls})
        grade = next(
            g for g in grade_trial(task, other, ["checkpoints"]).grades if g.grader == "checkpoints"
        )
        assert grade.status == "checkpoint:calls", wrong


def test_checkpoints_that_change_what_the_reference_calls_do_not_are_refused(
    tmp_path: Path,
) -> None:
    # Checkpoint 1 cancels W1001, the reference calls only read it: the suite loaded,
    # the final state (from the reference calls) said W1001 stays pending, and the
    # reference agent failed every trial.
    text = CHECKPOINTED.replace(
        "    expectations:\n",
        "    expectations:\n      reference_calls:\n"
        "        - {name: get_order_details, arguments: {order_id: W1014}}\n"
        "        - {name: get_order_details, arguments: {order_id: W1030}}\n",
    )
    assert _error(tmp_path, text) == (
        "FILE:11: expectations.checkpoints.0: task 'two': the checkpoints' calls, turn after "
        "turn, leave another state than reference_calls do (they differ at "
        "orders.W1014.street, orders.W1014.zip; checkpoint 1 is the first whose calls "
        "change one), so no trial could pass both: make reference_calls change what the "
        "checkpoints' calls change, or leave them out"
    )
    # Reference calls that make the same change in their own order, with reads of their
    # own, agree with the checkpoints.
    same = CHECKPOINTED.replace(
        "    expectations:\n",
        "    expectations:\n      reference_calls:\n"
        "        - {name: get_order_details, arguments: {order_id: W1014}}\n"
        "        - {name: modify_pending_order_address, arguments: {order_id: W1014, "
        'street: 12 Oxford St, city: Cambridge, state: MA, zip: "02138"}}\n',
    )
    path = tmp_path / "same.yaml"
    path.write_text(same)
    assert len(load_suite(path).tasks[0].expectations.reference_calls) == 2
