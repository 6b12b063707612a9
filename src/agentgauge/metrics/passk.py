"""Unbiased pass@k and pass^k from n trials with c successes per task.

Both are per-task estimators; averages over tasks live in `outcome`. They take
scalars or numpy arrays (broadcast together) and return NaN where k > n: with
fewer than k trials the quantity is not estimable, and reporting 1.0 or raising
would both mislead (docs/metrics.md).

On arrays, each estimator is evaluated once per distinct (n, c) pair and the
values gathered back to the tasks (`_per_pair`): 100,000 tasks of one suite hold
a few dozen pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

import numpy as np
import numpy.typing as npt

__all__ = ["pass_at_k", "pass_hat_k"]

FloatArray = npt.NDArray[np.float64]


def _validate(
    n: npt.ArrayLike, c: npt.ArrayLike, k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    n_arr = np.asarray(n)
    c_arr = np.asarray(c)
    for name, arr in (("n", n_arr), ("c", c_arr)):
        if arr.dtype.kind not in "iub" and not (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
        ):
            raise ValueError(f"{name} must hold whole numbers")
    n_b, c_b = np.broadcast_arrays(
        n_arr.astype(np.int64, copy=False), c_arr.astype(np.int64, copy=False)
    )
    # c >= 0 and c <= n imply n >= 0.
    if n_b.size and (int(c_b.min()) < 0 or bool(np.any(c_b > n_b))):
        raise ValueError("need 0 <= c <= n")
    return n_b, c_b


_Formula = Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64], int], FloatArray]

# Below this many tasks the formula runs on the tasks themselves.
_FEW = 256


def _per_pair(
    formula: _Formula, n: npt.NDArray[np.int64], c: npt.NDArray[np.int64], k: int
) -> FloatArray | float:
    """``formula`` on flat arrays, evaluated once per distinct (n, c) pair and
    gathered back to every task: a suite has a handful of trial counts, so
    100,000 tasks hold a few dozen pairs. The values are the formula's own, so
    the result is the same as evaluating it task by task."""
    shape = n.shape
    n_i, c_i = n.ravel(), c.ravel()
    if n_i.size <= _FEW:
        out = formula(n_i, c_i, k)
    else:
        width = int(n_i.max()) + 1
        if width * width <= n_i.size:
            # Every pair with n < width, laid out as n * width + c (pairs with
            # c > n are computed too, and never gathered).
            grid = np.arange(width * width, dtype=np.int64)
            table = formula(grid // width, np.minimum(grid % width, grid // width), k)
            out = table[n_i * width + c_i]
        else:
            pairs, inverse = np.unique(np.stack([n_i, c_i]), axis=1, return_inverse=True)
            out = formula(pairs[0], pairs[1], k)[inverse.ravel()]
    result = out.reshape(shape)
    return float(result) if result.ndim == 0 else result


def _pass_at_k(n_i: npt.NDArray[np.int64], c_i: npt.NDArray[np.int64], k: int) -> FloatArray:
    out = np.full(n_i.size, np.nan)
    defined = k <= n_i
    out[defined & (n_i - c_i < k)] = 1.0
    need = defined & (n_i - c_i >= k)

    # Tasks with at most k successes: HumanEval's c factors, i = n, n−1, …, n−c+1,
    # taken as one array pass per factor position (a task with fewer factors gets 1s).
    few = np.flatnonzero(need & (c_i <= k))
    if few.size:
        n_few = n_i[few].astype(np.float64)
        c_few = c_i[few]
        prod = np.ones(few.size)
        with np.errstate(divide="ignore", invalid="ignore"):  # masked positions may hit n − j = 0
            for j in range(int(c_few.max(initial=0))):
                prod *= np.where(j < c_few, 1.0 - k / (n_few - j), 1.0)
        out[few] = 1.0 - prod

    # Tasks with more successes than k: the k-factor form, one array pass per factor.
    many = np.flatnonzero(need & (c_i > k))
    if many.size:
        fail = (n_i[many] - c_i[many]).astype(np.float64)
        tot = n_i[many].astype(np.float64)
        prod = np.ones(many.size)
        for j in range(k):
            prod *= (fail - j) / (tot - j)
        out[many] = 1.0 - prod
    return out


def _pass_hat_k(n_i: npt.NDArray[np.int64], c_i: npt.NDArray[np.int64], k: int) -> FloatArray:
    # C(c, k)/C(n, k) = ∏_{j<k} (c−j)/(n−j): 0 where c < k, NaN where k > n. The product
    # runs only over tasks with c >= k, so its k factors are bounded by the data, not by
    # a k the user typed (a k of 10**6 looped a million times over every task).
    out = np.where(k <= n_i, 0.0, np.nan)
    full = np.flatnonzero(c_i >= k)
    if full.size:
        n_f = n_i[full].astype(np.float64)
        c_f = c_i[full].astype(np.float64)
        prod = np.ones(full.size)
        for j in range(k):
            prod *= (c_f - j) / (n_f - j)
        out[full] = prod
    return out


@overload
def pass_at_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_at_k(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray | float: ...
def pass_at_k(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray | float:
    """Unbiased pass@k: the chance that at least one of k trials succeeds.

    pass@k = 1 − C(n−c, k)/C(n, k)   (Chen et al. 2021, "Evaluating Large
    Language Models Trained on Code", HumanEval, eq. 1), evaluated as in their
    numerically stable form

        pass@k = 1 − ∏_{i=n−c+1}^{n} (1 − k/i),

    and 1.0 when n − c < k (every k-subset holds a success). NaN where k > n.
    The product has c factors; where c > k the same ratio is taken as the
    k-factor product ∏_{j=0}^{k−1} (n−c−j)/(n−j) (both telescope to
    C(n−c, k)/C(n, k), and every factor of either lies in [0, 1], so neither
    overflows nor cancels). The plug-in 1 − (1 − c/n)^k is biased and is not
    what this returns. Scalar inputs give a float; arrays give an array of
    their broadcast shape.
    """
    return _per_pair(_pass_at_k, *_validate(n, c, k), k)


@overload
def pass_hat_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_hat_k(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray | float: ...
def pass_hat_k(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray | float:
    """Unbiased pass^k: the chance that all of k trials succeed.

    pass^k = C(c, k)/C(n, k)   (Yao et al. 2024, "τ-bench", §4), evaluated as the
    product of k factors each in [0, 1], so it neither overflows nor cancels:

        pass^k = ∏_{j=0}^{k−1} (c − j)/(n − j),

    which is 0 when c < k. NaN where k > n. The plug-in (c/n)^k is biased
    upwards for k ≥ 2 and is not what this returns (6 of 8: 20/56 ≈ 0.357, not
    0.75³ ≈ 0.42). Scalar inputs give a float; arrays give an array.
    """
    return _per_pair(_pass_hat_k, *_validate(n, c, k), k)
