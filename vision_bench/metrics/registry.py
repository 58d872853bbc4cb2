"""The `METRICS` registry: every metric's name, direction, description, inputs and batched function.

A metric function takes one `MetricInputs` (the checked batch, with intermediate results such as
the pixel-error sums computed once and shared) and returns one value per sample.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from vision_bench.metrics import grids, image_pass, objects, perceptual, pixel
from vision_bench.metrics.inputs import MetricInputError
from vision_bench.registry import Registry

Direction = Literal["higher", "lower"]
GapKind = Literal["difference", "log_ratio"]
Statistic = Literal["pixel_errors", "ssim"]


@dataclass
class MetricInputs:
    """One batch as `compute_metrics` received it (images already range-checked)."""

    pred_images: torch.Tensor | None = None
    target_images: torch.Tensor | None = None
    input_images: torch.Tensor | None = None
    pred_grids: torch.Tensor | None = None
    target_grids: torch.Tensor | None = None
    input_grids: torch.Tensor | None = None
    background: torch.Tensor | None = None
    foreground_mask: torch.Tensor | None = None
    id_sequences: Sequence[Sequence[str]] | None = None
    canvas: tuple[int, int] | None = None
    lpips: perceptual.LpipsLoad | None = None
    tolerance: float = pixel.PIXEL_TOLERANCE
    image_statistics: image_pass.ImageStatistics | None = None
    status: dict[str, str] = field(default_factory=dict)

    def available(self) -> set[str]:
        """Names of the inputs present; 'foreground' when foreground pixels can be told apart."""
        present = {name for name, value in vars(self).items() if value is not None}
        if self.foreground_mask is not None or (self.background is not None and self.input_images is not None):
            present.add("foreground")
        return present

    def compute_image_statistics(self, statistics: Collection[Statistic]) -> None:
        """The shared image `statistics` the requested metrics read, from one pass over the batch
        that also checks that the images lie in [0, 1]."""
        self.image_statistics = image_pass.image_statistics(
            self.pred_images, self.target_images, self.input_images,
            background=self.background, foreground_mask=self.foreground_mask, tolerance=self.tolerance,
            pixels="pixel_errors" in statistics, ssim="ssim" in statistics,
            check_range=True, names=("pred_images", "target_images", "input_images"),
        )

    @property
    def pixel_errors(self) -> pixel.PixelErrors:
        """Every pixel-metric sum."""
        return self.image_statistics.pixel_errors

    @property
    def ssim(self) -> torch.Tensor:
        """SSIM per sample."""
        return self.image_statistics.ssim


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric. `needs`: `MetricInputs` fields it reads; `percent`: aggregates report
    the mean x100; `cap`: aggregates clip values to this bound first; `gap`: how the ID/OOD
    generalization gap is formed (None: no gap, e.g. an OOD-only metric); `statistic`: the shared
    batch statistic it reads, which `compute_metrics` computes once for all metrics that read it."""

    name: str
    direction: Direction
    description: str
    function: Callable[[MetricInputs], torch.Tensor]
    needs: tuple[str, ...]
    percent: bool = False
    cap: float | None = None
    gap: GapKind | None = None
    statistic: Statistic | None = None


METRICS: Registry[MetricSpec] = Registry("metric")

NEED_HINTS = {
    "pred_images": "pred_images",
    "target_images": "target_images",
    "input_images": "input_images",
    "pred_grids": "pred_grids (decode predictions first)",
    "target_grids": "target_grids",
    "input_grids": "input_grids",
    "foreground": "input_images with background_rgb, or foreground_mask",
    "id_sequences": "id_sequences (the training split's transformation sequences)",
}

IMAGES = ("pred_images", "target_images")
GRIDS = ("pred_grids", "target_grids")


def register(spec: MetricSpec) -> MetricSpec:
    return METRICS.add(spec.name, spec, spec.description)


def _lpips(inputs: MetricInputs) -> torch.Tensor:
    images = inputs.pred_images
    load = inputs.lpips or perceptual.load_lpips(device=images.device)
    status = load.status if load.module is None else perceptual.size_problem(load.module, *images.shape[-2:])
    inputs.status["lpips"] = status or load.status
    if status is not None:
        return torch.full((images.shape[0],), float("nan"), device=images.device)
    return load.module(images, inputs.target_images)


CANVAS_UNKNOWN = (
    "unavailable: the batch's grids are padded and no canvas size was given, so the paper's m x n canvas is unknown"
)


def _on_paper_canvas(
    name: str, formula: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
) -> Callable[[MetricInputs], torch.Tensor]:
    """`formula` over the padded canvas (`grids.on_canvas`); NaN with a status when the canvas is unknown."""

    def function(inputs: MetricInputs) -> torch.Tensor:
        laid = grids.on_canvas(inputs.pred_grids, inputs.target_grids, inputs.canvas)
        if laid is None:
            inputs.status[name] = CANVAS_UNKNOWN
            target = inputs.target_grids
            return torch.full((target.shape[0],), float("nan"), dtype=torch.float64, device=target.device)
        return formula(*laid)

    return function


def _stubbornness(inputs: MetricInputs) -> torch.Tensor:
    return objects.stubbornness(inputs.pred_grids, inputs.target_grids, inputs.input_grids, inputs.id_sequences)


for _spec in (
    MetricSpec("mse", "lower", "mean squared error over the 3 x H x W values in [0, 1]",
               lambda i: i.pixel_errors.mse, IMAGES, gap="log_ratio", statistic="pixel_errors"),
    MetricSpec("mse_sum", "lower", "squared error summed over the 3 x H x W values of each image (SVIB)",
               lambda i: i.pixel_errors.mse_sum, IMAGES, gap="log_ratio", statistic="pixel_errors"),
    MetricSpec("psnr", "higher", f"peak signal-to-noise ratio in dB, data range 1 (aggregates cap +inf at {pixel.PSNR_CAP_DB:g})",
               lambda i: i.pixel_errors.psnr, IMAGES, cap=pixel.PSNR_CAP_DB, gap="difference",
               statistic="pixel_errors"),
    MetricSpec("ssim", "higher", "structural similarity, Gaussian window 11, sigma 1.5, averaged over channels",
               lambda i: i.ssim, IMAGES, gap="difference", statistic="ssim"),
    MetricSpec("lpips", "lower", "LPIPS v0.1 (official lpips package), AlexNet backbone by default; NaN with the reason when its weights are absent",
               _lpips, IMAGES, gap="log_ratio"),
    MetricSpec("fg_mse", "lower", "MSE over pixels where the target or the input is not background",
               lambda i: i.pixel_errors.fg_mse, (*IMAGES, "foreground"), gap="log_ratio",
               statistic="pixel_errors"),
    MetricSpec("changed_mse", "lower", "MSE over pixels where the target differs from the input",
               lambda i: i.pixel_errors.changed_mse, (*IMAGES, "input_images"), gap="log_ratio",
               statistic="pixel_errors"),
    MetricSpec("grid_accuracy", "higher", "exact match of the decoded grid (GA), percent",
               lambda i: grids.grid_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True, gap="difference"),
    MetricSpec("pixel_accuracy", "higher", "share of grid cells decoded correctly (PPA), percent",
               lambda i: grids.pixel_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True, gap="difference"),
    MetricSpec("object_pixel_accuracy", "higher",
               "accuracy over cells where prediction or target is non-background (Obj-PPA), percent",
               lambda i: grids.object_pixel_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True,
               gap="difference"),
    MetricSpec("paper_ppa", "higher",
               "COGITAO App. G.2 as written: matching cells over the whole m x n padded canvas, padding "
               "included (padding counts right when predicted as padding; an image model's decoded grid always "
               "has the target's shape, so its padding is always right), percent",
               _on_paper_canvas("paper_ppa", grids.paper_pixel_accuracy), GRIDS, percent=True, gap="difference"),
    MetricSpec("paper_obj_ppa", "higher",
               "Obj-PPA as COGITAO's released code computes it: accuracy over the cells where the target is an "
               "object (extra predicted objects cost nothing), per sample, percent",
               lambda i: grids.released_object_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True,
               gap="difference"),
    MetricSpec("object_accuracy", "higher", "share of target objects reproduced exactly (cells and colors), percent",
               lambda i: objects.object_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True, gap="difference"),
    MetricSpec("color_accuracy", "higher", "same number of objects of every color (Compositional-ARC), percent",
               lambda i: objects.color_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True, gap="difference"),
    MetricSpec("shape_accuracy", "higher", "same number of objects of every shape (Compositional-ARC), percent",
               lambda i: objects.shape_accuracy(i.pred_grids, i.target_grids), GRIDS, percent=True, gap="difference"),
    MetricSpec("stubbornness", "lower", "OOD predictions equal to a training sequence applied to the input, percent",
               _stubbornness, (*GRIDS, "input_grids", "id_sequences"), percent=True),
):
    register(_spec)


def missing_inputs(spec: MetricSpec, inputs: MetricInputs) -> list[str]:
    """Human-readable names of the arguments `spec` needs but `inputs` lacks."""
    present = inputs.available()
    return [NEED_HINTS[need] for need in spec.needs if need not in present]


def check_computable(spec: MetricSpec, inputs: MetricInputs) -> None:
    missing = missing_inputs(spec, inputs)
    if missing:
        raise MetricInputError(f"metric {spec.name!r} needs {', '.join(missing)}")
