"""Standard errors of a mean over tasks, plain and clustered.

Tasks are the independent units of an evaluation: the trials of one task share
its difficulty, so they are not independent draws (Miller 2024, "Adding Error
Bars to Evals", arXiv:2411.00640). Both functions take one value per task.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["cluster_codes", "cluster_correlation", "se_clustered", "se_mean"]

ArrayLike = npt.ArrayLike


def _values(values: ArrayLike) -> npt.NDArray[np.float64]:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"expected one value per task (a 1-D array), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("task values must be finite")
    return v


def _dot(a: npt.NDArray[np.number], b: npt.NDArray[np.number]) -> float:
    """Σ a_i·b_i by numpy's own pairwise sum of the products, not the BLAS dot: OpenBLAS
    wakes its worker threads for each dot, which between other work costs milliseconds
    a call on a busy machine (a million trials' metrics took twice as long), and its
    result may depend on the thread count and the processor's kernel."""
    return float(np.multiply(a, b).sum())


def cluster_codes(labels: ArrayLike) -> tuple[npt.NDArray[np.intp], int]:
    """Non-negative integer codes for cluster labels, and the number of distinct labels.

    Small non-negative integer labels (codes already) are used as they are, so
    codes may have gaps; anything else is coded with ``np.unique``.
    """
    arr = np.asarray(labels)
    if arr.dtype.kind in "iu" and arr.size and arr.min() >= 0 and arr.max() < 4 * arr.size + 16:
        codes = arr.reshape(-1).astype(np.intp, copy=False)
        return codes, int(np.count_nonzero(np.bincount(codes)))
    uniques, inverse = np.unique(arr, return_inverse=True)
    return inverse.reshape(-1).astype(np.intp), int(uniques.size)


def se_mean(values: ArrayLike) -> float:
    """Standard error of the mean of task values.

    SE = sd(x, ddof=1) / √T over the T task values (Miller 2024, eq. 1
    with tasks as the sampling unit). NaN when T < 2: one task says nothing
    about the spread.
    """
    v = _values(values)
    if v.size < 2:
        return float("nan")
    resid = v - v.mean()
    # Values equal in exact arithmetic (a shift of 1/3 made as 2/3 − 1/3 and as 1/3 − 0)
    # differ by round-off, which would give an SE of ~1e-17: a near-zero-width interval
    # instead of the "no spread" every display and interval rule treats as such.
    scale = float(np.abs(v).max(initial=0.0))
    resid[np.abs(resid) <= 64 * np.finfo(float).eps * scale] = 0.0
    return float(np.sqrt(_dot(resid, resid) / (v.size - 1)) / np.sqrt(v.size))


def se_clustered(values: ArrayLike, clusters: ArrayLike) -> float:
    """Cluster-robust standard error of the mean of task values.

    With e_t = x_t − x̄ and C clusters (task families),

        SE = √( C/(C−1) · Σ_c (Σ_{t∈c} e_t)² ) / T,

    Miller's clustered form (Miller 2024, §2.2; the Liang–Zeger sandwich for an
    intercept-only regression with the small-sample factor C/(C−1), which is
    what statsmodels' ``cov_type="cluster"`` computes for one regressor).
    ``clusters`` holds one label per task (any hashable values or integer
    codes). NaN when C < 2: one cluster cannot estimate between-cluster spread.
    With every task in its own cluster it equals `se_mean`.
    """
    v = _values(values)
    labels = np.asarray(clusters)
    if labels.shape != v.shape:
        raise ValueError(f"clusters has shape {labels.shape}, values {v.shape}")
    codes, n_clusters = cluster_codes(labels)
    if n_clusters < 2:
        return float("nan")
    resid = v - v.mean()
    sums = np.bincount(codes, weights=resid)  # labels not present contribute 0
    # A family whose tasks average exactly the overall mean sums to 0 in exact
    # arithmetic but to ~1e-17 in floating point; such round-off would print as an SE
    # of "0.0" that is not 0 and hide that there is no spread between families.
    scale = float(np.abs(v).max(initial=0.0)) * np.bincount(codes).max(initial=1)
    sums[np.abs(sums) <= 64 * np.finfo(float).eps * scale] = 0.0
    meat = _dot(sums, sums)
    return float(np.sqrt(n_clusters / (n_clusters - 1) * meat) / v.size)


def cluster_correlation(
    x: ArrayLike, y: ArrayLike, clusters: ArrayLike, *, corrected: bool = False
) -> float:
    """Correlation of the means of two task-value arrays under cluster sampling.

    The clustered covariance over the product of the clustered SEs, with the same
    sums as `se_clustered` (the C/(C−1) factors cancel):

        r = Σ_c (Σ_{t∈c} e_t)(Σ_{t∈c} f_t) / √( Σ_c (Σ e_t)² · Σ_c (Σ f_t)² ),

    e = x − x̄, f = y − ȳ. With every task its own cluster it is Pearson's r of
    x and y. 0 when either mean has no spread to correlate (an SE of 0).

    ``corrected``: Newcombe's (1998) correction of φ for his paired interval (method
    10, "Improved confidence intervals for the difference between binomial
    proportions based on paired data"): a positive cross sum S = Σ_c E_c F_c is
    reduced by 1/2, and to 0 when it is at most 1/2; a negative one is kept. With
    one trial per task and every task its own cluster, S = (AD − BC)/N and this is
    his max(AD − BC − N/2, 0) exactly. Without it, a few tasks whose rates happen
    to move together give r = 1 and a MOVER interval of zero width, although the
    two runs' trials are independent draws.
    """
    vx, vy = _values(x), _values(y)
    labels = np.asarray(clusters)
    if vx.shape != vy.shape or labels.shape != vx.shape:
        raise ValueError("x, y and clusters need one entry per task")
    codes, _ = cluster_codes(labels)
    ex = np.bincount(codes, weights=vx - vx.mean())
    ey = np.bincount(codes, weights=vy - vy.mean())
    den = float(np.sqrt(_dot(ex, ex) * _dot(ey, ey)))
    cross = _dot(ex, ey)
    if corrected and cross > 0:
        cross = max(cross - 0.5, 0.0)
    # Rounding can push |r| a hair past 1 when the two arrays are proportional.
    return 0.0 if den == 0 else float(np.clip(cross / den, -1.0, 1.0))
