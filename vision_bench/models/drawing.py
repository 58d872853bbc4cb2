"""Grids drawn as the data draws its targets: how `ground_truth` and the models that predict grids (the
cogitao family) turn their grids into the image every model's `predict` returns.

Drawing follows `vision_bench.data`: numpy's renderer on the CPU, `render.torch_backend` on any other device
(the device of the batch's 'input' images), each sample with its batch's render seed, so that a grid equal to
the target grid gives the target image exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from render.spec import RenderSpec
from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError


def render_spec_of(value: Any) -> RenderSpec | None:
    """The `render_spec` option as a `RenderSpec` (it may be given as its dict); None when unset."""
    if value is None or isinstance(value, RenderSpec):
        return value
    if isinstance(value, Mapping):
        return RenderSpec.from_dict(value)
    raise ConfigError(f"render_spec must be a RenderSpec or its dict, got {type(value).__name__}")


def draw_grids(grids: Sequence[np.ndarray], spec: RenderSpec, batch: Batch) -> torch.Tensor:
    """One unpadded grid (values 0-9) per sample -> (B, 3, H, W) float in [0, 1], drawn with `spec` and the
    batch's 'render_seed' (else seeds 0..B-1) on the device of its 'input' images (else the CPU)."""
    seeds = batch["render_seed"].tolist() if "render_seed" in batch else None
    device = batch["input"].device if "input" in batch else torch.device("cpu")
    if device.type == "cpu":
        from render.raster import render_batch
        from vision_bench.data.images import batch_tensor as image_batch

        return image_batch(render_batch(list(grids), spec, seeds))
    from render.torch_backend import render_grids
    from vision_bench.data.collate import pad_grids

    height = max(grid.shape[0] for grid in grids)
    width = max(grid.shape[1] for grid in grids)
    padded = pad_grids([torch.from_numpy(grid.astype(np.int64)) for grid in grids], height, width)
    return render_grids(padded.to(device), spec, seeds=seeds)


__all__ = ["draw_grids", "render_spec_of"]
