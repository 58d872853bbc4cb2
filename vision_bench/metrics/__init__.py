"""Pixel, perceptual and object-aware metrics, batched in torch, with ID/OOD generalization gaps.

`METRICS` lists every metric (name, direction, description, batched function, labels and the
tables that list it: `listed_in`); `@metric(...)` registers one;
`compute_metrics` scores one batch, `summarize` aggregates per-sample values, `aggregate_gaps`
turns per-run ID/OOD aggregates into mean +- SEM gaps.
"""

from vision_bench.metrics import error_taxonomy, factors  # noqa: F401  (they register the error_* and factor_* metrics)
from vision_bench.metrics.compute import MetricValues, compute_metrics, summarize
from vision_bench.metrics.decoding import decode_predictions
from vision_bench.metrics.differentiable import LpipsLoss, ssim_differentiable
from vision_bench.metrics.gaps import MeanSem, aggregate_gaps, generalization_gap, mean_sem
from vision_bench.metrics.inputs import MetricInputError
from vision_bench.metrics.perceptual import LpipsLoad, LpipsScorer, load_lpips, lpips_distance, lpips_status
from vision_bench.metrics.pixel import PIXEL_TOLERANCE, PSNR_CAP_DB
from vision_bench.metrics.registry import (
    METRICS,
    Listing,
    MetricInputs,
    MetricSpec,
    label,
    listed_in,
    metric,
    short_label,
)

__all__ = [
    "METRICS",
    "PIXEL_TOLERANCE",
    "PSNR_CAP_DB",
    "Listing",
    "LpipsLoad",
    "LpipsLoss",
    "LpipsScorer",
    "MeanSem",
    "MetricInputError",
    "MetricInputs",
    "MetricSpec",
    "MetricValues",
    "aggregate_gaps",
    "compute_metrics",
    "decode_predictions",
    "generalization_gap",
    "label",
    "listed_in",
    "load_lpips",
    "lpips_distance",
    "lpips_status",
    "mean_sem",
    "metric",
    "short_label",
    "ssim_differentiable",
    "summarize",
]
