"""Generalization gaps between in-distribution (ID) and out-of-distribution (OOD) results.

Per run (one seed of one experiment) the gap of a metric is
- ID - OOD for accuracies and other higher-is-better metrics (percentage points for percent
  metrics, since runs record the aggregates of `summarize`);
- log(OOD) - log(ID) for error metrics (SVIB's log-MSE gap), NaN when either value is not
  positive (a perfect ID error has no finite log ratio).
Gaps are then averaged over runs with the standard error of the mean (sample standard deviation
/ sqrt(n)); non-finite gaps are left out and `n` says how many runs counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vision_bench.metrics.inputs import MetricInputError
from vision_bench.metrics.registry import METRICS


@dataclass(frozen=True)
class MeanSem:
    """Mean, standard error of the mean (NaN for fewer than two values) and count of finite values."""

    mean: float
    sem: float
    n: int


def mean_sem(values: Iterable[float]) -> MeanSem:
    """Mean and standard error of the finite values."""
    finite = [float(v) for v in values if math.isfinite(v)]
    n = len(finite)
    if n == 0:
        return MeanSem(float("nan"), float("nan"), 0)
    mean = sum(finite) / n
    if n == 1:
        return MeanSem(mean, float("nan"), 1)
    variance = sum((v - mean) ** 2 for v in finite) / (n - 1)
    return MeanSem(mean, math.sqrt(variance / n), n)


def generalization_gap(name: str, id_value: float, ood_value: float) -> float:
    """The ID/OOD gap of one metric for one run (see the module docstring)."""
    spec = METRICS[name]
    if spec.gap == "difference":
        return float(id_value) - float(ood_value)
    if spec.gap == "log_ratio":
        if id_value > 0 and ood_value > 0:
            return math.log(ood_value) - math.log(id_value)
        return float("nan")
    raise MetricInputError(f"metric {name!r} has no ID/OOD gap; it is reported on one split only")


def aggregate_gaps(records: Sequence[Mapping[str, Mapping[str, float]]],
                   names: Sequence[str] | None = None) -> dict[str, MeanSem]:
    """Mean and SEM of the gap per metric over runs.

    Each record holds the aggregates of one run: {"id": {metric: value}, "ood": {metric: value}}
    (other keys, such as "experiment" or "seed", are ignored). Without `names`, every metric with
    a gap that all records report on both splits is aggregated.
    """
    for index, record in enumerate(records):
        if not isinstance(record.get("id"), Mapping) or not isinstance(record.get("ood"), Mapping):
            raise MetricInputError(f"run record {index} needs 'id' and 'ood' mappings of metric -> value")
    if names is None:
        names = [
            name for name, spec in METRICS.items()
            if spec.gap is not None and records and all(name in r["id"] and name in r["ood"] for r in records)
        ]
    gaps = {}
    for name in names:
        missing = [i for i, r in enumerate(records) if name not in r["id"] or name not in r["ood"]]
        if missing:
            raise MetricInputError(f"metric {name!r} is missing from run record(s) {missing}; record both splits")
        gaps[name] = mean_sem(generalization_gap(name, r["id"][name], r["ood"][name]) for r in records)
    return gaps
