"""What every cogitao model shares around its body: the canvas of cells, the two stems, the head, the predicted
grids, and what a body that brings its own loss and prediction gives the model (`ClassBody`).

COGITAO's models without visual tokens (its released code, ktroyan/visualreasoning: `data/beforearc_data.py`,
`models/beforearc_model.py`) read a grid padded to a fixed square canvas (right and bottom, with the padding
token 10), one token per cell, and predict one of `CLASSES` per cell: the ten colours and the padding class. The
canvas is `grid_size` cells a side for grid input; for image input it is the rendered image cut into cells, which
needs a render layout whose cells are whole K-pixel squares from the image's top-left corner (`cell_size`). Grid-TF
and PL-TF read COGITAO's visual-token canvas instead, 15 classes (`visual_tokens`).
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from render.spec import RenderSpec
from vision_bench.errors import ConfigError
from vision_bench.metrics.inputs import NO_COLOUR, PAD

CLASSES = 11
"""The ten colours and the padding class: COGITAO's 11 classes without visual tokens (`beforearc_model.py`
`num_classes = 10 + 1`)."""
PAD_CLASS = NO_COLOUR
"""The padding class, 10: after the colours; predicted inside a grid, it is the value the metrics read as no
colour."""
EMBED_DIM = 128
"""The encoders' output width (`embed_dim` of COGITAO's resnet.yaml and, at the paper's time, vit.yaml), the width
of the vector per cell that the head reads."""
HEAD_WIDTH = 128
"""The MLP head's hidden width (`hidden_dim` of COGITAO's configs/networks/heads/mlp.yaml)."""
DEFAULT_GRID_SIZE = 30
"""The canvas side for grid input when nothing sets it: ARC's largest grid. Training sets it to the experiment's
canvas, its largest grid (`CogitaoModel.canvas_option`), as COGITAO pads to the largest grid of the loaded splits."""
INPUTS = ("grid", "image")
"""What a cogitao model reads: the input grid's cells one-hot, or the rendered input image, one patch per cell."""
CELL_LAYOUT = "cell:K:top-left"


def on_canvas(grids: torch.Tensor, size: int, what: str, fix: str) -> torch.Tensor:
    """(B, h, w) grids padded with -1 -> (B, size, size) long classes: each grid in the top-left corner, the padding
    class elsewhere; a `ConfigError` ending with `fix` when a grid has cells beyond the canvas."""
    inside = grids >= 0
    row_ends = inside.any(dim=2).any(dim=0) * torch.arange(1, grids.shape[1] + 1, device=grids.device)
    column_ends = inside.any(dim=1).any(dim=0) * torch.arange(1, grids.shape[2] + 1, device=grids.device)
    height, width = torch.stack([row_ends.amax(), column_ends.amax()]).tolist()  # one transfer from the device
    if height > size or width > size:
        raise ConfigError(f"{what} grids of up to {height}x{width} cells do not fit the canvas of {size}x{size} "
                          f"cells; {fix}")
    canvas = torch.full((grids.shape[0], size, size), PAD_CLASS, dtype=torch.long, device=grids.device)
    rows, cols = min(size, grids.shape[1]), min(size, grids.shape[2])
    cells = grids[:, :rows, :cols].long()
    canvas[:, :rows, :cols] = torch.where(cells == PAD, PAD_CLASS, cells)
    return canvas


def one_hot(canvas: torch.Tensor, classes: int = CLASSES) -> torch.Tensor:
    """(B, G, G) classes -> (B, classes, G, G) float: COGITAO's `one_hot_encode` (`utility/rearc/utils.py`)."""
    return F.one_hot(canvas, classes).permute(0, 3, 1, 2).float()


def cell_size(spec: RenderSpec, image_size: int, model_name: str) -> int:
    """The side K in pixels of the cells that `spec` draws in (image_size, image_size) images, when it draws whole
    K-pixel squares from the top-left corner (layout cell:K:top-left, no jitter); else a one-line `ConfigError`."""
    layout = spec.layout
    jitter = spec.jitter
    moves = jitter is not None and (jitter.max_shift > 0 or jitter.scale != (1.0, 1.0))
    if layout.mode != "cell" or layout.anchor != "top-left" or moves or layout.cell_size is None:
        drawn = layout.mode if layout.mode != "cell" else f"cell:{layout.cell_size}:{layout.anchor}"
        raise ConfigError(
            f"{model_name} with input=image reads one patch per grid cell, so it needs the render layout "
            f"{CELL_LAYOUT} (whole K-pixel cells from the top-left corner) without jitter, but the render spec has "
            f"layout {drawn}{' and jitter' if moves else ''}; render with layout {CELL_LAYOUT} or use input=grid"
        )
    cell = layout.cell_size
    if spec.size != (image_size, image_size) or image_size % cell:
        raise ConfigError(
            f"{model_name} with input=image cuts {image_size}x{image_size} images into {cell}-pixel cells, but the "
            f"render spec draws {spec.size[0]}x{spec.size[1]} images; render square images of a multiple of {cell} "
            "pixels at the model's image_size"
        )
    return cell


def cell_stem(input_kind: str, channels: int, cell: int, classes: int = CLASSES) -> nn.Conv2d:
    """The layer that turns the input into one `channels`-wide vector per cell of the canvas: a 1x1 convolution
    of the one-hot cells (`classes` channels) with a bias (grid input: both of COGITAO's first layers), or a
    convolution of kernel = stride = the cell size over the image; PyTorch's initialisation, as COGITAO's."""
    if input_kind == "grid":
        return nn.Conv2d(classes, channels, 1)
    return nn.Conv2d(3, channels, cell, stride=cell)


def cell_head(classes: int = CLASSES, width: int = EMBED_DIM) -> nn.Sequential:
    """COGITAO's MLP head (`networks/heads/mlp.py` `get_mlp_head`, 2 layers, ReLU), applied to each cell's
    `width`-wide vector alone: Linear -> ReLU -> Linear to the `classes` logits; PyTorch's initialisation."""
    return nn.Sequential(nn.Linear(width, HEAD_WIDTH), nn.ReLU(), nn.Linear(HEAD_WIDTH, classes))


class ClassBody(Protocol):
    """A network that brings its own training loss and its own prediction of each canvas cell's class, for a
    preset whose prediction is not the argmax of one set of logits (PL-TF halts at a drawn step). Both methods
    take checked (B, G, G) long canvases of the preset's classes and the task code (B, L) (None when the model is
    not task-conditioned); the model has built `target` exactly as `inputs`, from the target grid."""

    def loss(self, inputs: torch.Tensor, target: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """The scalar training loss."""
        ...

    def predict_classes(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """(B, G, G) long: the predicted class of every canvas cell."""
        ...


def crop_to_shapes(classes: torch.Tensor, shapes: torch.Tensor) -> torch.Tensor:
    """(B, G, G) predicted classes -> (B, h, w) grids, (h, w) the largest of `shapes` (B, 2): each sample's classes
    within its own shape, -1 beyond it; the padding class stays (it is `NO_COLOUR`)."""
    shapes = shapes.to(classes.device)
    height, width = shapes.amax(dim=0).tolist()
    if height > classes.shape[1] or width > classes.shape[2]:
        raise ConfigError(f"the batch's grid_shape holds a grid of {height}x{width} cells, larger than the canvas of "
                          f"{classes.shape[1]}x{classes.shape[2]} cells the model predicted; check the dataset")
    rows = torch.arange(height, device=classes.device)[None, :, None] < shapes[:, 0, None, None]
    cols = torch.arange(width, device=classes.device)[None, None, :] < shapes[:, 1, None, None]
    return torch.where(rows & cols, classes[:, :height, :width], PAD)


__all__ = [
    "CELL_LAYOUT",
    "ClassBody",
    "CLASSES",
    "DEFAULT_GRID_SIZE",
    "EMBED_DIM",
    "HEAD_WIDTH",
    "INPUTS",
    "PAD_CLASS",
    "cell_head",
    "cell_size",
    "cell_stem",
    "crop_to_shapes",
    "on_canvas",
    "one_hot",
]
