"""An agent evaluated as pytest tests with agentgauge (copy this file and adapt it).

Run it with plain pytest (the plugin comes with agentgauge):

    pytest examples/test_agent_with_pytest.py
    pytest examples/test_agent_with_pytest.py --agentgauge-trials 3      # a quick CI lane
    pytest examples/test_agent_with_pytest.py --agentgauge-store runs.db # keep the runs

The tasks use the tiny counter world that ships with agentgauge
(`agentgauge.testing.worlds`): the state is one integer, the tools are ``get``
and ``add``, and a task passes when the final counter equals the expected one.
Point ``environment`` at your own factory (``mypackage.envs:make_env``) to test
your agent in your world. See docs/pytest.md.
"""

from __future__ import annotations

import re

import pytest

COUNTER = "agentgauge.testing.worlds:make_counter_env"

TASKS = [
    {
        "id": "add-3",
        "environment": COUNTER,
        "instruction": "Please add 3",
        "expectations": {"final_state": {"counter": 3}},
    },
    {
        "id": "add-12",
        "environment": COUNTER,
        "instruction": "Add 12 to the counter",
        "expectations": {"final_state": {"counter": 12}},
    },
    {
        "id": "from-ten",
        "environment": COUNTER,
        "initial_state": {"counter": 10},
        "instruction": "The counter is at 10; add 5",
        "expectations": {"final_state": {"counter": 15}},
    },
    {
        "id": "add-250",
        "environment": COUNTER,
        "instruction": "Add 250 to the counter",
        "expectations": {"final_state": {"counter": 250}},
    },
]


def my_agent(session):
    """Stands in for your agent: reads the amount and adds it.

    Like a real model it is not perfectly reliable: it drops a digit of a large
    amount about one time in four (seeded by the trial, so reruns agree).
    """
    amount = int(re.findall(r"-?\d+", session.instruction)[-1])
    if amount > 100 and session.rng.random() < 0.25:
        amount //= 10
    session.call_tool("add", {"amount": amount})
    session.say(f"Added {amount}.")
    # Record what the model calls cost (here a made-up $0.001), or record_cost(0.0) for an
    # agent that is free: a cost nobody records is unknown, and a cost gate cannot pass.
    session.record_model_call(
        model="stand-in", input_tokens=200, output_tokens=20, cost_usd=0.001, latency_s=None
    )


def careless_agent(session):
    """A "new version" that adds the first number it reads: on a task that starts the
    counter elsewhere ("The counter is at 10; add 5") it adds the start instead."""
    amount = int(re.findall(r"-?\d+", session.instruction)[0])
    session.call_tool("add", {"amount": amount})


# A comparison needs more tasks than a threshold: a paired difference over fewer than
# 6 tasks cannot tell anything at 95%, and "not worse by more than 10 points" needs
# about 20 (with 4 the test below would fail even for an agent compared with itself).
REGRESSION_TASKS = (
    TASKS
    + [
        {
            "id": f"add-{n}",
            "environment": COUNTER,
            "instruction": f"Add {n} to the counter",
            "expectations": {"final_state": {"counter": n}},
        }
        for n in (1, 2, 4, 5, 7, 8, 9, 11, 20, 42)
    ]
    + [
        {
            "id": f"from-{start}",
            "environment": COUNTER,
            "initial_state": {"counter": start},
            "instruction": f"The counter is at {start}; add {n}",
            "expectations": {"final_state": {"counter": start + n}},
        }
        for start, n in ((1, 2), (7, 2), (20, 3), (50, 6), (99, 1), (30, 4))
    ]
)


# 1. Thresholds on the marker: checked on the result once the test body has run.
#    The gate is on the lower bound of the 95% CI, not on the point estimate.
@pytest.mark.agentgauge(trials=8, min_success_rate=0.5, bound="ci_lower", pass_hat_k={2: 0.6})
def test_agent_meets_the_bar(agentgauge_eval):
    agentgauge_eval.run(TASKS, my_agent)


# 2. The same checks written out, plus a cost ceiling; the result is yours to inspect.
def test_agent_checks(agentgauge_eval):
    result = agentgauge_eval.run(TASKS, my_agent, trials=8)
    group = result.metrics["groups"][0]
    assert group["n_tasks"] == 4
    result.check("success_rate", min=0.5, bound="ci_lower")
    result.check("pass_hat_k", k=2, min=0.6)
    result.check("cost.cost_of_pass", max=0.05)  # dollars per success


# 3. A regression test: the new version must not be worse than the current one by
#    more than 10 points (paired over the same 20 tasks). `careless_agent` fails the 7
#    tasks that start elsewhere, so this test is expected to fail; it shows what the
#    failure says. (`my_agent` against itself passes it.)
@pytest.mark.xfail(reason="careless_agent fails the from-* tasks: a real regression", strict=True)
def test_new_version_is_not_worse(agentgauge_eval):
    current = agentgauge_eval.run(REGRESSION_TASKS, my_agent, trials=4)
    candidate = agentgauge_eval.run(REGRESSION_TASKS, careless_agent, trials=4)
    candidate.assert_not_worse_than(current, margin=0.10)
