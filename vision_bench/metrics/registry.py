"""The `METRICS` registry: every metric's name, direction, description, inputs, batched function,
and the metadata reports read (labels, percent display, gap, the tables that list it).

Each metric is one function decorated with `@metric(...)` below; `listed_in(listing)` gives the
metrics a table or plot shows, and `label` / `short_label` their titles. A metric function takes
one `MetricInputs` (the checked batch, with intermediate results such as the pixel-error sums
computed once and shared) and returns one value per sample.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

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
    sequences: Sequence[Sequence[str]] | None = None
    task_codes: torch.Tensor | None = None
    """Each sample's task code (B, L): the error taxonomy reads the rule's selector from it."""
    episode_setup: str | None = None
    """The C-ARC setup when the grids are episode canvases (the error taxonomy classifies the query)."""
    connectivity: int | None = None
    """How the task config extracts objects (4 or 8), for the error taxonomy; None: not known."""
    canvas: tuple[int, int] | None = None
    lpips: perceptual.LpipsLoad | None = None
    tolerance: float = pixel.PIXEL_TOLERANCE
    image_statistics: image_pass.ImageStatistics | None = None
    error_classes: list[str] | str | None = None
    """Each sample's C-ARC error class, computed once for the seven `error_*` metrics (a string: why
    they are unavailable)."""
    factor_scores: tuple[dict[str, torch.Tensor], str | None] | None = None
    """Each factor metric's per-sample values on SVIB's scenes, computed once for the five `factor_*` metrics, and
    why some are NaN (a target that is not a scene), or None."""
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
            *self.image_pair(), self.input_images,
            background=self.background, foreground_mask=self.foreground_mask, tolerance=self.tolerance,
            pixels="pixel_errors" in statistics, ssim="ssim" in statistics,
            check_range=True, names=("pred_images", "target_images", "input_images"),
        )

    @property
    def pixel_errors(self) -> pixel.PixelErrors:
        """Every pixel-metric sum."""
        statistics = _given(self.image_statistics, "image_statistics")
        return _given(statistics.pixel_errors, "pixel_errors")

    @property
    def ssim(self) -> torch.Tensor:
        """SSIM per sample."""
        statistics = _given(self.image_statistics, "image_statistics")
        return _given(statistics.ssim, "ssim")

    def image_pair(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(pred_images, target_images), which a metric that `needs` them is only called with."""
        return _given(self.pred_images, "pred_images"), _given(self.target_images, "target_images")

    def grid_pair(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(pred_grids, target_grids), which a metric that `needs` them is only called with."""
        return _given(self.pred_grids, "pred_grids"), _given(self.target_grids, "target_grids")


Value = TypeVar("Value")


def _given(value: Value | None, name: str) -> Value:
    """`value`, or `MetricInputError` naming the missing input (a metric called without its `needs`)."""
    if value is None:
        raise MetricInputError(f"this metric needs {NEED_HINTS.get(name, name)}")
    return value


Listing = Literal["evaluate", "bench", "report", "alpha_plot", "perturbation_study", "rank_study", "rank_reference"]
"""Where a metric is listed, besides `metrics.json` and the per-sample table (which hold every metric):
- evaluate: a column of `vision-bench evaluate`'s terminal table;
- bench: a column of `vision-bench bench`'s terminal summary, and a per-setting plot in its report;
- report: a Table 1 (ID | OOD | Delta per setting) in the bench report;
- alpha_plot: a plot against the OOD level alpha in the bench report (alpha studies);
- perturbation_study: a column of `vision-bench compare-metrics`' perturbation table;
- rank_study: a metric whose ranking of predictions `compare-metrics` checks against the references;
- rank_reference: a correctness reference of that check (GA, Obj-PPA)."""


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric. `needs`: `MetricInputs` fields it reads; `label` / `short_label`: its
    table title and column name; `percent`: aggregates report the mean x100; `cap`: aggregates
    clip values to this bound first; `gap`: how the ID/OOD generalization gap is formed (None: no
    gap, e.g. an OOD-only metric); `statistic`: the shared batch statistic it reads, which
    `compute_metrics` computes once for all metrics that read it; `listed_in`: the tables and plots
    that show it (see `Listing`); `rank`: its place there (lower first, ties in registry order);
    `score_default`: `vision-bench score` computes it unasked when it can give its `needs`."""

    name: str
    direction: Direction
    description: str
    function: Callable[[MetricInputs], torch.Tensor]
    needs: tuple[str, ...]
    label: str
    short_label: str
    percent: bool = False
    cap: float | None = None
    gap: GapKind | None = None
    statistic: Statistic | None = None
    listed_in: frozenset[Listing] = frozenset()
    rank: int = 100
    score_default: bool = True


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
    "sequences": "sequences (each sample's own transformation sequence)",
}

IMAGES = ("pred_images", "target_images")
GRIDS = ("pred_grids", "target_grids")
MetricFunction = Callable[[MetricInputs], torch.Tensor]


def metric(
    name: str,
    direction: Direction,
    description: str,
    *,
    needs: tuple[str, ...],
    label: str,
    short_label: str,
    percent: bool = False,
    cap: float | None = None,
    gap: GapKind | None = None,
    statistic: Statistic | None = None,
    listed_in: Collection[Listing] = (),
    rank: int = 100,
    score_default: bool = True,
) -> Callable[[MetricFunction], MetricFunction]:
    """Register the decorated per-sample function as metric `name` with its metadata (the metric
    registry's form of `Registry.register`: one decorator beside each definition)."""

    def decorate(function: MetricFunction) -> MetricFunction:
        spec = MetricSpec(
            name, direction, description, function, needs, label, short_label, percent=percent, cap=cap,
            gap=gap, statistic=statistic, listed_in=frozenset(listed_in), rank=rank, score_default=score_default,
        )
        METRICS.add(name, spec, description)
        return function

    return decorate


def listed_in(listing: Listing) -> tuple[str, ...]:
    """The metrics that `listing` shows, in order (`rank`, then registry order)."""
    names = METRICS.names()
    shown = [name for name in names if listing in METRICS[name].listed_in]
    return tuple(sorted(shown, key=lambda name: (METRICS[name].rank, names.index(name))))


def label(name: str) -> str:
    """The metric's table title, e.g. 'GA: grid accuracy (%)'; an unknown name is returned as is."""
    return METRICS[name].label if name in METRICS else name


def short_label(name: str) -> str:
    """The metric's column name, e.g. 'GA'; an unknown name is returned as is."""
    return METRICS[name].short_label if name in METRICS else name


HEADLINE: tuple[Listing, ...] = ("evaluate", "bench", "report", "perturbation_study")


@metric("mse", "lower", "mean squared error over the 3 x H x W values in [0, 1]", needs=IMAGES,
        label="MSE (pixel values in [0, 1])", short_label="MSE", gap="log_ratio", statistic="pixel_errors",
        listed_in=(*HEADLINE, "alpha_plot", "rank_study"), rank=2)
def mse(inputs: MetricInputs) -> torch.Tensor:
    return inputs.pixel_errors.mse


@metric("mse_sum", "lower", "squared error summed over the 3 x H x W values of each image (SVIB)", needs=IMAGES,
        label="MSE summed per image (SVIB)", short_label="SSE", gap="log_ratio", statistic="pixel_errors",
        listed_in=["rank_study"], rank=8)
def mse_sum(inputs: MetricInputs) -> torch.Tensor:
    return inputs.pixel_errors.mse_sum


@metric("psnr", "higher",
        f"peak signal-to-noise ratio in dB, data range 1 (aggregates cap +inf at {pixel.PSNR_CAP_DB:g})",
        needs=IMAGES, label="PSNR (dB)", short_label="PSNR", cap=pixel.PSNR_CAP_DB, gap="difference",
        statistic="pixel_errors", listed_in=("perturbation_study", "rank_study"), rank=6)
def psnr(inputs: MetricInputs) -> torch.Tensor:
    return inputs.pixel_errors.psnr


@metric("ssim", "higher", "structural similarity, Gaussian window 11, sigma 1.5, averaged over channels",
        needs=IMAGES, label="SSIM", short_label="SSIM", gap="difference", statistic="ssim",
        listed_in=(*HEADLINE, "rank_study"), rank=3)
def ssim(inputs: MetricInputs) -> torch.Tensor:
    return inputs.ssim


@metric("lpips", "lower",
        "LPIPS v0.1 (official lpips package), AlexNet backbone by default; NaN with the reason when its "
        "weights are absent",
        needs=IMAGES, label="LPIPS", short_label="LPIPS", gap="log_ratio",
        listed_in=(*HEADLINE, "alpha_plot", "rank_study"), rank=4)
def lpips(inputs: MetricInputs) -> torch.Tensor:
    images, targets = inputs.image_pair()
    load = inputs.lpips or perceptual.load_lpips(device=images.device)
    status = load.status if load.module is None else perceptual.size_problem(load.module, *images.shape[-2:])
    inputs.status["lpips"] = status or load.status
    if load.module is None or status is not None:
        return torch.full((images.shape[0],), float("nan"), device=images.device)
    return load.module(images, targets)


@metric("fg_mse", "lower", "MSE over pixels where the target or the input is not background",
        needs=(*IMAGES, "foreground"), label="FG-MSE", short_label="FG-MSE", gap="log_ratio",
        statistic="pixel_errors", listed_in=("report", "perturbation_study", "rank_study"), rank=5)
def fg_mse(inputs: MetricInputs) -> torch.Tensor:
    return inputs.pixel_errors.fg_mse


@metric("changed_mse", "lower", "MSE over pixels where the target differs from the input",
        needs=(*IMAGES, "input_images"), label="MSE over changed pixels", short_label="changed-MSE",
        gap="log_ratio", statistic="pixel_errors", listed_in=["rank_study"], rank=7)
def changed_mse(inputs: MetricInputs) -> torch.Tensor:
    return inputs.pixel_errors.changed_mse


@metric("grid_accuracy", "higher", "exact match of the decoded grid (GA), percent", needs=GRIDS,
        label="GA: grid accuracy (%)", short_label="GA", percent=True, gap="difference",
        listed_in=(*HEADLINE, "alpha_plot", "rank_reference"), rank=0)
def grid_accuracy(inputs: MetricInputs) -> torch.Tensor:
    return grids.grid_accuracy(*inputs.grid_pair())


@metric("pixel_accuracy", "higher", "share of grid cells decoded correctly (PPA), percent", needs=GRIDS,
        label="PPA: pixel accuracy (%)", short_label="PPA", percent=True, gap="difference")
def pixel_accuracy(inputs: MetricInputs) -> torch.Tensor:
    return grids.pixel_accuracy(*inputs.grid_pair())


@metric("object_pixel_accuracy", "higher",
        "accuracy over cells where prediction or target is non-background (Obj-PPA), percent", needs=GRIDS,
        label="Obj-PPA: object pixel accuracy (%)", short_label="Obj-PPA", percent=True, gap="difference",
        listed_in=("evaluate", "report", "perturbation_study", "rank_reference"), rank=1)
def object_pixel_accuracy(inputs: MetricInputs) -> torch.Tensor:
    return grids.object_pixel_accuracy(*inputs.grid_pair())


CANVAS_UNKNOWN = (
    "unavailable: the batch's grids are padded and no canvas size was given, so the paper's m x n canvas is unknown"
)


def _canvas_unknown(inputs: MetricInputs, name: str) -> torch.Tensor:
    """NaN per sample, with a status saying why: the paper's padded canvas is unknown."""
    inputs.status[name] = CANVAS_UNKNOWN
    _, target = inputs.grid_pair()
    return torch.full((target.shape[0],), float("nan"), dtype=torch.float64, device=target.device)


@metric("paper_ppa", "higher",
        "COGITAO App. G.2 as written: matching cells over the whole m x n padded canvas, padding "
        "included (padding counts right when predicted as padding; an image model's decoded grid always "
        "has the target's shape, so its padding is always right), percent",
        needs=GRIDS, label="PPA as in COGITAO App. G.2: over the padded canvas (%)", short_label="PPA (G.2)",
        percent=True, gap="difference", score_default=False)  # score decodes unpadded grids: there it equals PPA
def paper_ppa(inputs: MetricInputs) -> torch.Tensor:
    laid = grids.on_canvas(*inputs.grid_pair(), inputs.canvas)
    if laid is None:
        return _canvas_unknown(inputs, "paper_ppa")
    return grids.paper_pixel_accuracy(*laid)


@metric("paper_obj_ppa", "higher",
        "Obj-PPA as COGITAO's released code computes it: accuracy over the cells where the target is an "
        "object (extra predicted objects cost nothing), per sample, percent",
        needs=GRIDS, label="Obj-PPA as COGITAO's released code computes it: accuracy over target object cells (%)",
        short_label="Obj-PPA (COGITAO)", percent=True, gap="difference")
def paper_obj_ppa(inputs: MetricInputs) -> torch.Tensor:
    return grids.released_object_accuracy(*inputs.grid_pair())


@metric("object_accuracy", "higher", "share of target objects reproduced exactly (cells and colors), percent",
        needs=GRIDS, label="object accuracy (%)", short_label="ObjAcc", percent=True, gap="difference")
def object_accuracy(inputs: MetricInputs) -> torch.Tensor:
    return objects.object_accuracy(*inputs.grid_pair())


@metric("color_accuracy", "higher", "same number of objects of every color (Compositional-ARC), percent",
        needs=GRIDS, label="color accuracy (%)", short_label="ColorAcc", percent=True, gap="difference")
def color_accuracy(inputs: MetricInputs) -> torch.Tensor:
    return objects.color_accuracy(*inputs.grid_pair())


@metric("shape_accuracy", "higher", "same number of objects of every shape (Compositional-ARC), percent",
        needs=GRIDS, label="shape accuracy (%)", short_label="ShapeAcc", percent=True, gap="difference")
def shape_accuracy(inputs: MetricInputs) -> torch.Tensor:
    return objects.shape_accuracy(*inputs.grid_pair())


ALL_UNCHANGED = ("unavailable: every sample's target equals its input and a training sequence leaves that input "
                 "unchanged too, so a correct answer would count as stubborn and no sample is left to score")
"""The status of `stubbornness` on a batch (or split) whose every sample it leaves out (`objects.stubbornness`);
`stubbornness_strict` leaves none out."""


@metric("stubbornness", "lower", "OOD predictions equal to a training sequence applied to the input (COGITAO G.4), "
        "percent; a sample whose target equals its input is left out where a training sequence leaves that input "
        "unchanged too (its correct answer would count as stubborn)",
        needs=(*GRIDS, "input_grids", "id_sequences"), label="stubbornness (%)", short_label="Stubborn",
        percent=True)
def stubbornness(inputs: MetricInputs) -> torch.Tensor:
    values = objects.stubbornness(*inputs.grid_pair(), _given(inputs.input_grids, "input_grids"),
                                  _given(inputs.id_sequences, "id_sequences"))
    if values.numel() and bool(values.isnan().all()):
        inputs.status["stubbornness"] = ALL_UNCHANGED
    return values


@metric("stubbornness_strict", "lower", "stubbornness counting only the training sequences that change the input: "
        "a copy of the input is never stubborn (mirror then mirror in training is the identity), percent",
        needs=(*GRIDS, "input_grids", "id_sequences"), label="stubbornness, identity excluded (%)",
        short_label="Stubborn*", percent=True)
def stubbornness_strict(inputs: MetricInputs) -> torch.Tensor:
    return objects.stubbornness(*inputs.grid_pair(), _given(inputs.input_grids, "input_grids"),
                                _given(inputs.id_sequences, "id_sequences"), exclude_identity=True)


def missing_inputs(spec: MetricSpec, inputs: MetricInputs) -> list[str]:
    """Human-readable names of the arguments `spec` needs but `inputs` lacks."""
    present = inputs.available()
    return [NEED_HINTS[need] for need in spec.needs if need not in present]


def check_computable(spec: MetricSpec, inputs: MetricInputs) -> None:
    missing = missing_inputs(spec, inputs)
    if missing:
        raise MetricInputError(f"metric {spec.name!r} needs {', '.join(missing)}")
