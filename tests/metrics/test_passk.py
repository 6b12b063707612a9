from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge import pass_at_k, pass_hat_k


def exact_pass_at_k(n: int, c: int, k: int) -> float:
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def exact_pass_hat_k(n: int, c: int, k: int) -> float:
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def test_six_of_eight_is_not_the_plug_in() -> None:
    # pass^3 = C(6,3)/C(8,3) = 20/56 = 0.3571 (the plug-in .75³ = .4219 is biased upwards)
    assert pass_hat_k(8, 6, 3) == pytest.approx(20 / 56)
    assert pass_hat_k(8, 6, 3) != pytest.approx(0.75**3, abs=0.01)
    # pass@3: only 2 failures, so every 3-subset holds a success -> 1
    assert pass_at_k(8, 6, 3) == 1.0


def test_product_form_by_hand() -> None:
    # n=10, c=2, k=3: 1 - (1 - 3/9)(1 - 3/10) = 1 - (6/9)(7/10) = 1 - 42/90 = 0.5333
    # = 1 - C(8,3)/C(10,3) = 1 - 56/120
    assert pass_at_k(10, 2, 3) == pytest.approx(1 - 42 / 90)
    # pass^2 with 3 of 4: C(3,2)/C(4,2) = 3/6
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)
    # no successes: pass@k = 0; all successes: pass^k = 1
    assert pass_at_k(5, 0, 2) == 0.0
    assert pass_hat_k(5, 5, 5) == 1.0
    # k = 1 is the success rate for both
    assert pass_at_k(7, 3, 1) == pytest.approx(3 / 7) == pass_hat_k(7, 3, 1)


def test_seventy_five_percent_task_approaches_closed_forms() -> None:
    # A task with true rate .75: pass@3 -> 1 - .25³ = .984375, pass^3 -> .75³ = .421875.
    # n=4, c=3:  pass^3 = C(3,3)/C(4,3) = 1/4; pass@3 = 1 (n - c = 1 < 3)
    # n=40, c=30: pass^3 = 30·29·28/(40·39·38) = 24360/59280 = .410931
    #             pass@3 = 1 - 10·9·8/59280 = 1 - 720/59280 = .987854
    assert pass_hat_k(4, 3, 3) == pytest.approx(0.25)
    assert pass_hat_k(40, 30, 3) == pytest.approx(24360 / 59280)
    assert pass_at_k(40, 30, 3) == pytest.approx(1 - 720 / 59280)
    gaps_hat, gaps_at = [], []
    for n in (4, 40, 400, 4000, 40000):
        c = 3 * n // 4
        gaps_hat.append(abs(pass_hat_k(n, c, 3) - 0.75**3))
        gaps_at.append(abs(pass_at_k(n, c, 3) - (1 - 0.25**3)))
    assert gaps_hat == sorted(gaps_hat, reverse=True) and gaps_hat[-1] < 1e-4
    assert gaps_at == sorted(gaps_at, reverse=True) and gaps_at[-1] < 1e-4


def test_k_above_n_is_nan_not_one_or_error() -> None:
    assert math.isnan(pass_at_k(3, 3, 4))
    assert math.isnan(pass_hat_k(3, 3, 4))
    assert math.isnan(pass_at_k(0, 0, 1))
    out = pass_hat_k(np.array([2, 5]), np.array([2, 4]), 3)
    assert isinstance(out, np.ndarray)
    assert math.isnan(out[0]) and out[1] == pytest.approx(4 * 3 * 2 / (5 * 4 * 3))


def test_arrays_match_scalars_and_broadcast() -> None:
    n = np.array([[4, 10], [8, 1]])
    c = np.array([[1, 7], [6, 1]])
    at = pass_at_k(n, c, 2)
    hat = pass_hat_k(n, c, 2)
    assert isinstance(at, np.ndarray) and at.shape == (2, 2)
    assert isinstance(hat, np.ndarray) and hat.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            ni, ci = int(n[i, j]), int(c[i, j])
            a, h = pass_at_k(ni, ci, 2), pass_hat_k(ni, ci, 2)
            assert (math.isnan(at[i, j]) and math.isnan(a)) or at[i, j] == pytest.approx(a)
            assert (math.isnan(hat[i, j]) and math.isnan(h)) or hat[i, j] == pytest.approx(h)
    # a scalar n broadcasts against an array of c
    assert pass_hat_k(10, np.array([0, 5, 10]), 2).tolist() == pytest.approx([0, 20 / 90, 1])


def test_inputs_not_mutated() -> None:
    n, c = np.array([5, 6]), np.array([2, 6])
    pass_at_k(n, c, 2)
    pass_hat_k(n, c, 2)
    assert n.tolist() == [5, 6] and c.tolist() == [2, 6]


def test_large_n_is_stable() -> None:
    # C(10000, 100) overflows floats; the product forms do not.
    assert pass_at_k(10_000, 5_000, 100) == pytest.approx(exact_pass_at_k(10_000, 5_000, 100))
    assert pass_hat_k(10_000, 9_990, 100) == pytest.approx(
        exact_pass_hat_k(10_000, 9_990, 100), rel=1e-12
    )


@pytest.mark.parametrize(
    ("n", "c", "k"), [(-1, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 1.5), (2.5, 1, 1)]
)
def test_rejects_invalid(n: float, c: int, k: float) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)  # type: ignore[arg-type]


counts = st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@settings(max_examples=300)
@given(counts, st.integers(1, 60))
def test_matches_exact_combinatorics(nc: tuple[int, int], k: int) -> None:
    n, c = nc
    if k > n:
        assert math.isnan(pass_at_k(n, c, k)) and math.isnan(pass_hat_k(n, c, k))
        return
    assert pass_at_k(n, c, k) == pytest.approx(exact_pass_at_k(n, c, k), abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(exact_pass_hat_k(n, c, k), abs=1e-12)


@settings(max_examples=300)
@given(counts)
def test_ordering_and_monotonicity(nc: tuple[int, int]) -> None:
    # 0 <= pass^k <= pass^1 <= pass@k <= 1; pass^k non-increasing, pass@k non-decreasing in k
    n, c = nc
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    eps = 1e-12
    for h, a in zip(hats, ats, strict=True):
        assert -eps <= h <= hats[0] + eps <= a + 2 * eps <= 1 + 3 * eps
    assert all(x >= y - eps for x, y in itertools.pairwise(hats))
    assert all(x <= y + eps for x, y in itertools.pairwise(ats))


@settings(max_examples=100)
@given(st.lists(counts, min_size=1, max_size=30), st.integers(1, 8))
def test_vectorised_equals_elementwise(pairs: list[tuple[int, int]], k: int) -> None:
    n = np.array([p[0] for p in pairs])
    c = np.array([p[1] for p in pairs])
    at = np.asarray(pass_at_k(n, c, k))
    hat = np.asarray(pass_hat_k(n, c, k))
    ref_at = [pass_at_k(int(a), int(b), k) for a, b in pairs]
    ref_hat = [pass_hat_k(int(a), int(b), k) for a, b in pairs]
    np.testing.assert_allclose(at, ref_at, rtol=0, atol=1e-12)
    np.testing.assert_allclose(hat, ref_hat, rtol=0, atol=1e-12)


def test_mixed_tasks_raise_no_numpy_warnings() -> None:
    # n=3, c=0 sits beside n=10, c=4: the masked factor for the first would divide by 0.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pass_at_k(np.array([3, 10, 2]), np.array([0, 4, 1]), 3)
    assert isinstance(out, np.ndarray)
    # 0 successes -> 0; 1 - C(6,3)/C(10,3) = 1 - 20/120; k=3 > n=2 -> NaN
    assert out[0] == 0.0 and out[1] == pytest.approx(1 - 20 / 120) and math.isnan(out[2])


@pytest.mark.parametrize(
    "n_max", [10, 2_000], ids=["grid of every pair (few trial counts)", "distinct pairs only"]
)
def test_many_tasks_gather_the_per_pair_values(n_max: int) -> None:
    # Above a few hundred tasks the estimators are evaluated once per distinct
    # (n, c) pair and gathered: on a dense grid of all pairs when n is small
    # next to the task count, else on the distinct pairs. Either way each task
    # gets exactly (bit for bit) what the scalar call gives for its pair.
    rng = np.random.default_rng(7)
    n = rng.integers(1, n_max + 1, 5_000)
    c = rng.binomial(n, rng.random(n.size))
    n[:3], c[:3] = (n_max, n_max, 1), (0, n_max, 1)  # the grid's corners, and n = 1
    for k in (1, 3, 8):
        at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
        assert isinstance(at, np.ndarray) and isinstance(hat, np.ndarray)
        for i in [*rng.choice(n.size, 300, replace=False).tolist(), 0, 1, 2]:
            a, h = pass_at_k(int(n[i]), int(c[i]), k), pass_hat_k(int(n[i]), int(c[i]), k)
            assert (math.isnan(a) and math.isnan(at[i])) or at[i] == a
            assert (math.isnan(h) and math.isnan(hat[i])) or hat[i] == h
        assert bool(np.isnan(at[n < k]).all()) and bool(np.isnan(hat[n < k]).all())


def test_many_tasks_keep_the_input_shape() -> None:
    n = np.full((40, 25), 6)
    c = np.tile(np.arange(7), 1000)[:1000].reshape(40, 25)
    out = pass_hat_k(n, c, 2)
    assert isinstance(out, np.ndarray) and out.shape == (40, 25)
    # C(c, 2) / C(6, 2) = c (c - 1) / 30 for the top-left task's c = 0, and c = 4 -> 12/30
    assert out[0, 0] == 0.0 and out[0, 4] == pytest.approx(12 / 30)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("k", [10**6, 10**9, 10**23])
def test_a_huge_k_is_undefined_at_once(k: int) -> None:
    # The product used to run k factors over every task whatever the data: k = 10**6
    # took 14 s, and `metrics --k 99999999999999999999999` never finished. Only tasks
    # with c >= k need the product, so the work is bounded by the trials, not by k.
    n, c = np.array([3, 10, 10]), np.array([1, 10, 0])
    assert np.isnan(pass_hat_k(n, c, k)).all()
    assert np.isnan(pass_at_k(n, c, k)).all()
    assert math.isnan(pass_hat_k(3, 3, k))


def test_pass_hat_k_is_zero_below_k_successes_and_exact_above() -> None:
    # 0 where c < k <= n; the product where c >= k; NaN where k > n.
    out = pass_hat_k(np.array([10, 10, 10, 2]), np.array([2, 3, 10, 2]), 3)
    assert out[0] == 0.0
    assert out[1] == pytest.approx(exact_pass_hat_k(10, 3, 3))  # 1/120
    assert out[2] == 1.0
    assert math.isnan(out[3])
