"""Render padded grid batches with torch on the grids' device (how training draws its batches).

`render_grids` gives the numpy renderer's pixels divided by 255: the same placements (cell labels
from `render.raster.placement`), color tables, antialias rounding and blur kernels, evaluated
with tensor gathers. Blur taps are summed in float32 without convolutions, so TF32 never changes
the result; it stays within 1/255 of OpenCV's fixed-point blur and is exact without blur.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from render.filters import blur_kernel
from render.grid import MAX_SIDE, GridError
from render.raster import LINE, Placement, color_tables, placements
from render.spec import RenderSpec, SpecError, check_seed


def render_grids(
    grids: torch.Tensor, spec: RenderSpec, *, seeds: Sequence[int] | None = None
) -> torch.Tensor:
    """(N, h, w) integer grids padded with -1 -> (N, 3, H, W) float32 in [0, 1] on the same device.

    A grid's real shape is where it is not -1 (padding fills the rows below and the columns to
    the right, as `vision_bench.data.collate` pads). Image i uses seeds[i] (default: i).
    """
    shapes = _grid_shapes(grids)
    count = len(shapes)
    seeds = list(range(count)) if seeds is None else [check_seed(s) for s in seeds]
    if len(seeds) != count:
        raise SpecError(f"render_grids got {count} grids but {len(seeds)} seeds; give one seed per grid")
    if count == 0:
        return torch.zeros((0, 3, *spec.size), device=grids.device)
    device = grids.device
    places = _placements(shapes, spec, seeds)
    rows = torch.from_numpy(np.stack([p.rows for p in places]).astype(np.int64)).to(device)
    cols = torch.from_numpy(np.stack([p.cols for p in places]).astype(np.int64)).to(device)
    heights = torch.tensor([h for h, _ in shapes], device=device)[:, None]
    widths = torch.tensor([w for _, w in shapes], device=device)[:, None]
    image_index = torch.arange(count, device=device)[:, None, None]
    row_cell, col_cell = torch.minimum(rows, heights - 1), torch.minimum(cols, widths - 1)
    cells = grids[image_index, row_cell[:, :, None], col_cell[:, None, :]].long()
    line = (rows == heights + 1)[:, :, None] | (cols == widths + 1)[:, None, :]
    margin = (rows == heights)[:, :, None] | (cols == widths)[:, None, :]
    labels = torch.where(margin, 0, torch.where(line, LINE, cells))
    tables = torch.from_numpy(color_tables(spec, seeds).astype(np.float32)).to(device)
    images = tables[image_index, labels].permute(0, 3, 1, 2)
    images = _downsample(images, spec.antialias)
    kernel = blur_kernel(spec.blur)
    if kernel is not None:
        images = _blur(images, torch.tensor(kernel, dtype=torch.float32, device=device))
    return (images / 255).contiguous()


def _placements(shapes: list[tuple[int, int]], spec: RenderSpec, seeds: list[int]) -> list[Placement]:
    """Each image's placement, computed per grid shape in one call."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, shape in enumerate(shapes):
        groups.setdefault(shape, []).append(i)
    places: list[Placement] = [None] * len(shapes)  # type: ignore[list-item]
    for shape, members in groups.items():
        for i, place in zip(members, placements(shape, spec, [seeds[i] for i in members])):
            places[i] = place
    return places


def _grid_shapes(grids: torch.Tensor) -> list[tuple[int, int]]:
    """Each grid's (h, w) from its -1 padding; GridError if values or padding are malformed."""
    integer = isinstance(grids, torch.Tensor) and not grids.dtype.is_floating_point and grids.dtype != torch.bool
    if not integer or grids.ndim != 3:
        described = f"{grids.dtype} of shape {tuple(grids.shape)}" if isinstance(grids, torch.Tensor) else type(grids)
        raise GridError(f"grids must be an (N, h, w) integer tensor padded with -1, got {described}")
    if grids.numel() and (grids.min() < -1 or grids.max() > 9):
        raise GridError("grids: values must be 0-9 inside each grid and -1 as padding")
    valid = grids >= 0
    heights, widths = valid[:, :, 0].sum(1), valid[:, 0, :].sum(1)
    rows = torch.arange(grids.shape[1], device=grids.device)[None, :, None] < heights[:, None, None]
    cols = torch.arange(grids.shape[2], device=grids.device)[None, None, :] < widths[:, None, None]
    expected = rows & cols
    bad = (valid != expected).flatten(1).any(1) | (heights < 1) | (heights > MAX_SIDE) | (widths > MAX_SIDE)
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise GridError(
            f"grids[{i}]: not a top-left-aligned grid of 1..{MAX_SIDE} cells a side with -1 padding to "
            "the bottom and right"
        )
    return list(zip(heights.tolist(), widths.tolist()))


def _downsample(images: torch.Tensor, factor: int) -> torch.Tensor:
    """Antialiasing as `render.raster` does it: factor x factor block means, rounded half up."""
    if factor == 1:
        return images
    area = factor * factor
    sums = torch.nn.functional.avg_pool2d(images, factor, divisor_override=1)
    return torch.div(sums + area // 2, area, rounding_mode="floor")


def _reflect_101(length: int, radius: int, device: torch.device) -> torch.Tensor:
    """Source indices for positions -radius .. length + radius - 1 under OpenCV's BORDER_REFLECT_101."""
    position = torch.arange(-radius, length + radius, device=device)
    if length == 1:
        return torch.zeros_like(position)
    period = 2 * (length - 1)
    position = position.abs() % period
    return torch.where(position >= length, period - position, position)


def _blur(images: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """Separable blur with reflect-101 borders, then rounding to whole pixel values like OpenCV."""
    radius = (len(kernel) - 1) // 2
    height, width = images.shape[-2:]
    padded = images.index_select(2, _reflect_101(height, radius, images.device))
    vertical = kernel[0] * padded[:, :, :height]
    for k in range(1, len(kernel)):  # tap by tap, in order: the rounding below matches OpenCV's sums
        vertical = vertical + kernel[k] * padded[:, :, k : k + height]
    padded = vertical.index_select(3, _reflect_101(width, radius, images.device))
    blurred = kernel[0] * padded[:, :, :, :width]
    for k in range(1, len(kernel)):
        blurred = blurred + kernel[k] * padded[:, :, :, k : k + width]
    return torch.floor(blurred + 0.5).clamp(0, 255)
