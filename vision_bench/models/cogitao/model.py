"""`cogitao:resnet`, `cogitao:vanilla-tf`: COGITAO's baselines as its authors released them (ktroyan/visualreasoning,
the ResNet and Vanilla-TF of paper 000's Tables 1-2), on grids or on images.

A model reads the input on a square canvas of cells (`grid_io`), encodes it with its body (`resnet`,
`vanilla_tf`) to one EMBED_DIM-wide vector per cell, and COGITAO's MLP head (`grid_io.cell_head`) gives each
cell's logits of the `CLASSES` (the ten colours and padding): `forward` returns (B, CLASSES, G, G). It trains with
cross-entropy over every canvas cell against the target grid padded to the canvas with the padding class, as
COGITAO's loss (padding cells included, `beforearc_model.py:327-333`). `predict_grids` is the argmax cropped to
each sample's input grid (COGITAO's transformations keep the grid size), the padding class left as `NO_COLOUR`;
`predict` draws that grid with the render spec as the data draws its targets, no colour as background.

Option `input`: `grid` reads `batch['input_grid']` one-hot on a canvas of `grid_size` cells (training sets it to
the experiment's largest grid, COGITAO's canvas, when it is left unset: `canvas_option`); `image` reads the rendered
`batch['input']`, one patch per cell (a convolution of kernel = stride = the cell's pixels), on a canvas of
image_size / K cells; everything after that first layer is the same. Task conditioning (`task_conditioning`):
the task code's tokens after the cell tokens (Vanilla-TF, as COGITAO's); FiLM on every residual block's output
(ResNet, the project's: COGITAO's ResNet received no task information, so a comparison with its Table 1 leaves the
ResNet unconditioned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.metrics.inputs import as_drawn
from vision_bench.models.base import MODELS, TrainableModel, batch_tensor
from vision_bench.models.cogitao.grid_io import (
    CLASSES,
    DEFAULT_GRID_SIZE,
    INPUTS,
    cell_head,
    cell_size,
    cell_stem,
    crop_to_shapes,
    on_canvas,
    one_hot,
)
from vision_bench.models.cogitao.resnet import STEM_WIDTH, ResNetEncoder, film_channels
from vision_bench.models.cogitao.vanilla_tf import WIDTH, VanillaTransformerEncoder
from vision_bench.models.conditioning import check_task_code
from vision_bench.models.drawing import draw_grids, render_spec_of
from vision_bench.models.options import FamilyOptions, SharedOptions, option, positive_int
from vision_bench.models.svib import input_grids
from vision_bench.registry import unknown_name_message

PRESETS = ("resnet", "vanilla-tf")


@dataclass(frozen=True)
class CogitaoOptions(FamilyOptions):
    input: str = option(
        "grid", "grid: the input grid's cells, one-hot; image: the rendered input image, one patch per cell (render "
        "layout cell:K:top-left)")
    grid_size: int | None = option(
        None, "the side of the square canvas of cells the grids are padded to; None: for grid input the experiment's "
        f"largest grid when training builds the model, else {DEFAULT_GRID_SIZE} (ARC's largest); for image input "
        "image_size / K")

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise UnknownNameError(unknown_name_message("cogitao input", str(self.input), INPUTS))
        if self.grid_size is not None:
            positive_int(self.grid_size, "grid_size")


@MODELS.register(
    "cogitao",
    "COGITAO's released baselines: its full-resolution ResNet or its Vanilla Transformer over one token per grid "
    "cell, predicting each cell's colour; input=grid reads the input grid, input=image the rendered image",
)
class CogitaoModel(TrainableModel):
    """A cell stem, COGITAO's encoder and its per-cell MLP head over the canvas (module docstring)."""

    family = "cogitao"
    usage = "cogitao:<resnet|vanilla-tf>"
    example_backbone = "resnet"
    test_backbone = "resnet"
    options = CogitaoOptions
    options_hint = "it takes input (grid or image) and grid_size"

    def __init__(self, preset: str, shared: SharedOptions, options: CogitaoOptions) -> None:
        name = f"cogitao:{preset}"
        if preset not in PRESETS:
            raise UnknownNameError(unknown_name_message("cogitao preset", preset, PRESETS))
        if shared.has_weights:
            raise ConfigError(f"{name} trains from scratch, as COGITAO's baselines do; remove pretrained and "
                              "pretrained_file")
        if shared.head != "rgb" or shared.loss is not None:
            raise ConfigError(f"{name} predicts one of {CLASSES} classes per grid cell and trains with cross-entropy "
                              "against the target grid; drop the options head and loss")
        super().__init__(preset, shared)
        self.head = "cells"
        self.input_kind = options.input
        self.render_spec = render_spec_of(shared.render_spec)
        self.cell_size, self.grid_size = self._canvas(options.grid_size)
        if preset == "resnet":
            stem = cell_stem(self.input_kind, STEM_WIDTH, self.cell_size)
            self.encoder: nn.Module = ResNetEncoder(stem, self.task_film(film_channels()))
        else:
            stem = cell_stem(self.input_kind, WIDTH, self.cell_size)
            self.encoder = VanillaTransformerEncoder(stem, self.grid_size, self.task_vocab_size)
        self.classifier = cell_head()

    @classmethod
    def canvas_option(cls, options: Mapping[str, Any]) -> str | None:
        """`grid_size` for grid input left without one: COGITAO pads to the experiment's largest grid."""
        if options.get("input", "grid") == "grid" and options.get("grid_size") is None:
            return "grid_size"
        return None

    def _canvas(self, grid_size: int | None) -> tuple[int, int]:
        """(cell size in pixels, canvas side in cells): 1 and `grid_size` for grid input; for image input the
        render spec's cell and image_size / cell, which `grid_size` may only repeat."""
        if self.input_kind == "grid":
            return 1, grid_size or DEFAULT_GRID_SIZE
        if self.render_spec is None:
            raise ConfigError(f"{self.name} with input=image needs render_spec (the dataset's RenderSpec, which "
                              "training and evaluation pass) for the size of its cells")
        cell = cell_size(self.render_spec, self.image_size, self.name)
        side = self.image_size // cell
        if grid_size not in (None, side):
            raise ConfigError(f"grid_size={grid_size} does not fit input=image: {self.image_size}-pixel images of "
                              f"{cell}-pixel cells hold {side} cells a side; leave grid_size unset")
        return cell, side

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        """The input grids on the canvas (grid input) or the input images (image input)."""
        if self.input_kind == "image":
            return batch_tensor(batch, "input", self.name)
        return on_canvas(input_grids(batch, self.name), self.grid_size, "input", self._fix())

    def _fix(self) -> str:
        if self.input_kind == "grid":
            return f"create {self.name} with a larger grid_size (now {self.grid_size})"
        return f"input=image reads image_size / cell size = {self.grid_size} cells; render larger images"

    def check_inputs(self, inputs: torch.Tensor) -> None:
        if self.input_kind == "image":
            super().check_inputs(inputs)
            return
        side = self.grid_size
        if inputs.ndim != 3 or inputs.shape[1:] != (side, side) or inputs.dtype not in (torch.int64, torch.int32):
            raise ConfigError(f"{self.name} reads (B, {side}, {side}) integer canvases of classes 0..{CLASSES - 1}, "
                              f"got {inputs.dtype} {tuple(inputs.shape)}")
        if bool(((inputs < 0) | (inputs >= CLASSES)).any()):  # on CUDA, one_hot would fail with a device assert
            raise ConfigError(f"{self.name}'s canvas cells must be classes 0..{CLASSES - 1}; check the input grids")

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        """Checked inputs (`batch_inputs`) -> logits (B, CLASSES, G, G) over the canvas."""
        self.check_inputs(inputs)
        code = None
        if self.task_vocab_size is not None:
            code = check_task_code(task_code, inputs.shape[0], self.task_vocab_size, self.name, self.task_code_length)
        return self.raw_output(inputs, code)

    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        cells = one_hot(inputs) if self.input_kind == "grid" else inputs
        logits = self.classifier(self.encoder(cells, task_code))  # (B, G * G, CLASSES), row-major
        return logits.transpose(1, 2).reshape(inputs.shape[0], CLASSES, self.grid_size, self.grid_size)

    def training_loss(self, batch: Batch) -> torch.Tensor:
        """Cross-entropy over every canvas cell against the target grid padded with the padding class."""
        inputs, task_code = self._inputs(batch)
        targets = batch_tensor(batch, "target_grid", self.name).to(inputs.device, non_blocking=True)
        target = on_canvas(targets, self.grid_size, "target", self._fix())
        return F.cross_entropy(self(inputs, task_code).float(), target)

    @torch.no_grad()
    def predict_grids(self, batch: Batch) -> torch.Tensor:
        """(B, h, w) long: the argmax class of each cell of each sample's input grid (`grid_shape`), -1 beyond it;
        the padding class predicted inside a grid stays 10, `NO_COLOUR`."""
        inputs, task_code = self._inputs(batch)
        classes = self(inputs, task_code).argmax(dim=1)
        return crop_to_shapes(classes, batch_tensor(batch, "grid_shape", self.name))

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        """`predict_grids` drawn with the render spec exactly as the data draws targets (no colour as background)."""
        if self.render_spec is None:
            raise ConfigError(f"{self.name} draws its predicted grids with render_spec, the dataset's RenderSpec; "
                              "pass render_spec (training and evaluation pass the dataset's)")
        grids = self.predict_grids(batch).cpu().numpy()
        shapes = batch_tensor(batch, "grid_shape", self.name).tolist()
        drawn = [as_drawn(grid[:height, :width]) for grid, (height, width) in zip(grids, shapes)]
        return draw_grids(drawn, self.render_spec, batch)

    def details(self) -> dict[str, Any]:
        return {**super().details(), "loss": "cross_entropy", "input": self.input_kind, "grid_size": self.grid_size,
                "cell_size": self.cell_size if self.input_kind == "image" else None, "classes": CLASSES}


__all__ = ["PRESETS", "CogitaoModel", "CogitaoOptions"]
