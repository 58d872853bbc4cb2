"""COGITAO's visual tokens: the canvas Grid-TF and PL-TF read and predict, and the object ids of Grid-TF's object
positional encoding (ktroyan/visualreasoning, `data/beforearc_data.py`).

With visual tokens a grid of h x w cells of the experiment's largest side M sits in the top-left corner of a canvas
of side M + 2 (`pad_with_2d_visual_tokens`, `beforearc_data.py:179-225`): X_END in column w of the grid's rows, Y_END
in row h under the grid's columns, XY_END at (h, w), NEWLINE in the last column of every row (below the grid too),
PAD everywhere else. The input and the target grid are both laid out this way, each with its own size
(`beforearc_data.py:307-312`), and the model predicts one of `VT_CLASSES` per canvas cell: the ten colours and the
five tokens (`beforearc_data.py:75-89`, `models/beforearc_model.py:830-837`).

The object ids (`object_ids`) are COGITAO's `create_object_grid` (`beforearc_data.py:15-50`), which runs ViTARC's
`generate_input_type_ids_multi` (`data/external/vitarc/obj_idx_utils.py:22-100`) on the whole input canvas, visual
tokens included (`beforearc_data.py:355-356`): the most frequent class is the background (id 0, the smallest class
on a tie); every other class present, in increasing order, is a binary mask whose outer contours OpenCV finds
(`cv2.findContours`, RETR_EXTERNAL, CHAIN_APPROX_SIMPLE: 8-connected regions, islands inside a hole dropped), and
each contour, in OpenCV's order, fills its whole bounding box with the next id from 1, later boxes overwriting
earlier ones. Inherited as released: when PAD is not the most frequent class (a grid filling most of the canvas),
its L-shaped region's box covers nearly the whole canvas and, PAD coming after the colours, overwrites their ids.
"""

from __future__ import annotations

import cv2
import numpy as np
import torch
from torch import nn

from vision_bench.models.cogitao.grid_io import PAD_CLASS, on_canvas

X_END = 11
"""Right of each grid row (COGITAO's X_ENDGRID)."""
Y_END = 12
"""Under each grid column (Y_ENDGRID)."""
XY_END = 13
"""The corner under and right of the grid (XY_ENDGRID)."""
NEWLINE = 14
"""The canvas's last column, every row (NL_GRID)."""
VT_CLASSES = 15
"""The ten colours, PAD and the four visual tokens."""
MARGIN = 2
"""The canvas side beyond the largest grid: a border column (or row) and the newline column."""


def visual_token_canvas(grids: torch.Tensor, grid_size: int, what: str, fix: str) -> torch.Tensor:
    """(B, h, w) grids padded with -1 -> (B, grid_size + MARGIN, grid_size + MARGIN) long classes, COGITAO's layout
    (module docstring) with each grid's own size; a `ConfigError` ending with `fix` when a grid exceeds grid_size."""
    side = grid_size + MARGIN
    canvas = torch.full((grids.shape[0], side, side), PAD_CLASS, dtype=torch.long, device=grids.device)
    canvas[:, :grid_size, :grid_size] = on_canvas(grids, grid_size, what, fix)
    inside = grids >= 0
    return with_end_tokens(canvas, inside.any(dim=2).sum(dim=1), inside.any(dim=1).sum(dim=1))


def with_end_tokens(canvas: torch.Tensor, heights: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
    """(B, S, S) classes with each grid's end tokens written around its `heights` x `widths` (B,) cells and NEWLINE
    in the last column (module docstring)."""
    side = canvas.shape[-1]
    heights, widths = heights[:, None, None], widths[:, None, None]
    rows = torch.arange(side, device=canvas.device)[None, :, None]
    cols = torch.arange(side, device=canvas.device)[None, None, :]
    canvas = torch.where((rows < heights) & (cols == widths), X_END, canvas)
    canvas = torch.where((rows == heights) & (cols < widths), Y_END, canvas)
    canvas = torch.where((rows == heights) & (cols == widths), XY_END, canvas)
    return torch.where(cols == side - 1, NEWLINE, canvas)


class ImageCanvasStem(nn.Module):
    """The project's visual-token canvas of an image (Grid-TF with `input=image`): (B, 3, G K, G K) images of
    K-pixel cells -> (B, channels, G + MARGIN, G + MARGIN). Each of the G x G cells is one token, a convolution of
    kernel = stride = K (as `grid_io.cell_stem` of an image); the margin holds the visual tokens of a full G x G grid
    (X_END, Y_END, XY_END, NEWLINE, PAD in the last row), a learned vector per token. The margin cannot mark where a
    smaller grid ends, since the image does not say it: the model reads that from the pixels (COGITAO's EnvGen grids
    fill the canvas, where the two layouts agree)."""

    layout: torch.Tensor
    margin: torch.Tensor

    def __init__(self, channels: int, cell: int, grid_size: int) -> None:
        super().__init__()
        self.grid_size = grid_size
        self.cells = nn.Conv2d(3, channels, cell, stride=cell)
        self.tokens = nn.Embedding(VT_CLASSES, channels)
        side = grid_size + MARGIN
        full = torch.full((1,), grid_size)
        layout = with_end_tokens(torch.full((1, side, side), PAD_CLASS), full, full)[0]
        margin = torch.ones((side, side), dtype=torch.bool)
        margin[:grid_size, :grid_size] = False
        self.register_buffer("layout", layout, persistent=False)
        self.register_buffer("margin", margin, persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        cells = nn.functional.pad(self.cells(images), (0, MARGIN, 0, MARGIN))
        margin = (self.tokens(self.layout) * self.margin[..., None]).permute(2, 0, 1)
        return cells + margin


def canvas_object_ids(canvas: np.ndarray) -> np.ndarray:
    """(S, S) classes -> (S, S) int32 object ids (module docstring)."""
    ids = np.zeros(canvas.shape, dtype=np.int32)
    background = np.bincount(canvas.ravel()).argmax()
    next_id = 1
    for value in np.unique(canvas):
        if value == background:
            continue
        mask = np.where(canvas == value, 255, 0).astype(np.uint8)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        for contour in contours:
            left, top, width, height = cv2.boundingRect(contour)
            ids[top:top + height, left:left + width] = next_id
            next_id += 1
    return ids


def object_ids(canvas: torch.Tensor) -> torch.Tensor:
    """(B, S, S) class canvases -> (B, S * S) long object ids, row-major, on the canvas's device (computed on the
    CPU with OpenCV, as COGITAO's data loader computes them)."""
    cells = canvas.detach().cpu().numpy()
    ids = np.stack([canvas_object_ids(sample).ravel() for sample in cells])
    return torch.from_numpy(ids).long().to(canvas.device, non_blocking=True)


__all__ = [
    "MARGIN",
    "ImageCanvasStem",
    "NEWLINE",
    "VT_CLASSES",
    "XY_END",
    "X_END",
    "Y_END",
    "canvas_object_ids",
    "object_ids",
    "visual_token_canvas",
    "with_end_tokens",
]
