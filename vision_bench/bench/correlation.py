"""Rank agreement between pixel / perceptual metrics and object-level correctness.

A metric is worth trusting as a proxy for "the model got the objects right" when ranking the
predictions by it orders them like grid accuracy (GA) or object pixel accuracy (Obj-PPA) does.
Spearman's rho and Kendall's tau-b (which handles GA's many ties) measure that on per-sample
values. `agreement` orients the coefficient so that +1 always means "agrees with correctness",
whatever the metric's direction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class RankCorrelation:
    """One metric against one correctness measure on one split."""

    split: str
    metric: str
    reference: str
    n: int
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float
    agreement: float
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def rank_correlation(
    values: np.ndarray,
    reference: np.ndarray,
    *,
    split: str,
    metric: str,
    reference_name: str,
    lower_is_better: bool,
) -> RankCorrelation:
    """Spearman and Kendall coefficients of `values` against `reference` over finite pairs.

    Constant inputs have no ranking: the coefficients are NaN and `note` says which side was
    constant, so a table can show why rather than a bare NaN.
    """
    values = np.asarray(values, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    keep = np.isfinite(values) & np.isfinite(reference)
    values, reference = values[keep], reference[keep]
    n = int(values.size)
    note = ""
    if n < 3:
        note = f"only {n} finite samples"
    elif np.ptp(values) == 0:
        note = f"{metric} is constant"
    elif np.ptp(reference) == 0:
        note = f"{reference_name} is constant"
    if note:
        nan = float("nan")
        return RankCorrelation(split, metric, reference_name, n, nan, nan, nan, nan, nan, note)
    spearman = stats.spearmanr(values, reference)
    kendall = stats.kendalltau(values, reference)
    sign = -1.0 if lower_is_better else 1.0
    return RankCorrelation(
        split,
        metric,
        reference_name,
        n,
        float(spearman.statistic),
        float(spearman.pvalue),
        float(kendall.statistic),
        float(kendall.pvalue),
        sign * float(spearman.statistic),
    )
