"""From evaluated cells to the numbers of a report: mean +- SEM over the seeds of one task, never across tasks.

A *cell* is one predictor on one experiment with one seed (baselines: one per experiment). Its
evaluation `metrics.json` gives one aggregate per split and metric. Per (predictor, experiment) the
ID value, the OOD value and their generalization gap are mean +- SEM over that experiment's seeds
(`summarize_experiments`). Per (predictor, setting) the value is the mean over the setting's
experiments of each one's seed mean, and its +- the SEM over seeds of each seed's mean over those
experiments (`summarize_cells`): an SEM over experiments would measure how the tasks differ, not how
reliable the number is. The gap is formed per cell first (COGITAO's Delta = ID - OOD, SVIB's
log MSE_OOD - log MSE_ID) so its SEM reflects the spread of gaps, not of the two sides.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
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
    """ID, OOD and gap of one metric for one (predictor, experiment) or (predictor, setting), each as mean +- SEM."""

    id: MeanSem
    ood: MeanSem
    gap: MeanSem


Runs = dict[int | None, tuple[float, float, float]]
"""Seed -> (ID, OOD, gap) of one predictor's cells on one experiment."""


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


def _runs(cells: Iterable[CellResult], metric: str, id_split: str, ood_split: str | None
          ) -> dict[tuple[str, str, str], Runs]:
    """(predictor, setting, experiment) -> its cells' values by seed; the gap is formed per cell."""
    runs: dict[tuple[str, str, str], Runs] = {}
    for cell in cells:
        id_value, ood_value = _value(cell, id_split, metric), _value(cell, ood_split, metric)
        runs.setdefault((cell.predictor, cell.setting, cell.experiment), {})[cell.seed] = (
            id_value, ood_value, _gap(metric, id_value, ood_value))
    return runs


def over_experiments(experiments: Sequence[dict[int | None, float]]) -> MeanSem:
    """One value (seed -> value per experiment) over a setting's experiments: the mean of each experiment's seed
    mean, +- the SEM over seeds of each seed's mean over the experiments; `n` counts those seeds. An experiment
    without a finite value (not run, every run gated out, the metric not computed there) makes the mean NaN: a
    setting's number never silently covers part of its experiments. The +- needs every experiment to have finite
    values for the same seeds (NaN otherwise, with `n` 0). With one experiment this is `mean_sem` over its seeds."""
    finite = [{seed: v for seed, v in runs.items() if math.isfinite(v)} for runs in experiments]
    if not finite or not all(finite):
        return MeanSem(float("nan"), float("nan"), 0)
    mean = sum(mean_sem(runs.values()).mean for runs in finite) / len(finite)
    if len({frozenset(runs) for runs in finite}) != 1:
        return MeanSem(mean, float("nan"), 0)
    per_seed = mean_sem(sum(runs[seed] for runs in finite) / len(finite) for seed in finite[0])
    return MeanSem(mean, per_seed.sem, per_seed.n)


def _summary(experiments: Sequence[Runs]) -> Summary:
    """ID, OOD and gap over `experiments` (one predictor's, of one setting), each by `over_experiments`."""
    sides = [over_experiments([{seed: values[side] for seed, values in runs.items()} for runs in experiments])
             for side in range(3)]
    return Summary(*sides)


def summarize_experiments(
    cells: Iterable[CellResult], metric: str, *, id_split: str = "test_id", ood_split: str | None = "test_ood"
) -> dict[tuple[str, str], Summary]:
    """(predictor, experiment) -> `Summary` of `metric` over that experiment's seeds (a baseline's one cell:
    no SEM)."""
    return {(predictor, experiment): _summary([runs])
            for (predictor, _, experiment), runs in _runs(cells, metric, id_split, ood_split).items()}


def summarize_cells(
    cells: Iterable[CellResult], metric: str, *, id_split: str = "test_id", ood_split: str | None = "test_ood",
    experiments: Mapping[str, Sequence[str]] | None = None,
) -> dict[tuple[str, str], Summary]:
    """(predictor, setting) -> `Summary` of `metric` over the setting's experiments (`over_experiments`): never an
    SEM across experiments. `experiments` (setting -> its experiments; default: those the cells hold) is what a
    setting covers: pass the bench's, before any gate, so that a predictor missing from one of them gets no
    number for the setting rather than the mean of the rest."""
    cells = list(cells)
    covered = experiments_by_setting(cells) if experiments is None else experiments
    runs = _runs(cells, metric, id_split, ood_split)
    predictors = dict.fromkeys((cell.predictor, cell.setting) for cell in cells)
    return {(predictor, setting): _summary([runs.get((predictor, setting, e), {}) for e in covered[setting]])
            for predictor, setting in predictors}


def experiments_by_setting(cells: Iterable[CellResult]) -> dict[str, list[str]]:
    """Setting -> its experiments, both in the order met."""
    settings: dict[str, dict[str, None]] = {}
    for cell in cells:
        settings.setdefault(cell.setting, {})[cell.experiment] = None
    return {setting: list(experiments) for setting, experiments in settings.items()}


def summarize_alpha(
    cells: Iterable[CellResult], metric: str, splits: Sequence[str]
) -> dict[str, dict[str, dict[float, MeanSem]]]:
    """predictor -> split -> alpha -> mean +- SEM of `metric` over cells with that alpha rating. Give it one
    sweep's cells (`summary.alpha_series`): there one alpha is one experiment, so the SEM is over its seeds."""
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
