"""Predicted images back to grids, so that the object-aware metrics can score image models.

A thin wrapper over `render.decode.decode_batch(images, spec, grid_shapes, seeds)` (per image the
same as `decode(image, spec, grid_shape, seed=seed)`) that returns grids in the layout every grid
metric takes: long (B, h, w) padded with -1.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from render.spec import RenderSpec
from vision_bench.metrics.inputs import PAD, MetricInputError, as_images


def decode_predictions(
    images: torch.Tensor, spec: RenderSpec, grid_shapes: torch.Tensor | Sequence[Sequence[int]],
    *, seeds: Sequence[int] | None = None,
) -> torch.Tensor:
    """Decode each (3, H, W) image in [0, 1] with `spec` at its grid shape (the target's); pad with -1."""
    from render.decode import decode_batch

    images = as_images(images, "images", check_range=False)  # clamped below
    shapes = torch.as_tensor(grid_shapes).reshape(-1, 2).tolist()
    if len(shapes) != images.shape[0] or (seeds is not None and len(seeds) != images.shape[0]):
        raise MetricInputError(
            f"{images.shape[0]} images need as many grid shapes (got {len(shapes)}) and seeds"
        )
    pixels = (images.clamp(0, 1) * 255).round_().to(torch.uint8).permute(0, 2, 3, 1).contiguous().cpu().numpy()
    height = max(h for h, _ in shapes)
    width = max(w for _, w in shapes)
    decoded = decode_batch(pixels, spec, shapes, seeds=[None] * len(shapes) if seeds is None else list(seeds))
    grids = torch.full((len(shapes), height, width), PAD, dtype=torch.long)
    for index, (grid, (h, w)) in enumerate(zip(decoded, shapes)):
        grids[index, :h, :w] = torch.as_tensor(grid, dtype=torch.long)
    return grids.to(images.device)
