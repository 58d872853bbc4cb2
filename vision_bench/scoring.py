"""Score any predicted images against targets with the project's metrics (`vision-bench score`).

Inputs are two image files, or two folders whose images are paired by sample key: the file stem
without a role suffix (`_pred`, `_prediction`, `_target`, `_output`), so `00000007_pred.png`
pairs with an export split's `00000007_target.png`. In a folder where some images carry a role
suffix, only those are read (an export split's `_input` images and masks are left out).

Score computes every registered metric whose `needs` (its `MetricSpec`) it can give: the predicted
and target images, and the grids decoded from both when a render spec and the grid shape are given.
Pixel metrics, PSNR, SSIM and LPIPS work on any RGB images of equal size. Metrics that need the
input image or the training sequences are not available here (use `vision-bench evaluate`).
Score sees images only: a grid model's (`cogitao:`) saved prediction draws a cell it predicted as
no colour as background, so the decoded grid reads it as background, where `vision-bench evaluate`,
which scores such a model on its own grids, counts it wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from render.codec import MAX_PIXELS, ImageTooLargeError, image_size, load
from render.spec import RenderSpec
from vision_bench.errors import ConfigError
from vision_bench.io.documents import JSONDict
from vision_bench.metrics import METRICS, compute_metrics, decode_predictions, summarize
from vision_bench.metrics.perceptual import LpipsLoad, LpipsScorer, resolve_lpips

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
ROLE_SUFFIXES = ("_pred", "_prediction", "_target", "_output")
IMAGE_INPUTS = frozenset({"pred_images", "target_images"})
"""The `MetricInputs` fields score always gives (LPIPS loads its own network)."""
GRID_INPUTS = frozenset({"pred_grids", "target_grids"})
"""The fields it adds when --spec and --grid let it decode both images."""
BATCH = 32
BATCH_PIXELS = BATCH * 256 * 256
"""Pixels per image in one batch at most: 32 pairs up to 256 x 256, one pair of a larger image at a time."""
BYTES_PER_PIXEL = 150
"""Memory a pair takes to score, per pixel of one image (the five image metrics on a CPU: 1.7 GB at the peak for a
2048 x 2048 pair, 1.0 GB for a 64 x 64 pair; 11 GB for a 9000 x 9000 pair)."""


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
    rows: list[JSONDict]
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


def scorable(decodable: bool) -> tuple[str, ...]:
    """The registered metrics whose `needs` score gives (grids only when `decodable`), in registry order."""
    given = (IMAGE_INPUTS | GRID_INPUTS) if decodable else IMAGE_INPUTS
    return tuple(name for name, spec in METRICS.items() if set(spec.needs) <= given)


def check_metrics(names: Sequence[str], decodable: bool) -> tuple[str, ...]:
    """The metrics to compute: by default every scorable metric marked `score_default`."""
    if not names:
        return tuple(name for name in scorable(decodable) if METRICS[name].score_default)
    for name in names:
        if name not in METRICS:
            raise ConfigError(f"unknown metric {name!r}; score computes {', '.join(scorable(decodable=True))}")
        if name not in scorable(decodable=True):
            raise ConfigError(f"metric {name!r} needs the input image or training sequences; "
                              "score it with `vision-bench evaluate`")
        if name not in scorable(decodable):
            raise ConfigError(f"metric {name!r} decodes grids: pass --spec SPEC.yaml and --grid HxW")
    return tuple(names)


def _reads_grids(metrics: Sequence[str]) -> bool:
    """Whether any of `metrics` needs the decoded grids."""
    return any(GRID_INPUTS & set(METRICS[name].needs) for name in metrics)


def _load(path: Path, max_pixels: int) -> torch.Tensor:
    from vision_bench.data.images import image_tensor

    return image_tensor(load(path, max_pixels=max_pixels))


def score_pairs(
    pairs: Sequence[Pair],
    metrics: Sequence[str],
    *,
    lpips: torch.nn.Module | LpipsScorer | LpipsLoad | str | None = None,
    device: torch.device | str = "cpu",
    spec: RenderSpec | None = None,
    grid_shape: tuple[int, int] | None = None,
    unpaired: Sequence[Path] = (),
    max_pixels: int = MAX_PIXELS,
) -> Scores:
    """Every requested metric for every pair, batched by image size, on `device`; images of more than `max_pixels`
    pixels are refused before any is decoded."""
    device = torch.device(device)
    batches = _batches(pairs, max_pixels)
    perceptual = resolve_lpips(lpips, device) if "lpips" in metrics else None
    values: dict[str, list[torch.Tensor]] = {name: [] for name in metrics}
    status: dict[str, str] = {}
    rows: list[JSONDict] = []
    for batch in batches:
        pred = torch.stack([_load(p.pred, max_pixels) for p in batch])
        target = torch.stack([_load(p.target, max_pixels) for p in batch])
        pred_grids = target_grids = None
        if spec is not None and grid_shape is not None and _reads_grids(metrics):
            shapes = [grid_shape] * len(batch)
            pred_grids = decode_predictions(pred, spec, shapes).to(device)
            target_grids = decode_predictions(target, spec, shapes).to(device)
        result = compute_metrics(pred.to(device), target.to(device), names=list(metrics), lpips=perceptual,
                                 pred_grids=pred_grids, target_grids=target_grids)
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


def _batches(pairs: Sequence[Pair], max_pixels: int) -> list[list[Pair]]:
    """Pairs grouped by image size (read from the headers, checked per pair against `max_pixels`), at most `BATCH`
    per group and `BATCH_PIXELS` pixels per image."""
    groups: dict[tuple[int, int], list[Pair]] = {}
    for pair in pairs:
        sizes = [_size(path, max_pixels) for path in (pair.pred, pair.target)]
        if sizes[0] != sizes[1]:
            raise ConfigError(f"{pair.pred} is {sizes[0][0]}x{sizes[0][1]} but {pair.target} is "
                              f"{sizes[1][0]}x{sizes[1][1]}: a prediction and its target must have the same size")
        groups.setdefault(sizes[0], []).append(pair)
    batches = []
    for (width, height), group in groups.items():
        size = max(1, min(BATCH, BATCH_PIXELS // (width * height)))
        batches += [group[i:i + size] for i in range(0, len(group), size)]
    return batches


def _size(path: Path, max_pixels: int) -> tuple[int, int]:
    """(width, height) of the image at `path`, refused over `max_pixels` with the option that raises the limit."""
    try:
        return image_size(path, max_pixels)
    except ImageTooLargeError as error:
        (width, height), pixels = error.size, error.size[0] * error.size[1]
        raise ConfigError(f"{path} is {width}x{height} pixels ({pixels:,}), more than --max-pixels {max_pixels:,}; "
                          f"a pair of that size takes about {pixels * BYTES_PER_PIXEL / 1e9:.1f} GB to score: pass "
                          f"--max-pixels {pixels} to score it anyway") from None


def scores_table(scores: Scores) -> Mapping[str, list[object]]:
    """Column name -> values, one row per pair (for Parquet / CSV)."""
    columns = ("key", "pred", "target", *scores.metrics)
    return {column: [row[column] for row in scores.rows] for column in columns}
