"""Which metric should I trust? Controlled perturbations of true targets, and rank agreement on runs.

Part 1 scores every perturbation of `vision_bench.bench.perturbations` with every metric listed
in "perturbation_study" (`vision_bench.metrics.listed_in`): semantic perturbations edit the target
grid and are rendered with the spec, pixel perturbations edit the rendered target, and the
object-aware metrics (GA, Obj-PPA) read grids decoded from the perturbed image with the same spec,
exactly as a model's predictions are scored. Each metric's *penalty* on a perturbation is then
expressed as a share of the penalty it gives a blank (all-background) prediction: 0 = "looks
perfect to this metric", 1 = "as bad as predicting nothing". A metric near 0 on semantic errors
is blind to them; a metric well above 0 on pixel perturbations that leave every grid cell intact
punishes harmless noise.

Part 2 (`correlation_study`) reads the per-sample table that `vision-bench evaluate` writes and
measures how well each metric listed in "rank_study" (pixel and perceptual ones) ranks predictions
like those listed in "rank_reference" (GA and Obj-PPA) do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from render.raster import render_batch
from render.spec import RenderSpec
from vision_bench.bench.correlation import RankCorrelation, rank_correlation
from vision_bench.bench.perturbations import PERTURBATIONS, Perturbation
from vision_bench.errors import UserError
from vision_bench.evaluation.core import aggregate
from vision_bench.metrics import METRICS, MeanSem, compute_metrics, decode_predictions, listed_in

HARMLESS = ("shift_1px", "blur_sigma1", "jpeg_q90")
DEFAULT_STUDY = "envgen/G1/1"


@dataclass(frozen=True)
class Target:
    """A true pair: the input grid, the target grid, and the seed its images are rendered with."""

    input: np.ndarray
    output: np.ndarray
    render_seed: int = 0


@dataclass
class PerturbationStudy:
    """Per perturbation: how many targets it applied to, and each metric's mean +- SEM."""

    metrics: tuple[str, ...]
    n: dict[str, int] = field(default_factory=dict)
    values: dict[str, dict[str, MeanSem]] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)

    def penalty_share(self, perturbation: str, metric: str) -> float:
        """(value - identity) / (blank - identity): 0 = unnoticed, 1 = as bad as a blank prediction.

        NaN when undefined: a metric without finite values, or one whose perfect score is its
        reporting cap (PSNR of identical images is infinite, so any share of it says nothing).
        """
        perfect = self.values["identity"][metric].mean
        blank = self.values["blank"][metric].mean
        value = self.values[perturbation][metric].mean
        cap = METRICS[metric].cap
        if not all(math.isfinite(v) for v in (perfect, blank, value)) or blank == perfect:
            return float("nan")
        if cap is not None and perfect >= cap:
            return float("nan")
        return (value - perfect) / (blank - perfect) + 0.0  # + 0.0 turns -0.0 into 0.0

    def available(self, metric: str) -> bool:
        return any(math.isfinite(v[metric].mean) for v in self.values.values())


def _pad(grids: Sequence[np.ndarray]) -> torch.Tensor:
    height = max(g.shape[0] for g in grids)
    width = max(g.shape[1] for g in grids)
    padded = torch.full((len(grids), height, width), -1, dtype=torch.long)
    for row, grid in enumerate(grids):
        padded[row, : grid.shape[0], : grid.shape[1]] = torch.from_numpy(grid.astype(np.int64))
    return padded


def _channels_first(images: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2)


def _perturbed_images(
    perturbation: Perturbation, targets: Sequence[Target], target_images: np.ndarray, spec: RenderSpec, seed: int
) -> tuple[list[int], np.ndarray]:
    """Indices of the targets the perturbation applied to, and their perturbed images (N, H, W, 3)."""
    position = PERTURBATIONS.names().index(perturbation.name)
    kept: list[int] = []
    if perturbation.kind == "image":
        images = []
        for i, image in enumerate(target_images):
            changed = perturbation.function(image, np.random.default_rng([seed, position, i]))
            if changed is not None:  # an image perturbation always applies
                images.append(changed)
                kept.append(i)
        return kept, np.stack(images)
    grids = []
    for i, target in enumerate(targets):
        grid = perturbation.function(target.output, np.random.default_rng([seed, position, i]))
        if grid is not None:
            kept.append(i)
            grids.append(grid)
    if not kept:
        return kept, np.empty((0, *target_images.shape[1:]), np.uint8)
    return kept, render_batch(grids, spec, seeds=[targets[i].render_seed for i in kept])


def perturbation_study(
    targets: Sequence[Target],
    spec: RenderSpec,
    *,
    perturbations: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    lpips: torch.nn.Module | str | None = None,
    seed: int = 0,
) -> PerturbationStudy:
    """Score each perturbation of `targets` with `metrics` (default: those listed in
    "perturbation_study"; see the module docstring)."""
    if not targets:
        raise UserError("the perturbation study needs at least one target; give more samples")
    metrics = listed_in("perturbation_study") if metrics is None else tuple(metrics)
    names = list(perturbations or PERTURBATIONS.names())
    for required in ("identity", "blank"):
        if required not in names:
            names.append(required)
    seeds = [t.render_seed for t in targets]
    target_images = render_batch([t.output for t in targets], spec, seeds=seeds)
    input_images = render_batch([t.input for t in targets], spec, seeds=seeds)
    backgrounds = torch.from_numpy(spec.colors_batch(seeds)[:, 0].astype(np.int64))
    study = PerturbationStudy(tuple(metrics))
    for name in names:
        kept, images = _perturbed_images(PERTURBATIONS[name], targets, target_images, spec, seed)
        study.n[name] = len(kept)
        if not kept:
            study.values[name] = {m: MeanSem(float("nan"), float("nan"), 0) for m in metrics}
            continue
        shapes = [targets[i].output.shape for i in kept]
        predicted = _channels_first(images)
        values = compute_metrics(
            predicted,
            _channels_first(target_images[kept]),
            _channels_first(input_images[kept]),
            pred_grids=decode_predictions(predicted, spec, shapes, seeds=[seeds[i] for i in kept]),
            target_grids=_pad([targets[i].output for i in kept]),
            input_grids=_pad([targets[i].input for i in kept]),
            background_rgb=backgrounds[kept],
            names=list(metrics),
            lpips=lpips,
        )
        study.status.update({k: v for k, v in values.status.items() if v != "ok"})
        study.values[name] = {metric: aggregate(metric, values[metric]) for metric in metrics}
    return study


def findings(study: PerturbationStudy) -> list[str]:
    """Plain-language verdicts read off the penalty shares (one line per metric)."""
    semantic = [p for p in study.values if p in PERTURBATIONS and PERTURBATIONS[p].kind == "grid"]
    harmless = [p for p in HARMLESS if p in study.values]
    lines = []
    for metric in study.metrics:
        if not study.available(metric):
            reason = study.status.get(metric, "no finite value").removeprefix("unavailable: ")
            lines.append(f"{metric}: unavailable ({reason})")
            continue
        if math.isnan(study.penalty_share("blank", metric)):
            lines.append(f"{metric}: no penalty share (a perfect prediction scores its cap); compare the values")
            continue
        shares = {p: study.penalty_share(p, metric) for p in semantic}
        caught = float(np.nanmean(list(shares.values()))) if shares else float("nan")
        noise = {p: study.penalty_share(p, metric) for p in harmless}
        worst = max(noise, key=lambda p: noise[p]) if noise else None
        worst_share = noise[worst] if worst else float("nan")
        if caught < 0.2:
            verdict = "nearly blind to semantic errors"
        elif worst_share >= caught:
            verdict = "scores harmless pixel changes as badly as semantic errors"
        elif worst_share > 0.25:
            verdict = "punishes harmless pixel changes heavily"
        elif worst_share < 0.05:
            verdict = "ignores harmless pixel changes"
        else:
            verdict = f"separates semantic errors from harmless changes by {caught - worst_share:.2f}"
        blind = [p for p, share in shares.items() if share < 0.05]
        if blind:
            verdict += f"; does not see {', '.join(blind)}"
        lines.append(
            f"{metric}: semantic errors cost {caught:.2f} of a blank prediction on average, the worst harmless "
            f"change ({worst}) {worst_share:.2f}: {verdict}"
        )
    return lines


def correlation_study(
    columns: dict[str, np.ndarray], splits: np.ndarray, *, metrics: Sequence[str] | None = None
) -> list[RankCorrelation]:
    """Spearman and Kendall of each present metric of `metrics` (default: those listed in
    "rank_study") with each reference listed in "rank_reference" (GA, Obj-PPA), per split.

    `columns` holds per-sample values (as in evaluate's samples table), `splits` each sample's split.
    """
    metrics = listed_in("rank_study") if metrics is None else tuple(metrics)
    results = []
    for split in dict.fromkeys(splits.tolist()):
        rows = splits == split
        for reference in listed_in("rank_reference"):
            if reference not in columns:
                continue
            for metric in metrics:
                if metric not in columns:
                    continue
                results.append(
                    rank_correlation(
                        columns[metric][rows],
                        columns[reference][rows],
                        split=str(split),
                        metric=metric,
                        reference_name=reference,
                        lower_is_better=METRICS[metric].direction == "lower",
                    )
                )
    if not results:
        raise UserError(
            "the samples table has no pixel metric and no grid_accuracy / object_pixel_accuracy column; "
            "run `vision-bench evaluate` on a dataset with grids first"
        )
    return results
