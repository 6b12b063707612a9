"""The seed an ``http:`` agent's request carries (`TrialSession.request_seed`): the
first draw of the trial's generator, drawn without building it, and the generator
going on after it as before."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentgauge.harness.session import TrialSession
from agentgauge.schema import Task
from agentgauge.testing.worlds import make_counter_env

TASK = Task(id="t", instruction="add 1")
_R = random.Random(20261207)
SEEDS = [0, 1, 2, 2**31 - 2, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1, 2**64, 2**200 + 3]
SEEDS += [_R.getrandbits(63) for _ in range(2000)] + [
    _R.getrandbits(_R.randint(1, 160)) for _ in range(300)
]


def _session(seed: int) -> TrialSession:
    return TrialSession(TASK.id, make_counter_env(TASK, variant="base", seed=0), seed=seed)


def _draws(seed: int, n: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(rng.integers(0, 2**31 - 1)) for _ in range(n)]


def test_the_request_seed_is_the_generators_first_draw() -> None:
    wrong = [s for s in SEEDS if _session(s).request_seed() != _draws(s, 1)[0]]
    assert wrong == []


@pytest.mark.parametrize("seed", SEEDS[:12])
def test_the_generator_goes_on_after_the_request_seed(seed: int) -> None:
    first, second, third = _draws(seed, 3)
    session = _session(seed)
    assert session.request_seed() == first
    assert session.request_seed() == second  # a second one is the next draw
    assert int(session.rng.integers(0, 2**31 - 1)) == third
    session = _session(seed)
    assert session.request_seed() == first
    assert int(session.rng.integers(0, 2**31 - 1)) == second


def test_a_generator_in_use_gives_its_next_draw() -> None:
    session = _session(7)
    session.rng.integers(0, 10)
    expected = np.random.default_rng(7)
    expected.integers(0, 10)
    assert session.request_seed() == int(expected.integers(0, 2**31 - 1))
