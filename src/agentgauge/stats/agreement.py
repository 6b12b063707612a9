"""Agreement between raters: Cohen's κ, raw agreement, Krippendorff's α.

Pure numerics over numpy arrays. Labels are small non-negative integer codes
(e.g. 0 = fail, 1 = pass); *missing* (a rater gave no label, or said
``unknown``) is a negative code in the κ functions and ``NaN`` in
`krippendorff_alpha_nominal`. Inputs are validated once here and never mutated.

Undefined values are ``None``-like ``nan`` at this level (κ when both raters
used a single and the same category: p_e = 1, 0/0; κ from fewer than two items);
callers turn them into JSON ``null`` with a reason rather than guessing 0 or 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "KappaResult",
    "cohens_kappa",
    "cohens_kappa_table",
    "confusion_table",
    "krippendorff_alpha_nominal",
    "raw_agreement",
    "unknown_share",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _codes(x: npt.ArrayLike, name: str) -> IntArray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer label codes, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=True)


def _pair(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    ca, cb = _codes(a, "a"), _codes(b, "b")
    if ca.shape != cb.shape:
        raise ValueError(f"a and b must have the same length, got {ca.size} and {cb.size}")
    return ca, cb


def confusion_table(a: npt.ArrayLike, b: npt.ArrayLike, n_labels: int | None = None) -> IntArray:
    """Counts ``table[i, j]`` = items rated ``i`` by rater a and ``j`` by rater b.

    Items where either rater is missing (negative code) are left out.
    ``n_labels`` fixes the table's size (default: the largest code + 1), so that
    categories nobody used still appear as empty rows and columns.
    """
    ca, cb = _pair(a, b)
    keep = (ca >= 0) & (cb >= 0)
    ca, cb = ca[keep], cb[keep]
    size = (
        n_labels if n_labels is not None else int(max(ca.max(initial=-1), cb.max(initial=-1))) + 1
    )
    if ca.size and max(int(ca.max()), int(cb.max())) >= size:
        raise ValueError(f"a label code is >= n_labels={size}")
    flat = np.bincount(ca * size + cb, minlength=size * size)
    return flat.reshape(size, size).astype(np.int64)


def _kappa_from_tables(tables: FloatArray) -> FloatArray:
    # tables: (..., L, L). Vectorised so the bootstrap computes every replicate at once.
    n = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = tables / n[..., None, None]
        po = np.trace(p, axis1=-2, axis2=-1)
        pe = (p.sum(axis=-1) * p.sum(axis=-2)).sum(axis=-1)
        kappa = (po - pe) / (1.0 - pe)
    # p_e = 1 (one shared category): κ is 0/0, undefined. One item is no sample either:
    # a single disagreement gives p_o = p_e = 0, a κ of 0 that measures nothing.
    undefined = (n < 2) | np.isclose(pe, 1.0, rtol=0.0, atol=1e-12)
    return np.where(undefined, np.nan, kappa)


def cohens_kappa_table(table: npt.ArrayLike) -> float:
    """Cohen's κ from an L×L confusion table (Cohen 1960).

    κ = (p_o − p_e) / (1 − p_e), with p_o = Σ_i n_ii / n the observed agreement
    and p_e = Σ_i (n_i· / n)(n_·i / n) the agreement expected by chance from
    the two raters' marginal distributions.

    Returns ``nan`` when κ is undefined: p_e = 1 (both raters used one and the
    same category), or fewer than two items (one disagreeing item gives
    p_o = p_e = 0, a κ of 0 from no sample). Otherwise agrees with
    ``statsmodels.stats.inter_rater.cohens_kappa(table).kappa`` (unweighted),
    which returns 0 for that single item.

    Cohen, J. (1960). A coefficient of agreement for nominal scales.
    *Educational and Psychological Measurement*, 20(1), 37–46.
    """
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"table must be square, got shape {t.shape}")
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("table must hold finite non-negative counts")
    return float(_kappa_from_tables(t))


def raw_agreement(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Share of items (both raters decided) on which the raters agree: Σ_i n_ii / n.

    ``nan`` when no item has both labels.
    """
    ca, cb = _pair(a, b)
    keep = (ca >= 0) & (cb >= 0)
    if not keep.any():
        return float("nan")
    return float(np.mean(ca[keep] == cb[keep]))


def unknown_share(labels: npt.ArrayLike) -> float:
    """Share of labels that are missing/unknown (negative codes); ``nan`` for no labels."""
    codes = _codes(labels, "labels")
    if codes.size == 0:
        return float("nan")
    return float(np.mean(codes < 0))


@dataclass(frozen=True)
class KappaResult:
    """Cohen's κ between two raters with its bootstrap interval."""

    kappa: float
    """Point estimate on all items both raters decided; ``nan`` when undefined (p_e = 1,
    or fewer than two items)."""
    ci95: tuple[float, float]
    """Percentile bootstrap interval (items resampled); ``nan`` bounds when undefined."""
    raw_agreement: float
    """p_o: share of decided items with the same label."""
    expected_agreement: float
    """p_e: chance agreement from the marginals."""
    n: int
    """Items both raters decided (the κ's sample)."""
    table: IntArray
    """The L×L confusion table (rows rater a, columns rater b)."""
    n_boot: int
    """Bootstrap replicates drawn."""
    n_boot_undefined: int
    """Replicates where κ was undefined (p_e = 1), left out of the percentiles."""
    seed: int
    """Seed of the bootstrap's generator."""


def cohens_kappa(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    n_labels: int | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> KappaResult:
    """Cohen's κ between label vectors ``a`` and ``b`` with a seeded bootstrap CI.

    Items where either label is missing (negative code) are dropped first; κ
    is then `cohens_kappa_table` of their confusion table. The interval is the
    percentile bootstrap (Efron & Tibshirani 1993, ch. 13): resample the n
    items with replacement ``n_boot`` times, recompute κ on each replicate's
    table, take the (1 − level)/2 and (1 + level)/2 quantiles. Replicates with
    an undefined κ (every resampled item in one shared category) are left out
    and counted. Resampling items treats them as independent; labels of the
    same task are not, so with many labels per task the interval is too narrow.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    ca, cb = _pair(a, b)
    keep = (ca >= 0) & (cb >= 0)
    ca, cb = ca[keep], cb[keep]
    table = confusion_table(ca, cb, n_labels)
    size = table.shape[0]
    t = table.astype(np.float64)
    n = int(ca.size)
    kappa = float(_kappa_from_tables(t))
    if n:
        p = t / n
        po = float(np.trace(p))
        pe = float((p.sum(axis=1) * p.sum(axis=0)).sum())
    else:
        po = pe = float("nan")
    lo = hi = float("nan")
    undefined = 0
    if n and n_boot:
        rng = np.random.default_rng(seed)
        cells = ca * size + cb
        idx = rng.integers(0, n, size=(n_boot, n))
        # One bincount over offset cell codes builds every replicate's table at once.
        offsets = (np.arange(n_boot) * size * size)[:, None]
        flat = np.bincount((cells[idx] + offsets).ravel(), minlength=n_boot * size * size)
        boot = _kappa_from_tables(flat.reshape(n_boot, size, size).astype(np.float64))
        ok = boot[np.isfinite(boot)]
        undefined = int(n_boot - ok.size)
        if ok.size:
            q = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2])
            lo, hi = float(q[0]), float(q[1])
    return KappaResult(
        kappa=kappa,
        ci95=(lo, hi),
        raw_agreement=po,
        expected_agreement=pe,
        n=n,
        table=table,
        n_boot=n_boot,
        n_boot_undefined=undefined,
        seed=seed,
    )


def krippendorff_alpha_nominal(data: npt.ArrayLike) -> float:
    """Krippendorff's α for nominal data, any number of raters, missing values allowed.

    ``data`` is a (raters × units) array of category codes with ``NaN`` where a
    rater gave no (or an ``unknown``) label. Units with fewer than two labels
    are not pairable and drop out. With m_u labels in unit u and n_uc of them
    equal to c, the coincidence matrix is

        o_ck = Σ_u (n_uc · n_uk − [c = k] · n_uc) / (m_u − 1),

    n_c = Σ_k o_ck, n = Σ_c n_c (the pairable values), and for the nominal
    metric (δ = 1 when c ≠ k)

        α = 1 − D_o / D_e = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c · n_k.

    Returns ``nan`` when α is undefined: fewer than two pairable units (with one,
    the observed and the expected disagreement are the same pairs, so α is 0 or
    0/0 whatever the raters do), or every pairable value in one category
    (D_e = 0). α = 1 is perfect agreement, 0 is chance; it can be negative
    (systematic disagreement).

    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability.
    Annenberg School for Communication, University of Pennsylvania; and
    Krippendorff, K. (2004). *Content Analysis*, 2nd ed., ch. 11.
    """
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"data must be (raters × units), got shape {x.shape}")
    present = ~np.isnan(x)
    values = x[present]
    if values.size and (np.any(values < 0) or np.any(values != np.round(values))):
        raise ValueError("category codes must be non-negative integers (NaN for missing)")
    m = present.sum(axis=0)
    pairable = m >= 2
    if np.count_nonzero(pairable) < 2:
        return float("nan")
    cats = np.unique(values).astype(np.int64)
    # counts[u, c]: how many raters put unit u in category c (pairable units only).
    xs = x[:, pairable]
    counts = np.stack([(xs == c).sum(axis=0) for c in cats], axis=1).astype(np.float64)
    mu = m[pairable].astype(np.float64)
    o = np.einsum("uc,uk->ck", counts / (mu - 1)[:, None], counts)
    o -= np.diag((counts / (mu - 1)[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = n * n - np.sum(n_c * n_c)
    if expected <= 0:
        return float("nan")
    return float(1.0 - (n - 1.0) * observed / expected)
