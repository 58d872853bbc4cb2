"""Score one predictor on one split: every metric per sample, aggregates, and best / worst cases.

Predictions are decoded back to grids with the dataset's render spec at the target's grid shape,
so the object-aware metrics (GA, PPA, Obj-PPA, ...) score image models and baselines alike; a model
that predicts grids itself (`predict_grids`, the cogitao family) is scored on those instead.
Stubbornness needs the training sequences and is only computed on OOD splits, where it means
something (on ID splits a correct prediction is trivially "a training sequence applied").
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from render.spec import RenderSpec
from vision_bench.data.batch import Batch, target_shapes
from vision_bench.errors import DataError
from vision_bench.evaluation.sheets import SheetRow, to_uint8_image
from vision_bench.metrics import (
    METRICS,
    MeanSem,
    MetricValues,
    compute_metrics,
    decode_predictions,
    mean_sem,
)
from vision_bench.metrics.inputs import lay_on_targets
from vision_bench.metrics.objects import unchanged_samples
from vision_bench.metrics.perceptual import LpipsLoad, LpipsScorer, resolve_lpips
from vision_bench.metrics.registry import ALL_UNCHANGED
from vision_bench.models.base import ImageToImageModel
from vision_bench.tasks.grid import extract_objects

SPLIT_REASONS = frozenset({ALL_UNCHANGED})
"""Statuses that come from one split's samples rather than from the kind of data: metrics.json gives them with their
split, and as the run's status only where every split that computes the metric holds them (`outputs.run_status`)."""

UNCHANGED = "unchanged"
"""The per-sample column (data with grids): the target equals the input (the sample's sequence changes nothing
there); `stubbornness` leaves such a sample out where a training sequence leaves the input unchanged too."""


@dataclass
class SplitEvaluation:
    """Per-sample columns, aggregates (mean +- SEM on the reporting scale) and sheet rows."""

    split: str
    columns: dict[str, list[Any]]
    aggregates: dict[str, MeanSem]
    status: dict[str, str]
    best: list[SheetRow] = field(default_factory=list)
    worst: list[SheetRow] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.columns.get("index", []))

    def means(self) -> dict[str, float]:
        return {name: value.mean for name, value in self.aggregates.items()}


def aggregate(metric: str, values: Sequence[float] | torch.Tensor) -> MeanSem:
    """Mean +- SEM on `summarize`'s scale: accuracies x100, PSNR capped, NaN samples left out."""
    spec = METRICS[metric]
    array = torch.as_tensor(values).detach().double().reshape(-1).cpu().numpy()
    if spec.cap is not None:
        array = np.minimum(array, spec.cap)
    return mean_sem((array * (100.0 if spec.percent else 1.0)).tolist())


def pad_to(grids: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Grids (B, h, w) padded with -1 (never cropped) to (B, height, width)."""
    out = torch.full((grids.shape[0], height, width), -1, dtype=torch.long, device=grids.device)
    out[:, : grids.shape[1], : grids.shape[2]] = grids
    return out


def _object_count(grid: torch.Tensor, shape: Sequence[int]) -> int:
    return len(extract_objects(grid[: shape[0], : shape[1]].cpu().numpy().astype(np.uint8)))


def _score_key(values: Mapping[str, torch.Tensor], row: int) -> tuple[float, float]:
    """Larger is better: (grid accuracy or 0, -MSE), so the best / worst cases are ranked by grid
    accuracy first, then by MSE (by MSE alone without grids)."""
    accuracy = float(values["grid_accuracy"][row]) if "grid_accuracy" in values else 0.0
    error = float(values["mse"][row])
    return accuracy, -error if math.isfinite(error) else -math.inf


def _label(split: str, batch: Batch, row: int, values: Mapping[str, torch.Tensor]) -> str:
    index = int(batch["index"][row]) if "index" in batch else row
    lines = [f"{split} #{index}"]
    if "sequence" in batch and len(batch["sequence"][row]):
        sequence = batch["sequence"][row]
        lines.append("\n".join(", ".join(sequence[i:i + 2]) for i in range(0, len(sequence), 2)))
    scores = []
    if "grid_accuracy" in values:
        scores.append(f"GA {100 * float(values['grid_accuracy'][row]):.0f}")
    scores.append(f"MSE {float(values['mse'][row]):.4f}")
    return "\n".join(lines + [" ".join(scores)])


class Extremes:
    """The k best and k worst samples seen so far, keeping only their images."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.best: list[tuple[tuple[float, float], int, SheetRow]] = []
        self.worst: list[tuple[tuple[float, float], int, SheetRow]] = []
        self.seen = 0

    def offer(self, key: tuple[float, float], make_row: Callable[[], SheetRow]) -> None:
        self.seen += 1
        if self.k < 1:  # no sheets asked for
            return
        order = self.seen
        best_full = len(self.best) >= self.k and key <= self.best[0][0]
        worst_full = len(self.worst) >= self.k and (-key[0], -key[1]) <= self.worst[0][0]
        if best_full and worst_full:
            return
        row = make_row()
        if not best_full:
            (heapq.heappushpop if len(self.best) >= self.k else heapq.heappush)(self.best, (key, -order, row))
        if not worst_full:
            inverse = (-key[0], -key[1])
            (heapq.heappushpop if len(self.worst) >= self.k else heapq.heappush)(self.worst, (inverse, -order, row))

    def rows(self) -> tuple[list[SheetRow], list[SheetRow]]:
        best = [entry[2] for entry in sorted(self.best, reverse=True)]
        worst = [entry[2] for entry in sorted(self.worst, reverse=True)]
        return best, worst


@dataclass
class _Scores:
    """What one predictor has accumulated on one split."""

    per_metric: dict[str, list[torch.Tensor]]
    status: dict[str, str]
    extremes: Extremes


@torch.no_grad()
def evaluate_split(
    models: Mapping[str, ImageToImageModel],
    dataset: Dataset,
    *,
    split: str,
    spec: RenderSpec,
    device: torch.device,
    batch_size: int = 64,
    lpips: torch.nn.Module | LpipsScorer | str | None = None,
    id_sequences: Sequence[Sequence[str]] | None = None,
    sheet_samples: int = 4,
    progress: bool = False,
    save_predictions: Callable[[str, Sequence[int], torch.Tensor], None] | None = None,
    canvas: tuple[int, int] | None = None,
    episode_setup: str | None = None,
    connectivity: int | None = None,
    exclude: Collection[str] = (),
) -> dict[str, SplitEvaluation]:
    """Every metric on every sample of `dataset` for each of `models` (name -> `predict`-able module).

    `canvas` is the experiment's largest grid (height, width), the padded canvas of the paper's PPA
    (`paper_ppa`); without it, it is computed only on batches whose grids share one size.
    `episode_setup` (the C-ARC setup of an episode study) and `connectivity` (the task config's) tell
    the error taxonomy where the query is and how objects are extracted. `exclude`: metrics not computed, which
    the data cannot support (`EvaluationData.unavailable`, reported there).

    The split is read once: each batch is scored for every predictor in turn, so its sample
    columns are computed once and LPIPS passes each target through its network once.
    `save_predictions(name, sample indices, images)` receives every batch of predictions.
    """
    from vision_bench.data.collate import collate
    from vision_bench.data.device import to_device_batch

    for model in models.values():
        model.eval()
    perceptual = resolve_lpips(lpips, device)  # once per split
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=collate)
    columns: dict[str, list[Any]] = {}
    scores = {name: _Scores({}, {}, Extremes(sheet_samples)) for name in models}
    ood = split.endswith("_ood")
    who = next(iter(models)) if len(models) == 1 else f"{len(models)} predictors"  # which run, under a bench's bar
    for raw in tqdm(loader, desc=f"evaluate {who} · {split}", unit="batch", disable=not progress, leave=False):
        batch = to_device_batch(raw, spec, device)
        for name, model in models.items():
            drawn, grids = model.predict_with_grids(batch)
            prediction = drawn.float().clamp_(0, 1)
            values = _batch_metrics(prediction, batch, spec, perceptual, id_sequences if ood else None, canvas,
                                    {"episode_setup": episode_setup, "connectivity": connectivity}, exclude, grids)
            _record(scores[name], split, batch, prediction, values, cache(partial(model.sheet_images, batch)))
            if save_predictions is not None:
                save_predictions(name, _indices(batch, prediction.shape[0]), prediction)
        _append_columns(columns, batch, len(batch["target"]))
    if perceptual is not None and perceptual.module is not None:
        perceptual.module.release()
    return {name: _finish(split, columns, score) for name, score in scores.items()}


def _record(score: _Scores, split: str, batch: Batch, prediction: torch.Tensor,
            values: MetricValues, extras: Callable[[], Mapping[str, torch.Tensor]]) -> None:
    """Add the batch's metric values to `score` and offer its samples to the sheets; `extras` (called at most once,
    for a batch with a sample the sheets keep) gives the model's extra sheet images."""
    score.status.update({k: v for k, v in values.status.items() if v != "ok"})
    for name, tensor in values.items():
        score.per_metric.setdefault(name, []).append(tensor.detach().double().cpu())
    for row in range(prediction.shape[0]):
        score.extremes.offer(_score_key(values, row),
                             partial(_sheet_row, split, batch, prediction, values, row, extras))


def _sheet_row(split: str, batch: Batch, prediction: torch.Tensor, values: MetricValues, row: int,
               extras: Callable[[], Mapping[str, torch.Tensor]]) -> SheetRow:
    """Sample `row` of the batch as a contact-sheet row (built only for the samples a sheet keeps)."""
    return SheetRow(
        to_uint8_image(batch["input"][row].cpu().numpy()),
        to_uint8_image(batch["target"][row].cpu().numpy()),
        to_uint8_image(prediction[row].cpu().numpy()),
        _label(split, batch, row, values),
        tuple((name, to_uint8_image(images[row].float().cpu().numpy())) for name, images in extras().items()),
    )


def _finish(split: str, shared_columns: Mapping[str, list[Any]], score: _Scores) -> SplitEvaluation:
    columns = {name: list(values) for name, values in shared_columns.items()}
    for name, parts in score.per_metric.items():
        columns[name] = torch.cat(parts).tolist()
    aggregates = {name: aggregate(name, torch.cat(parts)) for name, parts in score.per_metric.items()}
    best, worst = score.extremes.rows()
    return SplitEvaluation(split, columns, aggregates, _split_status(score.status, aggregates), best, worst)


def _split_status(status: Mapping[str, str], aggregates: Mapping[str, MeanSem]) -> dict[str, str]:
    """The batches' statuses, less those that held for one batch alone: `ALL_UNCHANGED` (every sample left out of
    stubbornness) where another batch of the split has a sample it scores, and so a finite mean."""
    return {name: reason for name, reason in status.items()
            if not (reason == ALL_UNCHANGED and math.isfinite(aggregates[name].mean))}


def _batch_metrics(
    prediction: torch.Tensor,
    batch: Batch,
    spec: RenderSpec,
    lpips: LpipsLoad | None,
    id_sequences: Sequence[Sequence[str]] | None,
    canvas: tuple[int, int] | None = None,
    task: Mapping[str, Any] | None = None,
    exclude: Collection[str] = (),
    predicted_grids: torch.Tensor | None = None,
) -> MetricValues:
    """Every metric whose inputs the batch provides, but those in `exclude`; the grids are the model's own
    `predicted_grids` when it gives some (laid on the targets: `lay_on_targets`), else the predictions decoded at
    the target's grid shape. `task` holds the task config's facts the error taxonomy reads (`episode_setup`,
    `connectivity`)."""
    seeds = _render_seeds(batch, prediction.shape[0])
    grids: dict[str, Any] = {}
    if "target_grid" in batch:
        target = batch["target_grid"]
        shapes = target_shapes(batch)
        if shapes is None:
            raise DataError("a batch with target grids needs their sizes: 'target_grid_shape' or 'grid_shape'")
        if predicted_grids is None:
            pred_grids = pad_to(decode_predictions(prediction, spec, shapes, seeds=seeds).to(target.device),
                                *target.shape[1:])
        else:
            pred_grids = lay_on_targets(predicted_grids, target)
        grids = {
            "pred_grids": pred_grids,
            "target_grids": target,
            "input_grids": batch["input_grid"] if "input_grid" in batch else None,
        }
        if id_sequences:
            grids["id_sequences"] = id_sequences
        if "sequence" in batch and "input_grid" in batch:
            grids["sequences"] = batch["sequence"]
            if "task_code" in batch:
                grids["task_codes"] = batch["task_code"]
            grids.update(task or {})
    background = torch.from_numpy(spec.colors_batch(seeds)[:, 0].astype(np.int64))
    return compute_metrics(
        prediction, batch["target"], batch["input"] if "input" in batch else None, background_rgb=background,
        lpips=lpips, canvas=canvas if grids else None, exclude=exclude, **grids,
    )


def _render_seeds(batch: Batch, count: int) -> list[int]:
    if "render_seed" not in batch:
        return [0] * count
    return [int(s) for s in batch["render_seed"].tolist()]


def _indices(batch: Batch, count: int) -> list[int]:
    indices = batch["index"].tolist() if "index" in batch else range(count)
    return [int(i) for i in indices]


def _append_columns(columns: dict[str, list[Any]], batch: Batch, count: int) -> None:
    columns.setdefault("index", []).extend(_indices(batch, count))
    columns.setdefault("task_key", []).extend(batch["task_key"] if "task_key" in batch else [""] * count)
    sequences = batch["sequence"] if "sequence" in batch else [()] * count
    columns.setdefault("sequence", []).extend([list(s) for s in sequences])
    if "target_grid" in batch:
        input_shapes = batch["grid_shape"].tolist()
        shapes = batch["target_grid_shape"] if "target_grid_shape" in batch else batch["grid_shape"]
        columns.setdefault("n_objects", []).extend(
            _object_count(g, s) for g, s in zip(batch["input_grid"], input_shapes)
        )
        columns.setdefault("n_target_objects", []).extend(
            _object_count(g, s) for g, s in zip(batch["target_grid"], shapes.tolist())
        )
        columns.setdefault(UNCHANGED, []).extend(unchanged_samples(batch["target_grid"], batch["input_grid"]))
