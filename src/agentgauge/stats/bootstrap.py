"""Cluster bootstrap: resample families, then tasks within each sampled family.

The two-stage (hierarchical) bootstrap respects that tasks of one family share
their difficulty (Field & Welsh 2007, "Bootstrapping clustered data"; the
scheme METR uses for time horizons). All replicates are drawn at once with
numpy: no Python loop over replicates (only over memory-sized blocks of them).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["cluster_bootstrap_ci", "cluster_bootstrap_means"]

#: Most resampled tasks drawn in one block (bounds memory at a few tens of MB).
_BLOCK_DRAWS = 1 << 22
#: Padded draws are used while clusters × widest cluster ≤ this × tasks.
_PAD_WASTE = 4


def cluster_bootstrap_means(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> npt.NDArray[np.float64]:
    """Bootstrap replicates of the mean of task values under two-stage resampling.

    Each replicate draws C clusters with replacement from the C clusters, then,
    within each drawn cluster of size m, m tasks with replacement; the replicate
    is the mean over all drawn tasks (tasks weigh equally). With one task per
    cluster this is the ordinary bootstrap over tasks. Randomness comes from
    ``np.random.default_rng(seed)`` only, so results are reproducible.
    """
    v = np.asarray(values, dtype=np.float64)
    labels = np.asarray(clusters)
    if v.ndim != 1 or labels.shape != v.shape:
        raise ValueError("values and clusters must be 1-D arrays of equal length")
    if v.size == 0:
        raise ValueError("no values to resample")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.reshape(-1)
    order = np.argsort(codes, kind="stable")
    v_sorted = v[order]
    size = np.bincount(codes)
    start = np.cumsum(size) - size
    n_clusters = size.size

    rng = np.random.default_rng(seed)
    means = np.empty(n_boot, dtype=np.float64)
    widest = int(size.max())
    # Padded draws (a fixed grid of clusters × widest, masked) avoid ragged index building;
    # they waste little unless family sizes are very unequal, when ragged draws are used.
    padded = n_clusters * widest <= _PAD_WASTE * v.size
    per_rep_draws = n_clusters * widest if padded else v.size
    block = max(1, _BLOCK_DRAWS // max(1, per_rep_draws))
    for b0 in range(0, n_boot, block):
        nb = min(block, n_boot - b0)
        picked = rng.integers(0, n_clusters, size=(nb, n_clusters))
        m = size[picked]  # tasks to draw from each picked cluster, shape (nb, C)
        per_rep = m.sum(axis=1)
        if padded:
            m3 = m[:, :, None]
            # floor(u·m) is uniform on 0..m-1; the clip guards u·m rounding up to m.
            offset = (rng.random((nb, n_clusters, widest)) * m3).astype(np.intp)
            np.minimum(offset, m3 - 1, out=offset)
            offset += start[picked][:, :, None]
            drawn = v_sorted[offset]
            if widest > 1:
                drawn[np.arange(widest) >= m3] = 0.0  # slots beyond a cluster's size
            sums = drawn.reshape(nb, -1).sum(axis=1)
        else:
            flat = m.ravel()
            counts = np.repeat(flat, flat)
            offset = np.minimum((rng.random(counts.size) * counts).astype(np.intp), counts - 1)
            idx = np.repeat(start[picked].ravel(), flat) + offset
            rep = np.repeat(np.arange(nb), per_rep)
            sums = np.bincount(rep, weights=v_sorted[idx], minlength=nb)
        means[b0 : b0 + nb] = sums / per_rep
    return means


def cluster_bootstrap_ci(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of the two-stage cluster bootstrap of a mean.

    ``(q_{α/2}, q_{1−α/2})`` of `cluster_bootstrap_means` (Efron & Tibshirani
    1993, §13.3), with B = ``n_boot`` replicates (the success rate uses B = 2000
    and a fixed seed). A mean of values in [0, 1] gives an interval in [0, 1].
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    means = cluster_bootstrap_means(values, clusters, n_boot=n_boot, seed=seed)
    alpha = 1 - level
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)
