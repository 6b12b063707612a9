"""Predictability: does the agent's own confidence tell when it succeeds (Rabanser et al. 2026)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Predictability", "predictability"]


@dataclass(frozen=True)
class Predictability:
    """How well the agent's own confidence predicts its success."""

    calibration: float | None
    """1 − ECE (10 equal-width bins)."""
    ece: float | None
    auroc: float | None
    """P(confidence of a success > that of a failure), ties 0.5; ``None`` with one class."""
    brier_skill: float | None
    """1 − Brier score."""
    brier: float | None
    n_trials: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "calibration": self.calibration,
            "ece": self.ece,
            "auroc": self.auroc,
            "brier_skill": self.brier_skill,
            "brier": self.brier,
            "n_trials": self.n_trials,
            "reason": self.reason,
        }


def predictability(confidence: npt.ArrayLike, success: npt.ArrayLike) -> Predictability:
    """1 − ECE, AUROC and 1 − Brier from reported confidence.

    Trials without a confidence (NaN) are left out. ECE = Σ_b (n_b/N)·|acc_b − conf_b|
    over 10 equal-width bins [0, 0.1), …, [0.9, 1.0] (Guo et al. 2017; 1.0 falls
    in the last bin). AUROC by the Mann–Whitney statistic with average ranks, so
    a tie between a success and a failure counts 0.5 (Hanley & McNeil 1982).
    Brier = mean (confidence − outcome)² (Brier 1950).
    """
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(success, dtype=bool)
    if c.shape != y.shape or c.ndim != 1:
        raise ValueError("confidence and success must be 1-d arrays of equal length")
    has = np.isfinite(c)
    c, y = c[has], y[has]
    if np.any((c < 0) | (c > 1)):
        raise ValueError("confidence must lie in [0, 1]")
    n = c.size
    if n == 0:
        return Predictability(None, None, None, None, None, 0, "no trial reports a confidence")
    yf = y.astype(np.float64)
    bins = np.minimum((c * 10).astype(np.intp), 9)
    count = np.bincount(bins, minlength=10)
    gap = np.abs(np.bincount(bins, yf, 10) - np.bincount(bins, c, 10))  # n_b·|acc_b − conf_b|
    ece = float(gap[count > 0].sum() / n)
    brier = float(np.mean((c - yf) ** 2))
    n_pos = int(y.sum())
    n_neg = n - n_pos
    auroc: float | None = None
    if n_pos and n_neg:
        ranks = _average_ranks(c)  # ties count one half
        auroc = float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    why = None if auroc is not None else "AUROC needs both successes and failures"
    return Predictability(1 - ece, ece, auroc, 1 - brier, brier, n, why)


def _average_ranks(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1-based ranks of ``x``, tied values sharing the mean of their ranks (what
    ``scipy.stats.rankdata`` gives by default, without importing scipy.stats, half a
    second of the command's start): a group of k equal values ending at sorted
    position m holds ranks m − k + 1 … m, whose mean is m − (k − 1)/2."""
    _, group, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[group.reshape(-1)]
