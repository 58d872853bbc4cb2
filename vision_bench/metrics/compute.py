"""One entry point for a batch (`compute_metrics`) and one for aggregates (`summarize`).

Aggregation rules, the same for every caller:
- NaN samples (a masked MSE with an empty mask, LPIPS without weights) are left out of the mean;
  a metric with no finite sample aggregates to NaN.
- PSNR is capped at `PSNR_CAP_DB` (100 dB) first, so identical images count as 100 dB, not +inf.
- Accuracies (`percent` metrics) are reported x100.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

import torch

from vision_bench.metrics.inputs import MetricInputError, as_grids, as_images, background_colors, matching_images
from vision_bench.metrics.perceptual import OK, LpipsLoad, LpipsScorer, resolve_lpips
from vision_bench.metrics.pixel import PIXEL_TOLERANCE
from vision_bench.metrics.registry import METRICS, MetricInputs, check_computable, missing_inputs


class MetricValues(dict[str, torch.Tensor]):
    """Metric name -> per-sample values (B,); `status` maps a name to 'ok' or 'unavailable: ...'."""

    def __init__(self, values: Mapping[str, torch.Tensor], status: Mapping[str, str]) -> None:
        super().__init__(values)
        self.status = {name: status.get(name, OK) for name in values}


@torch.no_grad()
def compute_metrics(
    pred_images: torch.Tensor | None = None,
    target_images: torch.Tensor | None = None,
    input_images: torch.Tensor | None = None,
    *,
    pred_grids: torch.Tensor | None = None,
    target_grids: torch.Tensor | None = None,
    input_grids: torch.Tensor | None = None,
    background_rgb: torch.Tensor | Sequence[float] | None = None,
    foreground_mask: torch.Tensor | None = None,
    id_sequences: Iterable[Sequence[str]] | None = None,
    sequences: Sequence[Sequence[str]] | None = None,
    task_codes: torch.Tensor | None = None,
    episode_setup: str | None = None,
    connectivity: int | None = None,
    canvas: int | tuple[int, int] | None = None,
    names: Sequence[str] | None = None,
    exclude: Collection[str] = (),
    lpips: torch.nn.Module | LpipsScorer | LpipsLoad | str | None = None,
    tolerance: float = PIXEL_TOLERANCE,
) -> MetricValues:
    """Per-sample values of the requested metrics (default: every metric whose inputs are given).

    Images are float (B, 3, H, W) in [0, 1] (or uint8); grids are long (B, h, w) padded with -1.
    `background_rgb` is the color drawn for grid value 0, (3,) or per sample (B, 3), integers
    0-255 or floats 0-1; `foreground_mask` (B, H, W) may replace it. `lpips` is a network name
    ('alex', 'vgg', 'squeeze'), an already-built LPIPS module, an `LpipsScorer` or an `LpipsLoad` (which keeps
    the last target batch's features, so scoring several predictors against one target tensor
    passes it through the network once); missing weights makes `lpips` NaN
    with an 'unavailable: ...' status instead of failing. `canvas` (m, n), or m for m x m, is the padded grid size
    the paper's literal metrics (`paper_ppa`, `paper_obj_ppa`) count over; without it they use the
    batch's size when its grids all have that size, else they are NaN with a status saying so.
    `sequences` (one per sample: its own transformation names) feed the error taxonomy (`error_*`),
    with `task_codes` (B, L; the selectors of rule studies), `episode_setup` (the C-ARC setup when the
    grids are episode canvases) and `connectivity` (the task config's; 8 when None).
    `exclude` leaves metrics out of the default selection: those the data cannot support, which the caller
    reports unavailable (evaluation's `EvaluationData.unavailable`, such as the factor metrics off SVIB's scenes).
    A metric asked for by name whose inputs are missing raises `MetricInputError`.
    """
    inputs = _inputs(pred_images, target_images, input_images, pred_grids, target_grids, input_grids,
                     background_rgb, foreground_mask, id_sequences, canvas, tolerance)
    if sequences is not None:
        inputs.sequences = [tuple(sequence) for sequence in sequences]
    inputs.task_codes, inputs.episode_setup, inputs.connectivity = task_codes, episode_setup, connectivity
    if names is None:
        specs = [spec for name, spec in METRICS.items() if name not in exclude and not missing_inputs(spec, inputs)]
    else:
        specs = [METRICS[name] for name in names]
        for spec in specs:
            check_computable(spec, inputs)
    statistics = {spec.statistic for spec in specs if spec.statistic is not None}
    if statistics:
        inputs.compute_image_statistics(statistics)  # first: it also checks the images' value range
    else:
        _check_ranges(inputs)
    if any(spec.name == "lpips" for spec in specs):
        inputs.lpips = resolve_lpips(lpips, inputs.image_pair()[0].device)
    values = {spec.name: spec.function(inputs) for spec in specs}
    return MetricValues(values, inputs.status)


def _inputs(
    pred_images: torch.Tensor | None,
    target_images: torch.Tensor | None,
    input_images: torch.Tensor | None,
    pred_grids: torch.Tensor | None,
    target_grids: torch.Tensor | None,
    input_grids: torch.Tensor | None,
    background_rgb: torch.Tensor | Sequence[float] | None,
    foreground_mask: torch.Tensor | None,
    id_sequences: Iterable[Sequence[str]] | None,
    canvas: int | tuple[int, int] | None,
    tolerance: float,
) -> MetricInputs:
    """The arguments checked once: images shape-matched (their value range is checked when the
    metrics are known), grids as long tensors."""
    if pred_images is not None and target_images is not None:
        pred_images, target_images = matching_images(pred_images, target_images, ("pred_images", "target_images"),
                                                     check_range=False)
    if input_images is not None:
        reference = target_images if target_images is not None else input_images
        input_images, _ = matching_images(input_images, reference, ("input_images", "target_images"), check_range=False)
    batch_images = target_images if target_images is not None else pred_images
    background = None
    if background_rgb is not None and batch_images is not None:
        background = background_colors(background_rgb, batch_images.shape[0], batch_images.device)
    if foreground_mask is not None:
        foreground_mask = torch.as_tensor(foreground_mask, dtype=torch.bool)
    return MetricInputs(
        pred_images=pred_images,
        target_images=target_images,
        input_images=input_images,
        pred_grids=None if pred_grids is None else as_grids(pred_grids, "pred_grids", predicted=True),
        target_grids=None if target_grids is None else as_grids(target_grids, "target_grids"),
        input_grids=None if input_grids is None else as_grids(input_grids, "input_grids"),
        background=background,
        foreground_mask=foreground_mask,
        id_sequences=None if id_sequences is None else [tuple(s) for s in id_sequences],
        canvas=None if canvas is None else _canvas(canvas),
        tolerance=tolerance,
    )


def _canvas(canvas: int | Sequence[int]) -> tuple[int, int]:
    """`canvas` as (m, n), two positive integers; one integer m means m x m."""
    values = (canvas, canvas) if isinstance(canvas, int) else tuple(canvas)
    if len(values) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise MetricInputError(f"canvas: expected (m, n), two positive integers, got {canvas!r}")
    return values[0], values[1]


def _check_ranges(inputs: MetricInputs) -> None:
    """Every image batch given lies in [0, 1] (when no shared image pass checks it)."""
    for name in ("pred_images", "target_images", "input_images"):
        images = getattr(inputs, name)
        if images is not None:
            as_images(images, name)


def summarize(per_sample: Mapping[str, torch.Tensor | Sequence[torch.Tensor]]) -> dict[str, float]:
    """Metric name -> aggregate over samples (per-batch tensors in a list are concatenated first)."""
    summary = {}
    for name, values in per_sample.items():
        spec = METRICS[name]
        if not isinstance(values, torch.Tensor):
            values = torch.cat([torch.as_tensor(v).reshape(-1) for v in values]) if len(values) else torch.empty(0)
        values = values.detach().double().reshape(-1).cpu()
        if spec.cap is not None:
            values = values.clamp(max=spec.cap)
        finite = values[~values.isnan()]
        mean = float(finite.mean()) if finite.numel() else float("nan")
        summary[name] = mean * 100 if spec.percent else mean
    return summary
