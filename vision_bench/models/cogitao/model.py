"""`cogitao:resnet`, `cogitao:vanilla-tf`, `cogitao:grid-tf`, `cogitao:pl-tf`, `cogitao:llada`: COGITAO's five
baselines as its authors released them (ktroyan/visualreasoning, the ResNet, Vanilla-TF, Grid-TF, PL-TF and LLaDA
of paper 000's Tables 1-2; LLaDA from its branch `features/llada`).

A model reads the input on a square canvas of cells and predicts one of its preset's classes per canvas cell
(`Preset`): ResNet, Vanilla-TF and LLaDA the ten colours and padding (`grid_io.CLASSES`, 11) on a canvas of `grid_size`
cells, the grid in its top-left corner padded right and bottom; Grid-TF and PL-TF also COGITAO's visual tokens
(`visual_tokens.VT_CLASSES`, 15) on a canvas of `grid_size` + 2 cells with the grid's borders and a newline column
(`visual_tokens.visual_token_canvas`). The target grid is laid out on the same canvas, so the model also predicts
the padding and the visual tokens.

A preset is either an encoder (`resnet`, `vanilla_tf`, `grid_tf`) giving one vector per cell, read by COGITAO's
MLP head (`grid_io.cell_head`), trained with cross-entropy over every canvas cell (padding and visual tokens
included, `beforearc_model.py:327-333`) and predicting each cell's argmax; or a body (`grid_io.ClassBody`:
`pl_tf.PonderingLoopedBody`, `llada.LLaDABody`) that brings its own loss and its own prediction (PL-TF halts at a
drawn loop step; LLaDA unmasks the target in 32 steps). `forward` returns (B, K, G, G) class
scores whose argmax is the prediction: the logits of an encoder preset, a body's predicted classes one-hot.
`predict_grids` is the predicted classes cropped to each sample's input grid (COGITAO's transformations keep the
grid size), padding and visual tokens predicted inside it as `NO_COLOUR`; `predict` draws that grid with the
render spec as the data draws its targets, no colour as background.

Option `input`: `grid` reads `batch['input_grid']` one-hot on the canvas (training sets `grid_size` to the
experiment's largest grid, COGITAO's canvas, when it is left unset: `canvas_option`); `image` (ResNet,
Vanilla-TF and Grid-TF) reads the rendered `batch['input']`, one patch per cell (a convolution of kernel = stride =
the cell's pixels), on a canvas of image_size / K cells; everything after that first layer is the same, except that
Grid-TF's margin holds the visual tokens of a full canvas and its object ids are all 0
(`visual_tokens.ImageCanvasStem`: the image tells neither where a grid ends nor which cells form an object).
PL-TF and LLaDA read grids only: PL-TF's looped body reads the visual-token canvas as classes, and LLaDA's cells
are tokens of one table shared with its target. Task conditioning (`task_conditioning`): the task
code's tokens after the cell tokens (Vanilla-TF, Grid-TF, PL-TF, as COGITAO's), before the input's (LLaDA); FiLM
on every residual block's output (ResNet, the project's: COGITAO's ResNet received no task information, so a
comparison with its Table 1 leaves the ResNet unconditioned).
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
    PAD_CLASS,
    ClassBody,
    cell_head,
    cell_size,
    cell_stem,
    crop_to_shapes,
    on_canvas,
    one_hot,
)
from vision_bench.models.cogitao.grid_tf import GridTransformerEncoder
from vision_bench.models.cogitao.llada import LLaDABody
from vision_bench.models.cogitao.pl_tf import PonderingLoopedBody
from vision_bench.models.cogitao.resnet import STEM_WIDTH, ResNetEncoder, film_channels
from vision_bench.models.cogitao.vanilla_tf import WIDTH, VanillaTransformerEncoder
from vision_bench.models.cogitao.visual_tokens import MARGIN, VT_CLASSES, ImageCanvasStem, visual_token_canvas
from vision_bench.models.conditioning import check_task_code
from vision_bench.models.drawing import draw_grids, render_spec_of
from vision_bench.models.options import FamilyOptions, SharedOptions, check_from_scratch, option, positive_int
from vision_bench.models.svib import input_grids
from vision_bench.registry import unknown_name_message


@dataclass(frozen=True)
class Preset:
    """What a preset reads and predicts: its classes per cell, whether its canvas has COGITAO's visual tokens
    (side grid_size + MARGIN), whether it reads images (`input=image`), and the name of its training loss."""

    classes: int
    visual_tokens: bool
    images: bool
    loss: str = "cross_entropy"


PRESETS = {
    "resnet": Preset(CLASSES, visual_tokens=False, images=True),
    "vanilla-tf": Preset(CLASSES, visual_tokens=False, images=True),
    "grid-tf": Preset(VT_CLASSES, visual_tokens=True, images=True),
    "pl-tf": Preset(VT_CLASSES, visual_tokens=True, images=False, loss="pondernet"),
    "llada": Preset(CLASSES, visual_tokens=False, images=False, loss="masked_diffusion"),
}


@dataclass(frozen=True)
class CogitaoOptions(FamilyOptions):
    input: str = option(
        "grid", "grid: the input grid's cells, one-hot; image (resnet, vanilla-tf, grid-tf): the rendered input image, "
        "one patch per cell (render layout cell:K:top-left)")
    grid_size: int | None = option(
        None, "the largest grid side, the side of the square canvas of cells the grids are padded to (+ 2 for the "
        "visual tokens of grid-tf and pl-tf); None: for grid input the experiment's largest grid when training builds "
        f"the model, else {DEFAULT_GRID_SIZE} (ARC's largest); for image input image_size / K")

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise UnknownNameError(unknown_name_message("cogitao input", str(self.input), INPUTS))
        if self.grid_size is not None:
            positive_int(self.grid_size, "grid_size")


@MODELS.register(
    "cogitao",
    "COGITAO's released baselines: its full-resolution ResNet, its Vanilla Transformer, its Grid Transformer (visual "
    "tokens, object and 2D positions, RoPE, registers), its looped PonderNet Transformer over one token per grid "
    "cell, or its masked-diffusion LLaDA, predicting each cell's class; input=grid reads the input grid, "
    "input=image (resnet, vanilla-tf, grid-tf) the rendered image",
)
class CogitaoModel(TrainableModel):
    """COGITAO's baseline over a canvas of cells: a cell stem, an encoder and the per-cell MLP head, or a body
    with its own loss and prediction (module docstring)."""

    family = "cogitao"
    usage = "cogitao:<resnet|vanilla-tf|grid-tf|pl-tf|llada>"
    example_backbone = "resnet"
    test_backbone = "resnet"
    options = CogitaoOptions
    options_hint = "it takes input (grid or image) and grid_size"

    def __init__(self, preset: str, shared: SharedOptions, options: CogitaoOptions) -> None:
        name = f"cogitao:{preset}"
        if preset not in PRESETS:
            raise UnknownNameError(unknown_name_message("cogitao preset", preset, PRESETS))
        spec = PRESETS[preset]
        check_from_scratch(name, shared, like="COGITAO's baselines do", predicts=(
            f"predicts one of {spec.classes} classes per grid cell and trains with its own loss against the target "
            "grid"))
        if options.input == "image" and not spec.images:
            made = ("its cells are tokens of the table its target is written in" if preset == "llada" else
                    "its looped body reads the visual-token canvas as classes")
            raise ConfigError(f"{name} reads grids only: {made}; use input=grid, or cogitao:resnet / "
                              "cogitao:vanilla-tf / cogitao:grid-tf on images")
        super().__init__(preset, shared)
        self.head = "cells"
        self.input_kind = options.input
        self.render_spec = render_spec_of(shared.render_spec)
        self.classes = spec.classes
        self.visual_tokens = spec.visual_tokens
        self.loss_name = spec.loss
        self.cell_size, self.grid_size = self._canvas(options.grid_size)
        self.side = self.grid_size + MARGIN if spec.visual_tokens else self.grid_size
        self.body: ClassBody | None = None
        if preset == "pl-tf":
            self.body = PonderingLoopedBody(self.side, self.task_vocab_size)
        elif preset == "llada":
            self.body = LLaDABody(self.side, self.task_vocab_size)
        else:
            self.encoder = self._encoder(preset)
            self.classifier = cell_head(self.classes)

    def _encoder(self, preset: str) -> nn.Module:
        """The encoder of a preset without a body, its first layer a `cell_stem` of the input."""
        if preset == "resnet":
            return ResNetEncoder(cell_stem(self.input_kind, STEM_WIDTH, self.cell_size),
                                 self.task_film(film_channels()))
        if preset == "vanilla-tf":
            return VanillaTransformerEncoder(cell_stem(self.input_kind, WIDTH, self.cell_size, self.classes),
                                             self.grid_size, self.task_vocab_size)
        if self.input_kind == "image":
            return GridTransformerEncoder(ImageCanvasStem(WIDTH, self.cell_size, self.grid_size), self.side,
                                          self.task_vocab_size, objects=False)
        return GridTransformerEncoder(cell_stem("grid", WIDTH, 1, self.classes), self.side, self.task_vocab_size)

    @classmethod
    def canvas_option(cls, options: Mapping[str, Any]) -> str | None:
        """`grid_size` for grid input left without one: COGITAO pads to the experiment's largest grid."""
        if options.get("input", "grid") == "grid" and options.get("grid_size") is None:
            return "grid_size"
        return None

    def _canvas(self, grid_size: int | None) -> tuple[int, int]:
        """(cell size in pixels, the largest grid side in cells): 1 and `grid_size` for grid input; for image input
        the render spec's cell and image_size / cell, which `grid_size` may only repeat."""
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

    def _grid_canvas(self, grids: torch.Tensor, what: str) -> torch.Tensor:
        """(B, h, w) grids padded with -1 -> the preset's (B, side, side) canvas of classes."""
        if self.visual_tokens:
            return visual_token_canvas(grids, self.grid_size, what, self._fix())
        return on_canvas(grids, self.grid_size, what, self._fix())

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        """The input grids on the canvas (grid input) or the input images (image input)."""
        if self.input_kind == "image":
            return batch_tensor(batch, "input", self.name)
        return self._grid_canvas(input_grids(batch, self.name), "input")

    def _fix(self) -> str:
        if self.input_kind == "grid":
            return f"create {self.name} with a larger grid_size (now {self.grid_size})"
        return f"input=image reads image_size / cell size = {self.grid_size} cells; render larger images"

    def check_inputs(self, inputs: torch.Tensor) -> None:
        if self.input_kind == "image":
            super().check_inputs(inputs)
            return
        side, last = self.side, self.classes - 1
        if inputs.ndim != 3 or inputs.shape[1:] != (side, side) or inputs.dtype not in (torch.int64, torch.int32):
            raise ConfigError(f"{self.name} reads (B, {side}, {side}) integer canvases of classes 0..{last}, "
                              f"got {inputs.dtype} {tuple(inputs.shape)}")
        if bool(((inputs < 0) | (inputs > last)).any()):  # on CUDA, one_hot would fail with a device assert
            raise ConfigError(f"{self.name}'s canvas cells must be classes 0..{last}; check the input grids")

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        """Checked inputs (`batch_inputs`) -> class scores (B, classes, side, side) over the canvas: the logits, or a
        body's predicted classes one-hot."""
        self.check_inputs(inputs)
        code = None
        if self.task_vocab_size is not None:
            code = check_task_code(task_code, inputs.shape[0], self.task_vocab_size, self.name, self.task_code_length)
        return self.raw_output(inputs, code)

    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        if self.body is not None:
            return one_hot(self.body.predict_classes(inputs.long(), task_code), self.classes)
        cells = one_hot(inputs.long(), self.classes) if self.input_kind == "grid" else inputs
        logits = self.classifier(self.encoder(cells, task_code))  # (B, side * side, classes), row-major
        return logits.transpose(1, 2).reshape(inputs.shape[0], self.classes, self.side, self.side)

    def class_loss(self, inputs: torch.Tensor, target: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """The preset's loss on checked inputs against the target canvas: the body's, else cross-entropy over every
        canvas cell."""
        if self.body is not None:
            return self.body.loss(inputs.long(), target, task_code)
        return F.cross_entropy(self.raw_output(inputs, task_code).float(), target)

    def predict_classes(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """(B, side, side) long predicted classes of checked inputs: the body's, else the argmax of the logits."""
        if self.body is not None:
            return self.body.predict_classes(inputs.long(), task_code)
        return self.raw_output(inputs, task_code).argmax(dim=1)

    def training_loss(self, batch: Batch) -> torch.Tensor:
        """The preset's loss against the target grid laid out on the canvas as the input is."""
        inputs, task_code = self._inputs(batch)
        self.check_inputs(inputs)
        targets = batch_tensor(batch, "target_grid", self.name).to(inputs.device, non_blocking=True)
        return self.class_loss(inputs, self._grid_canvas(targets, "target"), task_code)

    @torch.no_grad()
    def predict_grids(self, batch: Batch) -> torch.Tensor:
        """(B, h, w) long: the predicted class of each cell of each sample's input grid (`grid_shape`), -1 beyond
        it; padding or a visual token predicted inside a grid is 10, `NO_COLOUR`."""
        inputs, task_code = self._inputs(batch)
        self.check_inputs(inputs)
        classes = self.predict_classes(inputs, task_code).clamp(max=PAD_CLASS)
        return crop_to_shapes(classes, batch_tensor(batch, "grid_shape", self.name))

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        """`predict_grids` drawn with the render spec exactly as the data draws targets (no colour as background)."""
        return self.predict_with_grids(batch)[0]

    @torch.no_grad()
    def predict_with_grids(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(the drawn prediction, `predict_grids`) from one prediction of the grids."""
        if self.render_spec is None:
            raise ConfigError(f"{self.name} draws its predicted grids with render_spec, the dataset's RenderSpec; "
                              "pass render_spec (training and evaluation pass the dataset's)")
        grids = self.predict_grids(batch)
        shapes = batch_tensor(batch, "grid_shape", self.name).tolist()
        drawn = [as_drawn(grid[:height, :width]) for grid, (height, width) in zip(grids.cpu().numpy(), shapes)]
        return draw_grids(drawn, self.render_spec, batch), grids

    def details(self) -> dict[str, Any]:
        return {**super().details(), "loss": self.loss_name, "input": self.input_kind, "grid_size": self.grid_size,
                "cell_size": self.cell_size if self.input_kind == "image" else None, "classes": self.classes,
                "canvas": self.side}


__all__ = ["PRESETS", "CogitaoModel", "CogitaoOptions"]
