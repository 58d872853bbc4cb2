"""Score any predicted images against targets with the project's metrics (`vision-bench score`).

Inputs are two image files, or two folders whose images are paired by sample key: the file stem
without a role suffix (`_pred`, `_prediction`, `_target`, `_output`), so `00000007_pred.png`
pairs with an export split's `00000007_target.png`. In a folder where some images carry a role
suffix, only those are read (an export split's `_input` images and masks are left out).

Pixel metrics, PSNR, SSIM and LPIPS work on any RGB images of equal size; the grid metrics need a
render spec and the grid shape to decode both images with. Metrics that need the input image or
the training sequences are not available here (use `vision-bench evaluate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from render.spec import RenderSpec
from vision_bench.errors import ConfigError
from vision_bench.metrics import METRICS, compute_metrics, decode_predictions, summarize
from vision_bench.metrics.perceptual import LpipsLoad, LpipsScorer, resolve_lpips

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
ROLE_SUFFIXES = ("_pred", "_prediction", "_target", "_output")
IMAGE_METRICS = ("mse", "mse_sum", "psnr", "ssim", "lpips")
GRID_METRICS = ("grid_accuracy", "pixel_accuracy", "object_pixel_accuracy", "paper_obj_ppa",
                "object_accuracy", "color_accuracy", "shape_accuracy")
BATCH = 32


@dataclass(frozen=True)
class Pair:
    """One prediction and its target."""

    key: str
    pred: Path
    target: Path


@dataclass
class Scores:
    """Per-pair values (accuracies in percent), their means, unpaired files, and why a metric is unavailable."""

    metrics: tuple[str, ...]
    rows: list[dict[str, Any]]
    mean: dict[str, float]
    status: dict[str, str]
    unpaired: list[Path]


def sample_key(path: Path) -> str:
    stem = path.stem
    for suffix in ROLE_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def _images_by_key(folder: Path) -> dict[str, Path]:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    tagged = [p for p in files if sample_key(p) != p.stem]
    chosen: dict[str, Path] = {}
    for path in tagged or files:
        key = sample_key(path)
        if key in chosen:
            raise ConfigError(f"{folder} has two images for sample {key!r}: {chosen[key].name} and {path.name}; "
                              "keep one")
        chosen[key] = path
    return chosen


def pair_files(pred: Path, target: Path) -> tuple[list[Pair], list[Path]]:
    """The pairs to score and the images that found no partner."""
    for path, what in ((pred, "PRED"), (target, "TARGET")):
        if not path.exists():
            raise ConfigError(f"{what} {path} does not exist; give two image files or two folders of images")
    if pred.is_file() and target.is_file():
        return [Pair(pred.stem, pred, target)], []
    if not (pred.is_dir() and target.is_dir()):
        raise ConfigError(f"{pred} and {target} must both be image files or both be folders")
    predictions, targets = _images_by_key(pred), _images_by_key(target)
    keys = sorted(set(predictions) & set(targets))
    if not keys:
        raise ConfigError(
            f"no image in {pred} has a partner in {target} (pairs share a file name, or a stem up to "
            f"{'/'.join(ROLE_SUFFIXES)}); found {len(predictions)} and {len(targets)} images"
        )
    unpaired = sorted([p for k, p in predictions.items() if k not in targets] +
                      [p for k, p in targets.items() if k not in predictions])
    return [Pair(key, predictions[key], targets[key]) for key in keys], unpaired


def check_metrics(names: Sequence[str], decodable: bool) -> tuple[str, ...]:
    """The metrics to compute: the image metrics (and grid metrics when decodable) by default."""
    if not names:
        return IMAGE_METRICS + (GRID_METRICS if decodable else ())
    for name in names:
        if name not in METRICS:
            raise ConfigError(f"unknown metric {name!r}; score computes {', '.join(IMAGE_METRICS + GRID_METRICS)}")
        if name not in IMAGE_METRICS + GRID_METRICS:
            raise ConfigError(f"metric {name!r} needs the input image or training sequences; "
                              "score it with `vision-bench evaluate`")
        if name in GRID_METRICS and not decodable:
            raise ConfigError(f"metric {name!r} decodes grids: pass --spec SPEC.yaml and --grid HxW")
    return tuple(names)


def _load(path: Path) -> torch.Tensor:
    from vision_bench.data.images import load_image_tensor

    return load_image_tensor(path)


def score_pairs(
    pairs: Sequence[Pair],
    metrics: Sequence[str],
    *,
    lpips: torch.nn.Module | LpipsScorer | LpipsLoad | str | None = None,
    device: torch.device | str = "cpu",
    spec: RenderSpec | None = None,
    grid_shape: tuple[int, int] | None = None,
    unpaired: Sequence[Path] = (),
) -> Scores:
    """Every requested metric for every pair, batched by image size, on `device`."""
    device = torch.device(device)
    perceptual = resolve_lpips(lpips, device) if "lpips" in metrics else None
    values: dict[str, list[torch.Tensor]] = {name: [] for name in metrics}
    status: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for batch in _batches(pairs):
        pred = torch.stack([_load(p.pred) for p in batch])
        target = torch.stack([_load(p.target) for p in batch])
        grids = {}
        if spec is not None and grid_shape is not None and any(m in GRID_METRICS for m in metrics):
            shapes = [grid_shape] * len(batch)
            grids = {"pred_grids": decode_predictions(pred, spec, shapes),
                     "target_grids": decode_predictions(target, spec, shapes)}
        result = compute_metrics(pred.to(device), target.to(device), names=list(metrics), lpips=perceptual,
                                 **{k: v.to(device) for k, v in grids.items()})
        status.update({k: v for k, v in result.status.items() if v != "ok"})
        for name in metrics:
            values[name].append(result[name].detach().double().cpu())
        for row, pair in enumerate(batch):
            rows.append({"key": pair.key, "pred": str(pair.pred), "target": str(pair.target),
                         **{name: _reported(name, float(result[name][row])) for name in metrics}})
    mean = summarize({name: parts for name, parts in values.items()})
    rows.sort(key=lambda row: row["key"])
    return Scores(tuple(metrics), rows, mean, status, list(unpaired))


def _reported(name: str, value: float) -> float:
    """A value on the reporting scale: accuracies in percent, PSNR capped as aggregates cap it."""
    spec = METRICS[name]
    if spec.cap is not None:
        value = min(value, spec.cap)
    return value * 100 if spec.percent else value


def _batches(pairs: Sequence[Pair]) -> list[list[Pair]]:
    """Pairs grouped by image size (checked per pair), at most `BATCH` per group."""
    from PIL import Image

    groups: dict[tuple[int, int], list[Pair]] = {}
    for pair in pairs:
        sizes = []
        for path in (pair.pred, pair.target):
            try:
                with Image.open(path) as image:
                    sizes.append(image.size)
            except (OSError, SyntaxError, ValueError) as error:
                raise ConfigError(f"{path}: cannot read the image ({error}); replace or remove it") from None
        if sizes[0] != sizes[1]:
            raise ConfigError(f"{pair.pred} is {sizes[0][0]}x{sizes[0][1]} but {pair.target} is "
                              f"{sizes[1][0]}x{sizes[1][1]}: a prediction and its target must have the same size")
        groups.setdefault(sizes[0], []).append(pair)
    return [group[i:i + BATCH] for group in groups.values() for i in range(0, len(group), BATCH)]


def scores_table(scores: Scores) -> Mapping[str, list[Any]]:
    """Column name -> values, one row per pair (for Parquet / CSV)."""
    columns = ("key", "pred", "target", *scores.metrics)
    return {column: [row[column] for row in scores.rows] for column in columns}
