"""Rank agreement between pixel / perceptual metrics and object-level correctness.

A metric is worth trusting as a proxy for "the model got the objects right" when ranking the
predictions by it orders them like grid accuracy (GA) or object pixel accuracy (Obj-PPA) does.
Spearman's rho and Kendall's tau-b (which handles GA's many ties) measure that on per-sample
values. `agreement` orients the coefficient so that +1 always means "agrees with correctness",
whatever the metric's direction. `paired_sample_counts` asks the same of two models at once: on
each sample both predicted, does the metric pick the same winner as the reference? `run_samples`
reads those per-sample values from a run's evaluation (samples.parquet).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from vision_bench.errors import UserError
from vision_bench.evaluation.outputs import METRICS_FILE, SAMPLES_FILE, read_metrics, read_samples
from vision_bench.evaluation.run import OUTPUT_DIR


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


@dataclass(frozen=True)
class PairCounts:
    """Sample pairs of two models, one metric against one reference: what `paired_sample_counts` counts.

    `separated` pairs are those the reference orders (one model's sample scores higher); `agree` counts
    the ones the metric orders the same way, a metric tie as half (`metric_ties` says how many). Pairs
    the reference ties are left out of the share and counted in `reference_ties`.
    """

    agree: float = 0.0
    separated: int = 0
    metric_ties: int = 0
    reference_ties: int = 0

    def __add__(self, other: PairCounts) -> PairCounts:
        return PairCounts(self.agree + other.agree, self.separated + other.separated,
                          self.metric_ties + other.metric_ties, self.reference_ties + other.reference_ties)

    @property
    def agreement(self) -> float:
        """The share of reference-separated pairs the metric orders like the reference (NaN without any)."""
        return self.agree / self.separated if self.separated else float("nan")


def _order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """+1 where a > b, -1 where a < b, 0 on a tie; by comparison, so that inf against inf (PSNR of two perfect
    predictions) is a tie rather than NaN."""
    return (a > b).astype(np.int8) - (a < b).astype(np.int8)


def paired_sample_counts(
    metric: tuple[np.ndarray, np.ndarray], reference: tuple[np.ndarray, np.ndarray], *, lower_is_better: bool
) -> PairCounts:
    """How often `metric` orders model A's and model B's score on each sample as `reference` does.

    Each argument is (A's values, B's values), aligned by sample. Samples with a NaN on either side of
    either measure are left out; a sample the reference ties is counted in `reference_ties` only.
    """
    metric_a, metric_b = (np.asarray(v, dtype=np.float64) for v in metric)
    reference_a, reference_b = (np.asarray(v, dtype=np.float64) for v in reference)
    keep = ~(np.isnan(metric_a) | np.isnan(metric_b) | np.isnan(reference_a) | np.isnan(reference_b))
    reference_order = _order(reference_a[keep], reference_b[keep])
    metric_order = _order(metric_a[keep], metric_b[keep]) * (-1 if lower_is_better else 1)
    separated = reference_order != 0
    ties = int(np.sum(metric_order[separated] == 0))
    agree = int(np.sum(metric_order[separated] == reference_order[separated])) + 0.5 * ties
    return PairCounts(agree, int(separated.sum()), ties, int(np.sum(~separated)))


def evaluation_folder(run: str | Path) -> Path:
    """The folder holding samples.parquet: given directly, as the Parquet file, or as RUN_DIR."""
    path = Path(run)
    if path.is_file():
        return path.parent
    return path if (path / SAMPLES_FILE).is_file() else path / OUTPUT_DIR


def run_samples(run: str | Path) -> tuple[dict[str, np.ndarray], np.ndarray, str]:
    """Per-sample numeric columns and splits of the run's trained model (all rows without metrics.json)."""
    folder = evaluation_folder(run)
    table = read_samples(folder).to_pydict()
    main = read_metrics(folder).get("model") if (folder / METRICS_FILE).is_file() else None
    rows = np.array([main is None or predictor == main for predictor in table["predictor"]])
    if not rows.any():
        raise UserError(f"{folder}: no samples of the model {main!r}; evaluate the run again")
    numeric = {key: np.array(values, dtype=float)[rows] for key, values in table.items()
               if key not in ("predictor", "split", "task_key", "sequence")}
    return numeric, np.array(table["split"])[rows], main or "all predictors"
