"""Numerics of the time horizon: weights, a batched logistic fit, the
hierarchical bootstrap as multiplicity weights, and Ord's half-life model.

Everything here is a pure function over numpy arrays. The fits work on
*masses*: for each row (a run, or a cell of runs sharing one task length) the
weight on a success outcome (``pos``) and on a failure outcome (``neg``). A
fractional score s with weight w becomes ``pos = s·w`` and ``neg = (1 − s)·w``,
which is METR's split of a fractional row into a weighted 1-row and 0-row
(Kwa et al. 2025, METR/eval-analysis-public ``logistic_regression``), so binary
and fractional outcomes go through the same code.

Why batched: a bootstrap replicate only changes the masses (how often each run
was drawn), never the design. Expressing all B replicates as a (B, cells) mass
matrix lets one damped Newton iteration on the two parameters run for every
replicate at once, instead of B separate refits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "FLAT_TOL",
    "LogisticFit",
    "bootstrap_masses",
    "fit_half_life",
    "fit_logistic",
    "half_life_probability",
    "horizon_from_coefficients",
    "length_span",
    "logistic_loss",
    "metr_weights",
    "weighted_log_loss",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

#: Probabilities are clipped to [EPS, 1 − EPS] in log-losses (as METR's ``get_bce_loss``).
EPS = 1e-15

#: Log-odds closer than this are equal. A fit whose slope moves the log-odds by less
#: across the task lengths it holds is flat (`fit_logistic` returns slope 0), and a flat
#: fit whose intercept lies this close to logit(q) is a tie at q
#: (`horizon_from_coefficients`). Newton stops within rounding (1e-17 to 1e-33) of an
#: exactly flat optimum, and the sign of that noise must not decide whether a horizon is
#: 0 or unbounded.
FLAT_TOL = 1e-9


def metr_weights(task: IntArray, family: IntArray) -> FloatArray:
    """METR's per-run weights, normalised to sum to 1.

    w_i = 1 / (runs in task(i) · √(tasks in family(i))), then w / Σw
    (Kwa et al. 2025, "invsqrt_task_weight"; METR/eval-analysis-public
    ``compute_task_weights``). Each task gets equal total weight within its
    family, and a family of n tasks counts √n times a single-task family, so
    large families of near-duplicate tasks do not dominate the fit.

    ``task`` and ``family`` are integer codes per run; a task must belong to one
    family (the caller checks this).
    """
    task = np.asarray(task, dtype=np.intp)
    family = np.asarray(family, dtype=np.intp)
    if task.size == 0:
        return np.zeros(0)
    runs_in_task = np.bincount(task)[task]
    # Tasks per family: count distinct (family, task) pairs.
    first = np.unique(task, return_index=True)[1]
    tasks_in_family = np.bincount(family[first], minlength=int(family.max()) + 1)[family]
    w = 1.0 / (runs_in_task * np.sqrt(tasks_in_family))
    return np.asarray(w / w.sum(), dtype=np.float64)


# --------------------------------------------------------------------------- logistic


@dataclass(frozen=True)
class LogisticFit:
    """Coefficients of P(success) = σ(b0 + b1·x), one per replicate."""

    intercept: FloatArray
    """b0, shape (B,)."""
    slope: FloatArray
    """b1 (per doubling of task length when x = log2 minutes), shape (B,)."""
    converged: BoolArray
    """Newton's step fell below tolerance within the iteration cap."""
    degenerate: npt.NDArray[np.int8]
    """0: both outcomes present; +1: only successes (b0 → +∞); −1: only failures."""


def length_span(x: FloatArray, pos: FloatArray, neg: FloatArray) -> FloatArray:
    """Per replicate, max x − min x over the cells that carry mass (0 with one length,
    −∞ with no mass at all); ``pos`` and ``neg`` of shape (J,) or (B, J)."""
    x = np.asarray(x, dtype=np.float64)
    held = np.atleast_2d(np.asarray(pos, dtype=np.float64) + np.asarray(neg, dtype=np.float64)) > 0
    if x.size == 0:
        return np.full(held.shape[0], -np.inf)
    top = np.where(held, x, -np.inf).max(axis=1)
    bottom = np.where(held, x, np.inf).min(axis=1)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.where(held.any(axis=1), top - bottom, -np.inf), dtype=np.float64)


def logistic_loss(
    x: FloatArray, pos: FloatArray, neg: FloatArray, b0: FloatArray, b1: FloatArray, c: float
) -> FloatArray:
    """Penalised weighted negative log-likelihood per replicate.

    L = Σ_j [pos_j·softplus(−η_j) + neg_j·softplus(η_j)] + ½·b1²/C, η_j = b0 + b1·x_j.
    This is scikit-learn's L2 logistic objective divided by C, with the intercept
    unpenalised (``LogisticRegression(C=C)`` with lbfgs).
    """
    eta = b0[:, None] + b1[:, None] * x[None, :]
    # pos·softplus(−η) + neg·softplus(η) = (pos + neg)·softplus(η) − pos·η: one log per cell.
    nll = (pos + neg) * _softplus(eta) - pos * eta
    return np.asarray(nll.sum(axis=1) + 0.5 * b1**2 / c, dtype=np.float64)


def _softplus(eta: FloatArray) -> FloatArray:
    # ln(1 + e^η) = max(η, 0) + ln(1 + e^−|η|): no overflow, and several times
    # faster than np.logaddexp, which matters inside the bootstrap.
    return np.asarray(np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta))), dtype=np.float64)


@dataclass
class _State:
    """Loss, gradient and Hessian of `logistic_loss` at (a, b) for a set of replicates."""

    loss: FloatArray
    g0: FloatArray
    g1: FloatArray
    h00: FloatArray
    h01: FloatArray
    h11: FloatArray


def _evaluate(
    xc: FloatArray, pos: FloatArray, neg: FloatArray, a: FloatArray, b: FloatArray, c: float
) -> _State:
    eta = a[:, None] + b[:, None] * xc[None, :]
    e = np.exp(-np.abs(eta))
    mass = pos + neg
    loss = (mass * (np.maximum(eta, 0.0) + np.log1p(e)) - pos * eta).sum(axis=1) + 0.5 * b**2 / c
    prob = np.where(eta >= 0, 1.0, e) / (1.0 + e)  # σ(η), stable on both sides
    resid = mass * prob - pos
    hw = mass * prob * (1.0 - prob)
    return _State(
        loss=loss,
        g0=resid.sum(axis=1),
        g1=resid @ xc + b / c,
        h00=hw.sum(axis=1),
        h01=hw @ xc,
        h11=hw @ (xc * xc) + 1.0 / c,
    )


def _take(st: _State, rows: npt.NDArray[np.intp]) -> _State:
    return _State(*(getattr(st, f)[rows] for f in ("loss", "g0", "g1", "h00", "h01", "h11")))


def _put(st: _State, rows: npt.NDArray[np.intp], new: _State) -> None:
    for f in ("loss", "g0", "g1", "h00", "h01", "h11"):
        getattr(st, f)[rows] = getattr(new, f)


def fit_logistic(
    x: FloatArray,
    pos: FloatArray,
    neg: FloatArray,
    *,
    regularization: float = 1e5,
    init: tuple[float, float] | None = None,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LogisticFit:
    """Weighted L2-penalised logistic regression of outcome on x, for B mass vectors at once.

    Minimises `logistic_loss` (penalty ½·b1²/C on the slope only; docs/horizon.md,
    "Regularisation") by damped Newton: the gradient and the 2×2 Hessian are sums over cells, the
    step is solved in closed form, and a replicate whose loss would rise halves
    its step. x is centred internally for conditioning (b1 is unchanged, b0 is
    shifted back).

    Args:
        x: covariate per cell, shape (J,) (log2 human minutes).
        pos, neg: success and failure masses, shape (J,) or (B, J), non-negative.
        regularization: C; larger means weaker penalty.
        init: starting (b0, b1); default logit of the mean outcome and slope 0.

    Replicates with no success mass (or no failure mass) have no finite optimum
    for b0; they are returned with ``degenerate`` set and b0 = ∓∞, b1 = 0. A slope
    that moves the log-odds by less than `FLAT_TOL` across the lengths a replicate
    holds is returned as exactly 0 (rounding noise of a flat optimum).
    """
    x = np.asarray(x, dtype=np.float64)
    pos = np.atleast_2d(np.asarray(pos, dtype=np.float64))
    neg = np.atleast_2d(np.asarray(neg, dtype=np.float64))
    n_rep = pos.shape[0]
    c = float(regularization)
    centre = float(np.average(x)) if x.size else 0.0
    xc = x - centre
    tot_pos = pos.sum(axis=1)
    tot_neg = neg.sum(axis=1)
    degenerate = np.where(tot_pos <= 0, -1, np.where(tot_neg <= 0, 1, 0)).astype(np.int8)
    live = degenerate == 0

    b1 = np.zeros(n_rep)
    if init is not None:
        b1[:] = init[1]
        a = np.full(n_rep, init[0] + init[1] * centre)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.log(tot_pos / tot_neg)
    a = np.where(live, a, 0.0)
    converged = ~live

    # Blocks of replicates keep the temporaries (block × cells) in cache; within a
    # block every replicate still advances in the same array operations.
    live_rows = np.flatnonzero(live)
    for lo in range(0, live_rows.size, _BLOCK):
        rows = live_rows[lo : lo + _BLOCK]
        a[rows], b1[rows], converged[rows] = _newton(
            xc, pos[rows], neg[rows], a[rows], b1[rows], c, max_iter, tol
        )
    # Where the data have no slope, Newton leaves b1 = ±1e-17..1e-33, and its sign would
    # make a horizon 0 or ∞ (`horizon_from_coefficients`): such a fit is flat.
    with np.errstate(invalid="ignore"):  # 0 · −∞ for a row with no mass (already 0)
        b1 = np.where(np.abs(b1) * length_span(x, pos, neg) < FLAT_TOL, 0.0, b1)
    b0 = a - b1 * centre
    b0 = np.where(degenerate == 1, np.inf, np.where(degenerate == -1, -np.inf, b0))
    return LogisticFit(intercept=b0, slope=b1, converged=converged, degenerate=degenerate)


#: Replicates per block in `fit_logistic` (256 × ~100 cells × 8 bytes ≈ 200 kB per temporary).
_BLOCK = 256


def _newton(
    xc: FloatArray,
    pos: FloatArray,
    neg: FloatArray,
    a: FloatArray,
    b1: FloatArray,
    c: float,
    max_iter: int,
    tol: float,
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Damped Newton on (a, b1) for a block of replicates, all with both outcomes present."""
    a, b1 = a.copy(), b1.copy()
    conv = np.zeros(a.size, dtype=bool)
    # Work only on replicates still moving: most converge in a few steps, and the
    # stragglers (nearly separable resamples) should not make every row iterate.
    act = np.arange(a.size)
    st = _evaluate(xc, pos[act], neg[act], a[act], b1[act], c)
    for _ in range(max_iter):
        if act.size == 0:
            break
        det = st.h00 * st.h11 - st.h01 * st.h01
        with np.errstate(divide="ignore", invalid="ignore"):
            s0 = (st.h11 * st.g0 - st.h01 * st.g1) / det
            s1 = (st.h00 * st.g1 - st.h01 * st.g0) / det
        bad = ~np.isfinite(s0) | ~np.isfinite(s1)
        # A singular Hessian (e.g. all mass saturated) falls back to a gradient step.
        s0 = np.where(bad, st.g0, s0)
        s1 = np.where(bad, st.g1, s1)
        p_, n_, a_, b_ = pos[act], neg[act], a[act], b1[act]
        step = np.ones(act.size)
        new_a, new_b = a_ - s0, b_ - s1
        new = _evaluate(xc, p_, n_, new_a, new_b, c)
        for _halving in range(40):
            # Damping: a replicate whose loss would rise halves its step (rare for
            # logistic losses; it guards nearly separable resamples).
            worse = np.flatnonzero(new.loss > st.loss + 1e-12 * (1.0 + np.abs(st.loss)))
            if worse.size == 0:
                break
            step[worse] *= 0.5
            new_a[worse] = a_[worse] - step[worse] * s0[worse]
            new_b[worse] = b_[worse] - step[worse] * s1[worse]
            _put(new, worse, _evaluate(xc, p_[worse], n_[worse], new_a[worse], new_b[worse], c))
        moved = np.maximum(np.abs(step * s0), np.abs(step * s1))
        a[act], b1[act] = new_a, new_b
        done = moved < tol * (1.0 + np.maximum(np.abs(new_a), np.abs(new_b)))
        conv[act[done]] = True
        keep = np.flatnonzero(~done)
        act, st = act[keep], _take(new, keep)
    return a, b1, conv


def horizon_from_coefficients(b0: FloatArray, b1: FloatArray, q: float) -> FloatArray:
    """Task length (minutes) at which predicted success equals q.

    h_q = 2^((ln(q/(1−q)) − b0)/b1) (Kwa et al. 2025, eq. for the p-horizon),
    since the fit is on log2 minutes. Limits: b0 = +∞ (only successes) gives ∞,
    b0 = −∞ (only failures) gives 0; b1 = 0 gives ∞ when σ(b0) > q, 0 when
    σ(b0) < q, and NaN (undefined) when σ(b0) = q (b0 within `FLAT_TOL` of
    logit q): the predicted success is q at every length, so no length is *the* one.
    """
    b0 = np.asarray(b0, dtype=np.float64)
    b1 = np.asarray(b1, dtype=np.float64)
    logit = float(np.log(q / (1.0 - q)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log2h = (logit - b0) / b1
        flat = (b1 == 0) | ~np.isfinite(b0)
        tie = np.abs(b0 - logit) <= FLAT_TOL
        limit = np.where(tie, np.nan, np.where(b0 > logit, np.inf, -np.inf))
        log2h = np.where(flat, limit, log2h)
        return np.asarray(np.exp2(log2h), dtype=np.float64)


# --------------------------------------------------------------------------- bootstrap


def _draw_within(
    rng: np.random.Generator,
    counts: npt.NDArray[np.int64],
    start: IntArray,
    size: IntArray,
) -> tuple[IntArray, IntArray]:
    """For each (replicate b, group g), draw ``counts[b, g]`` members uniformly with
    replacement from the ``size[g]`` members starting at ``start[g]`` (used for
    tasks within families, where the draws are few).

    Returns one entry per draw: its replicate and the member drawn."""
    n_groups = counts.shape[1]
    cell = np.repeat(np.arange(counts.size), counts.ravel())
    g = cell % n_groups
    member = start[g] + np.floor(rng.random(cell.size) * size[g]).astype(np.intp)
    return (cell // n_groups).astype(np.intp), member


def _starts(sizes: IntArray) -> IntArray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)


def bootstrap_masses(
    rng: np.random.Generator,
    n_boot: int,
    family_of_task: IntArray,
    task_of_run: IntArray,
    cell_of_run: IntArray,
    n_cells: int,
    pos: FloatArray,
    neg: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Hierarchical bootstrap (families → tasks → runs) as per-cell masses.

    Scheme (METR/eval-analysis-public ``bootstrap_sample``, categories f, t, r):
    draw F families with replacement; for each drawn copy of a family of n
    tasks, draw n tasks with replacement; for a task drawn M times in total,
    draw M·r runs with replacement from its r runs. A run drawn m times keeps
    its full-data weight and counts m times (weights are not renormalised, as
    in METR's pipeline). Returns ``(pos, neg)`` masses per replicate and cell,
    shape (B, n_cells): Σ over runs in the cell of m·pos_run and m·neg_run.

    Tasks must be coded 0..T−1 in family order (each family's tasks contiguous)
    and cells numbered in task order (each task's cells contiguous). Drawing n
    tasks for each of K copies of a family is the same distribution as drawing
    K·n tasks from it at once, so each level is one vectorised draw over all
    replicates.
    """
    family_of_task = np.asarray(family_of_task, dtype=np.intp)
    task_of_run = np.asarray(task_of_run, dtype=np.intp)
    cell_of_run = np.asarray(cell_of_run, dtype=np.intp)
    n_fam = int(family_of_task.max()) + 1
    n_task = family_of_task.size
    # Level 1: families.
    fam_draw = rng.integers(0, n_fam, size=(n_boot, n_fam))
    fam_key = (np.arange(n_boot)[:, None] * n_fam + fam_draw).ravel()
    fam_count = np.bincount(fam_key, minlength=n_boot * n_fam).reshape(n_boot, n_fam)
    # Level 2: tasks within each drawn family copy.
    tasks_per_fam = np.bincount(family_of_task, minlength=n_fam).astype(np.intp)
    rep, task = _draw_within(rng, fam_count * tasks_per_fam, _starts(tasks_per_fam), tasks_per_fam)
    task_count = np.bincount(rep * n_task + task, minlength=n_boot * n_task)
    task_count = task_count.reshape(n_boot, n_task)
    # Level 3: runs within each drawn task. A task drawn M times contributes M·r
    # draws from its r runs; only how many land in each class of interchangeable
    # runs (same cell, same masses) matters, and those counts are multinomial. A
    # multinomial is a chain of binomials (count of class j given what is left),
    # so one binomial draw per class position covers every replicate and task.
    runs_per_task = np.bincount(task_of_run, minlength=n_task).astype(np.intp)
    keys = np.stack([cell_of_run.astype(np.float64), pos, neg], axis=1)
    classes, class_size = np.unique(keys, axis=0, return_counts=True)
    class_cell = classes[:, 0].astype(np.intp)
    cell_task = np.zeros(n_cells, dtype=np.intp)
    cell_task[cell_of_run] = task_of_run
    class_task = cell_task[class_cell]
    # Position of each class among its task's classes (classes are sorted by cell,
    # hence by task).
    first = np.searchsorted(class_task, class_task, side="left")
    position = np.arange(class_task.size) - first
    depth = int(position.max()) + 1
    size = np.zeros((depth, n_task))
    cell_at = np.full((depth, n_task), n_cells, dtype=np.intp)  # n_cells: padding column
    pos_at = np.zeros((depth, n_task))
    neg_at = np.zeros((depth, n_task))
    size[position, class_task] = class_size
    cell_at[position, class_task] = class_cell
    pos_at[position, class_task] = classes[:, 1]
    neg_at[position, class_task] = classes[:, 2]
    left = task_count * runs_per_task  # draws still to place, (B, T)
    runs_left = runs_per_task.astype(np.float64)
    out_pos = np.zeros((n_boot, n_cells + 1))
    out_neg = np.zeros((n_boot, n_cells + 1))
    for j in range(depth):
        with np.errstate(divide="ignore", invalid="ignore"):
            prob = np.where(runs_left > 0, size[j] / runs_left, 0.0)
        # Only classes that share their task with runs still unplaced need a draw;
        # a task's last class takes what is left, an empty slot takes nothing.
        prob = np.clip(prob, 0.0, 1.0)
        count = np.where(prob >= 1.0, left, 0)
        mixed = np.flatnonzero((prob > 0.0) & (prob < 1.0))
        if mixed.size:
            count[:, mixed] = rng.binomial(left[:, mixed], prob[mixed])
        left = left - count
        runs_left = runs_left - size[j]
        # Within one position j every task's class sits in a different cell, so
        # the fancy-index update has no repeated real columns.
        out_pos[:, cell_at[j]] += count * pos_at[j]
        out_neg[:, cell_at[j]] += count * neg_at[j]
    return out_pos[:, :n_cells], out_neg[:, :n_cells]


# --------------------------------------------------------------------------- losses, Ord


def weighted_log_loss(prob: FloatArray, pos: FloatArray, neg: FloatArray) -> float:
    """Mean log-loss per unit weight: −Σ[pos·ln p + neg·ln(1−p)] / Σ(pos + neg).

    With fractional outcomes split into masses, this is the weighted binary
    cross-entropy METR reports as ``bce_loss`` (up to their mean-weight scaling).
    """
    p = np.clip(np.asarray(prob, dtype=np.float64), EPS, 1.0 - EPS)
    total = float(np.sum(pos) + np.sum(neg))
    if total <= 0:
        return float("nan")
    return float(-(np.sum(pos * np.log(p)) + np.sum(neg * np.log1p(-p))) / total)


def half_life_probability(minutes: FloatArray, t_half: float) -> FloatArray:
    """Ord's constant-hazard survival: S(t) = 2^(−t/T_half)."""
    return np.asarray(np.exp2(-np.asarray(minutes, dtype=np.float64) / t_half), dtype=np.float64)


def fit_half_life(minutes: FloatArray, pos: FloatArray, neg: FloatArray) -> float:
    """Weighted maximum-likelihood half-life T_half (minutes) of S(t) = 2^(−t/T_half).

    Toby Ord (2025), "Is there a half-life for the success rates of AI agents?":
    a constant per-minute hazard λ = ln 2 / T_half makes success decay
    exponentially in task length. We maximise Σ pos·ln S(t) + neg·ln(1 − S(t))
    over ln T_half (one dimension, bounded Brent search). With no failures the
    likelihood rises forever (T_half = ∞); with no successes T_half = 0.
    """
    t = np.asarray(minutes, dtype=np.float64)
    pos = np.asarray(pos, dtype=np.float64)
    neg = np.asarray(neg, dtype=np.float64)
    if np.sum(neg) <= 0:
        return float("inf")
    if np.sum(pos) <= 0:
        return 0.0

    has_pos, has_neg = pos > 0, neg > 0
    log_rate0 = np.log(t) + np.log(np.log(2.0))

    def nll(log_t: float) -> float:
        # −ln S(t) = t·ln 2 / T_half, in logs: finite task lengths near the largest
        # float (1e308 minutes) overflowed it to ∞ and 0·∞ made the loss NaN. A rate of
        # ∞ where a run succeeded is a loss of ∞ (S = 0), which the search steps away
        # from; where only failures are, it costs nothing.
        with np.errstate(over="ignore"):
            rate = np.exp(log_rate0 - log_t)
        # ln(1 − S) = ln(−expm1(−rate)), stable for small rates.
        return float(
            np.sum(pos[has_pos] * rate[has_pos])
            - np.sum(neg[has_neg] * np.log(-np.expm1(-np.maximum(rate[has_neg], 1e-300))))
        )

    # Imported here: scipy.optimize takes a seventh of a second to import, and only this
    # fit (the half-life model's) uses it; every command that reads metrics imports this.
    from scipy.optimize import minimize_scalar

    lo = float(np.log(t.min())) - 25.0
    hi = float(np.log(t.max())) + 25.0
    res = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    return float(np.exp(res.x))
