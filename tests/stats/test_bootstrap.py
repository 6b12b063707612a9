from __future__ import annotations

import numpy as np
import pytest

from agentgauge.stats import cluster_bootstrap_ci, cluster_bootstrap_means, se_mean


def test_two_stage_moments_match_exact_enumeration() -> None:
    # Clusters A = [0, 1], B = [1]. Draw 2 clusters: AA, AB, BA, BB each 1/4.
    #  AA: 4 tasks from A -> mean Bin(4,.5)/4: E .5,  E[m²] = .25 + 1/16 = .3125
    #  AB: 2 from A + the 1 -> (Bin(2,.5)+1)/3: E 2/3, E[m²] = (.25/9 + .5·4/9 + .25) = .5
    #  BB: mean 1: E[m²] = 1
    #  E[m] = .25·.5 + .5·2/3 + .25·1 = .7083333
    #  E[m²] = .25·.3125 + .5·.5 + .25 = .578125 -> Var = .578125 - .7083333² = .0763889
    # (resampling clusters only would give Var = .0329861: the second stage is visible.)
    means = cluster_bootstrap_means([0, 1, 1], ["A", "A", "B"], n_boot=200_000, seed=3)
    assert means.mean() == pytest.approx(0.7083333, abs=0.004)
    assert means.var() == pytest.approx(0.0763889, rel=0.03)


def test_singleton_clusters_are_the_task_bootstrap() -> None:
    # Ordinary bootstrap of a mean: Var* = (T-1)/T · se².
    rng = np.random.default_rng(0)
    v = rng.random(50)
    means = cluster_bootstrap_means(v, np.arange(50), n_boot=20_000, seed=1)
    assert means.std() == pytest.approx(se_mean(v) * np.sqrt(49 / 50), rel=0.03)


def test_seeded_and_reproducible() -> None:
    v = np.linspace(0, 1, 30)
    fam = np.arange(30) // 3
    assert cluster_bootstrap_ci(v, fam, seed=5) == cluster_bootstrap_ci(v, fam, seed=5)
    assert cluster_bootstrap_ci(v, fam, seed=5) != cluster_bootstrap_ci(v, fam, seed=6)


def test_interval_contains_mean_and_stays_in_unit_interval() -> None:
    v = np.array([1.0, 1, 1, 0.75, 1, 1, 0.5, 1])
    lo, hi = cluster_bootstrap_ci(v, np.arange(8) // 2)
    assert 0 <= lo <= v.mean() <= hi <= 1


def test_constant_values_give_degenerate_interval() -> None:
    assert cluster_bootstrap_ci([0.4] * 6, [0, 0, 1, 1, 2, 2]) == pytest.approx((0.4, 0.4))


def test_blocks_do_not_change_result_shape() -> None:
    # More tasks than one block of draws holds still yields n_boot replicates.
    v = np.random.default_rng(2).random(5000)
    means = cluster_bootstrap_means(v, np.arange(5000) // 50, n_boot=1000, seed=0)
    assert means.shape == (1000,) and np.all((means >= 0) & (means <= 1))


def test_inputs_not_mutated_and_validated() -> None:
    v = np.array([0.3, 0.1, 0.9])
    c = np.array([1, 0, 1])
    cluster_bootstrap_ci(v, c, n_boot=10)
    assert v.tolist() == [0.3, 0.1, 0.9] and c.tolist() == [1, 0, 1]
    with pytest.raises(ValueError):
        cluster_bootstrap_means([], [])
    with pytest.raises(ValueError):
        cluster_bootstrap_means([0.1], [0, 1])


@pytest.mark.parametrize("sizes", [[40, *[1] * 20], [3, 3, 5, 1, 2]])
def test_padded_and_ragged_draws_agree(sizes: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # The two ways of drawing tasks within clusters sample the same distribution.
    from agentgauge.stats import bootstrap

    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    v = rng.random(clusters.size)
    monkeypatch.setattr(bootstrap, "_PAD_WASTE", 10**9)
    padded = cluster_bootstrap_means(v, clusters, n_boot=40_000, seed=1)
    monkeypatch.setattr(bootstrap, "_PAD_WASTE", 0)
    ragged = cluster_bootstrap_means(v, clusters, n_boot=40_000, seed=2)
    assert padded.mean() == pytest.approx(ragged.mean(), abs=4 * padded.std() / 200)
    assert padded.var() == pytest.approx(ragged.var(), rel=0.05)
