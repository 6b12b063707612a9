"""Variants: paraphrases, injected faults (seeded, at the configured rate), reshaped results."""

from __future__ import annotations

import math

import pytest

from agentgauge.envs.faults import FaultyEnv, PerturbedEnv, make_env, parse_variant
from agentgauge.errors import InputError
from agentgauge.schema import Task

TASK = Task(id="t", environment="retail", instruction="base", paraphrases=["one", "two"])


def test_parse_variant() -> None:
    assert parse_variant("base").kind == "base"
    assert parse_variant("paraphrase:2").detail == "2"
    v = parse_variant("fault:timeout")
    assert (v.kind, v.detail, v.rate) == ("fault", "timeout", 0.2)
    assert parse_variant("fault:rate_limit@0.5").rate == 0.5
    assert parse_variant("env:wrap").detail == "wrap"
    for bad in ("paraphrase:0", "paraphrase:x", "fault:boom", "fault:timeout@2", "env:x", "nope"):
        with pytest.raises(InputError):
            parse_variant(bad)


def test_paraphrase_variant_sets_first_message() -> None:
    assert make_env(TASK, "base").first_message() == "base"
    assert make_env(TASK, "paraphrase:2").first_message() == "two"
    with pytest.raises(InputError, match="paraphrase"):
        make_env(TASK, "paraphrase:3")


def test_unknown_environment() -> None:
    with pytest.raises(InputError, match="unknown environment"):
        make_env(Task(id="x", environment="mars", instruction="hi"))


def fault_pattern(seed: int, rate: float, n: int) -> list[bool]:
    env = make_env(TASK, f"fault:tool_error@{rate}", seed)
    return [env.call_tool("find_customer_by_email", {"email": "ana.silva@example.com"}).is_error
            for _ in range(n)]  # fmt: skip


def test_faults_injected_at_the_configured_rate() -> None:
    n, rate = 4000, 0.2
    hits = fault_pattern(7, rate, n)
    # Binomial(4000, 0.2): mean 800, sd sqrt(4000 * 0.2 * 0.8) = 25.3; allow 4.5 sd = 114.
    assert abs(sum(hits) - n * rate) < 4.5 * math.sqrt(n * rate * (1 - rate))
    assert fault_pattern(7, rate, 200) == hits[:200]  # seeded: same seed, same faults
    assert fault_pattern(8, rate, 200) != hits[:200]
    assert not any(fault_pattern(1, 0.0, 100))
    assert all(fault_pattern(1, 1.0, 100))


@pytest.mark.parametrize("kind", ["tool_error", "timeout", "rate_limit"])
def test_faulted_call_is_not_executed(kind: str) -> None:
    env = make_env(TASK, f"fault:{kind}@1.0", 0)
    assert isinstance(env, FaultyEnv)
    out = env.call_tool("cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"})
    assert out.is_error and not out.irreversible
    assert env.final_state()["orders"]["W1001"]["status"] == "pending"
    assert env.injected == env.calls == 1


def test_structural_perturbations_keep_meaning() -> None:
    base = make_env(TASK, "base").call_tool("get_order_details", {"order_id": "W1001"}).content
    renamed = make_env(TASK, "env:rename_keys").call_tool(
        "get_order_details", {"order_id": "W1001"}
    )
    assert (
        renamed.content["orderId"] == "W1001" and renamed.content["placedOn"] == base["placed_on"]
    )
    assert renamed.content["items"][0]["itemId"] == "1001"
    wrapped = make_env(TASK, "env:wrap").call_tool("get_order_details", {"order_id": "W1001"})
    assert wrapped.content == {"data": base, "status": "ok"}
    reordered = make_env(TASK, "env:reorder").call_tool("get_order_details", {"order_id": "W1001"})
    assert reordered.content == base and list(reordered.content) == list(reversed(list(base)))
    env = make_env(TASK, "env:wrap")
    assert isinstance(env, PerturbedEnv)
    cancel = env.call_tool(
        "cancel_pending_order", {"order_id": "W1001", "reason": "no longer needed"}
    )
    assert cancel.irreversible
    error = env.call_tool("get_order_details", {"order_id": "nope"})
    assert error.is_error and isinstance(error.content, str)
