"""From evaluated cells to the numbers of a report: mean +- SEM over seeds and experiments.

A *cell* is one predictor on one experiment with one seed (baselines: one per experiment). Its
evaluation `metrics.json` gives one aggregate per split and metric. For every (predictor,
setting) the ID value, the OOD value and their generalization gap are averaged over the cells of
that setting; the gap is formed per cell first (COGITAO's Delta = ID - OOD, SVIB's
log MSE_OOD - log MSE_ID) so its SEM reflects the spread of gaps, not of the two sides.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vision_bench.metrics import METRICS, MeanSem, generalization_gap, mean_sem


@dataclass(frozen=True)
class CellResult:
    """One evaluated cell: split -> metric -> aggregate value, plus where it came from."""

    predictor: str
    experiment: str
    setting: str
    seed: int | None
    baseline: bool
    splits: dict[str, dict[str, float]]
    run_dir: Path | None = None
    alpha: float | None = None
    status: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    """The model name the evaluation used (its sheets folder), when the report label differs."""


@dataclass(frozen=True)
class Summary:
    """ID, OOD and gap of one metric for one (predictor, setting), each as mean +- SEM."""

    id: MeanSem
    ood: MeanSem
    gap: MeanSem

    @property
    def cells(self) -> int:
        return max(self.id.n, self.ood.n)


def id_ood(splits: Sequence[str]) -> tuple[str, str | None]:
    """The evaluated split a report reads as ID (the first `*_id`, else the first) and as OOD (the first `*_ood`
    other than that one; None when the study has none, as Sample-Efficiency's: no OOD column then)."""
    id_split = next((s for s in splits if s.endswith("_id")), splits[0])
    return id_split, next((s for s in splits if s.endswith("_ood") and s != id_split), None)


def _value(cell: CellResult, split: str | None, metric: str) -> float:
    if split is None:
        return float("nan")
    value = cell.splits.get(split, {}).get(metric)
    return float("nan") if value is None else float(value)


def _gap(metric: str, id_value: float, ood_value: float) -> float:
    if METRICS[metric].gap is None or not (math.isfinite(id_value) and math.isfinite(ood_value)):
        return float("nan")
    return generalization_gap(metric, id_value, ood_value)


def summarize_cells(
    cells: Iterable[CellResult], metric: str, *, id_split: str = "test_id", ood_split: str | None = "test_ood"
) -> dict[tuple[str, str], Summary]:
    """(predictor, setting) -> `Summary` of `metric` over the matching cells."""
    groups: dict[tuple[str, str], list[CellResult]] = {}
    for cell in cells:
        groups.setdefault((cell.predictor, cell.setting), []).append(cell)
    summaries = {}
    for key, members in groups.items():
        ids = [_value(c, id_split, metric) for c in members]
        oods = [_value(c, ood_split, metric) for c in members]
        summaries[key] = Summary(mean_sem(ids), mean_sem(oods), mean_sem(_gap(metric, i, o) for i, o in zip(ids, oods)))
    return summaries


def summarize_alpha(
    cells: Iterable[CellResult], metric: str, splits: Sequence[str]
) -> dict[str, dict[str, dict[float, MeanSem]]]:
    """predictor -> split -> alpha -> mean +- SEM of `metric` over cells with that alpha rating."""
    values: dict[str, dict[str, dict[float, list[float]]]] = {}
    for cell in cells:
        if cell.alpha is None:
            continue
        for split in splits:
            values.setdefault(cell.predictor, {}).setdefault(split, {}).setdefault(cell.alpha, []).append(
                _value(cell, split, metric)
            )
    return {
        predictor: {
            split: {alpha: mean_sem(v) for alpha, v in by_alpha.items()} for split, by_alpha in by_split.items()
        }
        for predictor, by_split in values.items()
    }


def predictors_in_order(cells: Iterable[CellResult]) -> list[str]:
    """Trained models first (in the order met), then baselines (in the order met)."""
    cells = list(cells)
    models = list(dict.fromkeys(c.predictor for c in cells if not c.baseline))
    baselines = list(dict.fromkeys(c.predictor for c in cells if c.baseline))
    return models + baselines


def metric_available(cells: Iterable[CellResult], metric: str) -> bool:
    """True when some cell holds a finite value of `metric` on some split."""
    return any(
        math.isfinite(_value(cell, split, metric)) for cell in cells for split in cell.splits
    )
