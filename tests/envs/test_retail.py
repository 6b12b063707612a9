"""The retail world: tools, validity errors, policy flags, fresh copies, canonical state."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentgauge.envs.base import ToolOutcome
from agentgauge.envs.retail import IRREVERSIBLE, TOOLS, RetailEnv
from agentgauge.envs.retail.user import ScriptedUser
from agentgauge.schema import Task


def env(**task_fields: object) -> RetailEnv:
    return RetailEnv(Task(id="t", instruction="hi", **task_fields))  # type: ignore[arg-type]


def test_tool_signatures_are_openai_functions() -> None:
    names = [t["function"]["name"] for t in TOOLS]
    assert len(names) == len(set(names))
    for tool in TOOLS:
        assert tool["type"] == "function"
        params = tool["function"]["parameters"]
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
    assert set(names) >= IRREVERSIBLE
    assert "transfer_to_human" in names


def test_reads_and_unknown_ids() -> None:
    e = env()
    assert e.call_tool("find_customer_by_email", {"email": "Ana.Silva@example.com"}).content == {
        "customer_id": "C01"
    }
    found = e.call_tool("find_customer_by_name_zip", {"name": "jonas  berg", "zip": "55401"})
    assert found.content == {"customer_id": "C10"}
    order = e.call_tool("get_order_details", {"order_id": "W1001"})
    assert not order.is_error and not order.irreversible
    # 25.00 (T-shirt) + 60.00 (backpack) = 85.00
    assert order.content["total"] == 85.0
    missing = e.call_tool("get_order_details", {"order_id": "W9999"})
    assert missing.is_error and "not found" in missing.content
    assert e.call_tool("get_order_details", {}).is_error  # missing required argument
    assert e.call_tool("get_order_details", {"order_id": "W1001", "x": 1}).is_error
    assert e.call_tool("cancel_pending_order", {"order_id": "W1001", "reason": "bored"}).is_error


def test_irreversible_flag_and_cancel_refund() -> None:
    e = env()
    out = e.call_tool("cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"})
    assert out.irreversible and not out.is_error
    state = e.final_state()
    assert state["orders"]["W1001"]["status"] == "cancelled"
    assert state["refunds"] == {
        "F1": {"amount": 85.0, "order_id": "W1001", "payment_id": "card_4242",
               "reason": "cancellation"}
    }  # fmt: skip
    again = e.call_tool("cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"})
    assert again.is_error and not again.irreversible
    # Reversible writes are not flagged.
    addr = {"order_id": "W1014", "street": "1 A St", "city": "B", "state": "MA", "zip": "02138"}
    assert not e.call_tool("modify_pending_order_address", addr).irreversible


def test_tools_enforce_validity_not_policy() -> None:
    e = env()
    # Data validity: a shipped order cannot be cancelled; others' payment methods are refused.
    assert e.call_tool("cancel_pending_order",
                       {"order_id": "W1010", "reason": "no longer needed"}).is_error  # fmt: skip
    assert e.call_tool("return_delivered_order_items",
                       {"order_id": "W1002", "item_ids": ["2002"], "payment_id": "card_1881"}
                       ).is_error  # fmt: skip
    # Policy is NOT enforced: W1003 was delivered 2024-04-06, outside the 30-day window,
    # yet the tool performs the return. Catching that is the graders' job.
    out = e.call_tool(
        "return_delivered_order_items",
        {"order_id": "W1003", "item_ids": ["7001"], "payment_id": "gift_ana"},
    )
    assert not out.is_error and out.irreversible
    # gift_ana 50.00 + 15.00 refunded = 65.00
    assert e.final_state()["payment_methods"]["gift_ana"]["balance"] == 65.0


def test_exchange_price_difference_and_gift_card_balance() -> None:
    e = env()
    out = e.call_tool("exchange_delivered_order_items",
                      {"order_id": "W1002", "item_ids": ["2002"], "new_item_ids": ["2004"],
                       "payment_id": "gift_ana"})  # fmt: skip
    # white size 9 (125.00) - black size 10 (120.00) = +5.00 charged; 50.00 - 5.00 = 45.00
    assert out.content["price_difference"] == 5.0
    state = e.final_state()
    assert state["payment_methods"]["gift_ana"]["balance"] == 45.0
    assert state["orders"]["W1002"]["status"] == "exchange requested"
    assert state["orders"]["W1002"]["items"][0]["status"] == "exchanged"
    # Unavailable variant and a different product are invalid.
    for new in ("2003", "3001"):
        bad = e.call_tool("exchange_delivered_order_items",
                          {"order_id": "W1013", "item_ids": ["2004"], "new_item_ids": [new],
                           "payment_id": "paypal_elena"})  # fmt: skip
        assert bad.is_error


def test_failed_write_changes_nothing() -> None:
    e = env()
    before = e.final_state()
    # W1008 totals 60.00 + 20.00 = 80.00; gift_chloe holds 10.00: the charge fails mid-tool.
    out = e.call_tool(
        "modify_pending_order_payment", {"order_id": "W1008", "payment_id": "gift_chloe"}
    )
    assert out.is_error and "does not cover" in out.content
    assert e.final_state() == before
    ok = e.call_tool(
        "modify_pending_order_payment", {"order_id": "W1012", "payment_id": "gift_dev"}
    )
    assert not ok.is_error
    assert e.final_state()["payment_methods"]["gift_dev"]["balance"] == 165.0  # 200 - 35


def test_refund_bounds() -> None:
    e = env()
    args = {"order_id": "W1020", "payment_id": "card_9090", "reason": "damaged"}
    assert e.call_tool("issue_refund", {**args, "amount": 125.01}).is_error  # total is 125.00
    assert e.call_tool("issue_refund", {**args, "amount": 0}).is_error
    assert e.call_tool("issue_refund", {**args, "amount": 35}).irreversible
    assert e.call_tool("issue_refund", {**args, "order_id": "W1021", "amount": 5}).is_error


def test_each_trial_gets_a_fresh_copy() -> None:
    a, b = env(), env()
    a.call_tool("cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"})
    assert a.final_state()["orders"]["W1001"]["status"] == "cancelled"
    assert b.final_state()["orders"]["W1001"]["status"] == "pending"
    c = env()
    assert c.final_state()["orders"]["W1001"]["status"] == "pending"
    assert c.final_state() == b.final_state()


def test_final_state_is_canonical_json() -> None:
    e = env()
    e.call_tool(
        "transfer_to_human", {"summary": "free text that must not matter", "customer_id": "C01"}
    )
    state = e.final_state()
    text = json.dumps(state, sort_keys=True)
    assert json.loads(text) == state
    assert state["transfers"] == {"T1": {}}  # the summary and optional id are not state

    def sorted_keys(obj: object) -> bool:
        if isinstance(obj, dict):
            return list(obj) == sorted(obj) and all(sorted_keys(v) for v in obj.values())
        if isinstance(obj, list):
            return all(sorted_keys(v) for v in obj)
        return True

    assert sorted_keys(state)
    # The incremental export (clean tables copied from the template) equals a full read,
    # and the SQL-rendered JSON equals the row-by-row Python export.
    from agentgauge.envs.retail import db

    assert state == db.export_state(e._conn) == db.export_state_reference(e._conn)
    for action in (
        ("cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"}),
        ("return_delivered_order_items",
         {"order_id": "W1018", "item_ids": ["1002"], "payment_id": "card_2020"}),
        ("exchange_delivered_order_items",
         {"order_id": "W1002", "item_ids": ["2002"], "new_item_ids": ["2004"],
          "payment_id": "gift_ana"}),
    ):  # fmt: skip
        assert not e.call_tool(*action).is_error
    state = e.final_state()
    assert state == db.export_state_reference(e._conn)
    assert state["exchanges"]["X1"]["new_item_ids"] == ["2004"]
    assert json.dumps(state) == json.dumps(db.export_state_reference(e._conn))  # same key order


def test_initial_state_overrides() -> None:
    e = env(initial_state={"orders": [{"order_id": "W1001", "status": "shipped"}],
                           "payment_methods": [{"payment_id": "gift_new", "customer_id": "C01",
                                                "kind": "gift_card", "description": "Gift",
                                                "balance": 5.0}]})  # fmt: skip
    state = e.final_state()
    assert state["orders"]["W1001"]["status"] == "shipped"
    assert state["payment_methods"]["gift_new"]["balance"] == 5.0
    assert env().final_state()["orders"]["W1001"]["status"] == "pending"
    with pytest.raises(ValueError, match="unknown column"):
        env(initial_state={"orders": [{"order_id": "W1001", "colour": "red"}]})


def user(scenario: dict[str, object], seed: int = 0) -> ScriptedUser:
    return ScriptedUser(scenario, np.random.default_rng(seed))


def test_scripted_user() -> None:
    u = user({"known": {"email": "a@b.c", "order_id": "W1"}})
    assert u.reply("Could you give me your email?") == "My email is a@b.c."
    assert "W1" in (u.reply("Which order is it?") or "")
    assert (u.reply("I will cancel it. Shall I proceed (yes/no)?") or "").startswith("Yes")
    assert u.reply("What is your favourite colour?") == "I don't know, sorry."
    assert u.reply("Your order is cancelled.") is None  # a statement ends the conversation
    no = user({"confirm": False})
    assert (no.reply("Please confirm (yes/no)?") or "").startswith("No")
    assert no.confirmations == [False]
    # Real models phrase things freely.
    u = user({"known": {"email": "a@b.c", "reason": "ordered by mistake", "item": "the lamp"}})
    assert (u.reply("I can cancel it now. Would you like me to go ahead?") or "").startswith("Yes")
    assert u.reply("Which item would you like me to return?") == "My item is the lamp."
    assert u.reply("Got it. Why do you want to cancel?") == "My reason is ordered by mistake."
    assert u.reply("Please confirm your email address?") == "My email is a@b.c."
    assert (u.reply("A refund of $35 to your Visa. Is that correct?") or "").startswith("Yes")
    capped = user({"max_turns": 2})
    assert capped.reply("a?") and capped.reply("b?") and capped.reply("c?") is None


def test_scripted_user_is_deterministic_given_seed() -> None:
    replies = {seed: [user({}, seed).reply("ok (yes/no)?") for _ in range(1)] for seed in range(20)}
    again = {seed: [user({}, seed).reply("ok (yes/no)?")] for seed in range(20)}
    assert replies == again
    assert len({r[0] for r in replies.values()}) > 1  # phrasing does vary across seeds


def test_policy_is_shipped() -> None:
    policy = env().policy
    assert "30 days" in policy and "transfer_to_human" in policy
    for tool in IRREVERSIBLE:
        assert tool in policy


def test_incremental_export_matches_full_read_on_every_plan() -> None:
    """Tools note the rows they write; a missed note would silently drop a change."""
    import asyncio

    from agentgauge.envs.reference_agents import reference_agent
    from agentgauge.envs.retail import db
    from agentgauge.harness.session import TrialSession
    from agentgauge.suite import load_suite

    tasks = load_suite("builtin:retail", include_heldout=True).tasks
    for task in tasks:
        e = RetailEnv(task)
        for call in task.expectations.reference_calls:
            e.call_tool(call.name, call.arguments)
            assert e.final_state() == db.export_state_reference(e._conn), task.id
    hasty = reference_agent("builtin:hasty", tasks)  # its slips write unusual rows
    for seed in range(3):
        for task in tasks:
            e = RetailEnv(task, seed=seed)
            asyncio.run(hasty(TrialSession(task.id, e, seed=seed)))
            assert e.final_state() == db.export_state_reference(e._conn), task.id


def test_sqlite_refusing_a_tool_is_the_worlds_error_not_the_stores() -> None:
    import sqlite3

    from agentgauge.envs.retail.tools import WorldDatabaseError

    e = env()
    e.close()  # any refusal of the world's own database will do
    with pytest.raises(WorldDatabaseError, match="the retail world's database refused "
                       "get_order_details") as caught:  # fmt: skip
        e.call_tool("get_order_details", {"order_id": "W1001"})
    # The CLI reads a sqlite3.Error that reaches it as the store's ("SQLite refused the store").
    assert not isinstance(caught.value, sqlite3.Error)


def test_a_number_no_float_holds_is_the_agents_tool_error_not_the_worlds(tmp_path: Path) -> None:
    """``issue_refund`` with an integer amount past what a float holds (10**400, which
    JSON allows and Python reads as an int) raised OverflowError inside the tool: the
    trial was recorded as an infra error, the world's fault, and the agent never saw
    why. It is the agent's bad input: an error result, and the state unchanged."""
    import dataclasses

    import agentgauge
    from agentgauge.harness.session import TrialSession
    from agentgauge.store import Store
    from agentgauge.suite import load_suite

    answers: list[ToolOutcome] = []

    async def agent(session: TrialSession) -> None:
        for name, args in [
            ("get_product_details", {"product_id": "P999"}),  # no such product
            (
                "exchange_delivered_order_items",  # no such item in the catalogue
                {
                    "order_id": "W1002",
                    "item_ids": ["2002"],
                    "new_item_ids": ["9999"],
                    "payment_id": "card_4242",
                },
            ),
            (
                "issue_refund",
                {
                    "order_id": "W1002",
                    "amount": 10**400,
                    "payment_id": "card_4242",
                    "reason": "late",
                },
            ),
        ]:
            answers.append(await session.call_tool(name, args))
        session.answer("done")

    suite = load_suite("builtin:retail")
    one = dataclasses.replace(suite, tasks=suite.tasks[:1])
    agentgauge.run(one, agent, store=tmp_path / "s.db", run_id="r", progress=False)
    with Store(tmp_path / "s.db", readonly=True) as store:
        (trial,) = store.trials("r")
    assert not trial.is_infra_error, trial.error
    assert [a.is_error for a in answers] == [True, True, True]
    assert "product 'P999' not found" in str(answers[0].content)
    assert "item '9999' not found" in str(answers[1].content)
    assert "amount" in str(answers[2].content)
    assert trial.final_state is not None and trial.final_state.get("refunds", {}) == {}
