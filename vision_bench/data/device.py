"""Rendering batches of grids where the model runs, so the data feed decodes no image files.

A batch collated from grid-only items (`render_on="device"`) gets its `input` and `target` images
drawn on the training device with the items' render seeds: by `render.torch_backend.render_grids`
on an accelerator, by the numpy renderer (`render.render_batch`, the reference the torch backend
matches) on the CPU, where it is the faster of the two. Batches that already hold images are only
moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch

from render.raster import render_batch
from render.spec import RenderSpec
from render.torch_backend import render_grids
from vision_bench.data.batch import Batch
from vision_bench.data.images import batch_tensor
from vision_bench.errors import DataError


def _cropped(grids: torch.Tensor, shapes: Sequence[Sequence[int]]) -> np.ndarray | list[np.ndarray]:
    """Padded (N, h, w) grids as numpy grids of their real shapes (one stacked array when all agree)."""
    array = grids.numpy()
    if len({tuple(shape) for shape in shapes}) == 1:
        height, width = shapes[0]
        return array[:, :height, :width]
    return [grid[:height, :width] for grid, (height, width) in zip(array, shapes)]


def _shapes(grids: torch.Tensor) -> list[list[int]]:
    """Each padded grid's (h, w): its rows and columns that are not -1."""
    valid = grids >= 0
    return torch.stack([valid[:, :, 0].sum(1), valid[:, 0, :].sum(1)], dim=1).tolist()


BACKENDS = ("auto", "torch", "numpy")


class GridBatchRenderer:
    """`renderer(batch)`: move a collated batch to `device` and draw missing images there.

    `backend="auto"` draws with numpy on the CPU and with torch elsewhere; "torch" or "numpy"
    force one (the pixels agree: exactly without blur, within 1/255 with blur).
    """

    def __init__(self, spec: RenderSpec, device: str | torch.device = "cpu", backend: str = "auto") -> None:
        if backend not in BACKENDS:
            raise DataError(f"unknown render backend {backend!r}; use one of {', '.join(BACKENDS)}")
        self.spec = spec
        self.device = torch.device(device)
        self.use_numpy = backend == "numpy" or (backend == "auto" and self.device.type == "cpu")

    def __call__(self, batch: Batch) -> Batch:
        moved = cast(Batch, {
            key: value.to(self.device, non_blocking=True) if isinstance(value, torch.Tensor) else value
            for key, value in batch.items()
        })
        if "input" in moved and "target" in moved:
            return moved
        if "input_grid" not in batch or "target_grid" not in batch:
            raise DataError("this batch has neither images nor grids; it cannot be rendered")
        count = batch["input_grid"].shape[0]
        seeds = batch["render_seed"].tolist() if "render_seed" in batch else list(range(count))
        grids = torch.cat([batch["input_grid"], batch["target_grid"]])
        if self.use_numpy:
            images = self._render_numpy(grids, batch, seeds * 2).to(self.device, non_blocking=True)
        else:
            images = render_grids(grids.to(self.device, non_blocking=True), self.spec, seeds=seeds * 2)
        moved["input"], moved["target"] = images[:count], images[count:]
        return moved

    def _render_numpy(self, grids: torch.Tensor, batch: Batch, seeds: list[int]) -> torch.Tensor:
        if "grid_shape" in batch and "target_grid_shape" in batch:
            shapes = torch.cat([batch["grid_shape"], batch["target_grid_shape"]]).tolist()
        else:
            shapes = _shapes(grids)
        pixels = render_batch(_cropped(grids, shapes), self.spec, seeds)
        return batch_tensor(pixels)


def to_device_batch(batch: Batch, spec: RenderSpec, device: str | torch.device = "cpu") -> Batch:
    """A collated batch on `device` with `input` / `target` images, drawn there if the items had none."""
    return GridBatchRenderer(spec, device)(batch)


__all__ = ["BACKENDS", "GridBatchRenderer", "to_device_batch"]
