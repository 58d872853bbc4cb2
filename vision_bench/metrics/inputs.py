"""Checks and conversions shared by the metrics: image batches, padded grid batches, backgrounds.

Images are float (B, 3, H, W) in [0, 1] (uint8 batches are divided by 255). Grids are long
(B, h, w) padded with -1 outside each real grid, anchored at the top-left as `collate` pads them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from vision_bench.errors import UserError

PAD = -1
NO_COLOUR = 10
"""A predicted cell that holds no colour: a grid model (the cogitao family) predicted its padding class inside the
grid. It never equals a target cell, so every cell metric counts it wrong; the object metrics, which read objects of
the colours 0-9, read it as background (nothing drawn), as the model's drawn prediction shows it."""
RANGE_SLACK = 1e-4


class MetricInputError(UserError):
    """Images, grids or options handed to a metric that do not fit together."""


def as_images(images: torch.Tensor, name: str, *, check_range: bool = True) -> torch.Tensor:
    """`images` as float (B, 3, H, W) in [0, 1]; uint8 batches are scaled by 1/255.

    `check_range=False` skips the pass over the values (for callers that checked them already).
    """
    if not isinstance(images, torch.Tensor):
        raise MetricInputError(f"{name}: expected a torch tensor (B, 3, H, W), got {type(images).__name__}")
    if images.ndim != 4 or images.shape[1] != 3:
        raise MetricInputError(
            f"{name}: expected shape (B, 3, H, W), got {tuple(images.shape)}; "
            "move channels first with images.permute(0, 3, 1, 2)"
        )
    if images.dtype == torch.uint8:
        return images.float() / 255.0
    if not images.is_floating_point():
        raise MetricInputError(f"{name}: expected float in [0, 1] or uint8, got {images.dtype}")
    if check_range:
        low, high = torch.aminmax(images)
        check_value_range(float(low), float(high), name)
    return images


def check_value_range(low: float, high: float, name: str) -> None:
    """Raise unless values spanning [low, high] lie in [0, 1] (within `RANGE_SLACK`) and are finite."""
    if low < -RANGE_SLACK or high > 1 + RANGE_SLACK or not np.isfinite(low + high):
        raise MetricInputError(
            f"{name}: values span [{low:.4g}, {high:.4g}]; images must lie in [0, 1] (clamp model outputs)"
        )


def matching_images(
    first: torch.Tensor, second: torch.Tensor, names: tuple[str, str], *, check_range: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both batches checked by `as_images` and required to have the same shape."""
    a = as_images(first, names[0], check_range=check_range)
    b = as_images(second, names[1], check_range=check_range)
    if a.shape != b.shape:
        raise MetricInputError(
            f"{names[0]} has shape {tuple(a.shape)} but {names[1]} has {tuple(b.shape)}; "
            "render both at the same size"
        )
    return a, b.to(a.device)


def as_grids(grids: torch.Tensor, name: str, *, predicted: bool = False) -> torch.Tensor:
    """`grids` as a long (B, h, w) tensor with values -1 (padding) .. 9, and `NO_COLOUR` in `predicted` grids."""
    if not isinstance(grids, torch.Tensor):
        grids = torch.as_tensor(np.asarray(grids))
    if grids.ndim != 3 or grids.is_floating_point() or grids.dtype == torch.bool:
        raise MetricInputError(
            f"{name}: expected an integer tensor (B, h, w) padded with -1, got {grids.dtype} {tuple(grids.shape)}"
        )
    grids = grids.long()
    highest = NO_COLOUR if predicted else 9
    if grids.numel() and (int(grids.min()) < PAD or int(grids.max()) > highest):
        extra = f", {NO_COLOUR} for no colour" if predicted else ""
        raise MetricInputError(
            f"{name}: cells must be 0-9 (or -1 for padding{extra}), got {int(grids.min())}..{int(grids.max())}"
        )
    return grids


def lay_on_targets(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Grids a model predicted itself (long (B, h, w), padded with -1 beyond each of its grids) laid on the target
    batch's padded size: cropped or padded with -1, and a real target cell outside the predicted grid holds
    `NO_COLOUR` (the model predicted nothing there), so that the two line up as `matching_grids` asks."""
    height, width = target_grids.shape[1:]
    laid = torch.full((pred_grids.shape[0], height, width), PAD, dtype=torch.long, device=target_grids.device)
    rows, cols = min(height, pred_grids.shape[1]), min(width, pred_grids.shape[2])
    laid[:, :rows, :cols] = pred_grids[:, :rows, :cols].to(laid.device)
    return torch.where((target_grids != PAD) & (laid == PAD), NO_COLOUR, laid)


def matching_grids(
    pred: torch.Tensor, target: torch.Tensor, names: tuple[str, str] = ("pred_grids", "target_grids")
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(pred, target, valid): the batches checked, and the mask of real target cells.

    Every real target cell must hold a predicted color 0-9 (or `NO_COLOUR`): decode predictions with the
    target's grid shape so that the two line up.
    """
    pred = as_grids(pred, names[0], predicted=True)
    target = as_grids(target, names[1]).to(pred.device)
    if pred.shape != target.shape:
        raise MetricInputError(
            f"{names[0]} has shape {tuple(pred.shape)} but {names[1]} has {tuple(target.shape)}; "
            "pad both batches to the same size"
        )
    valid = target != PAD
    if not valid.flatten(1).any(dim=1).all():
        raise MetricInputError(f"{names[1]}: a sample holds no cells (all -1)")
    if bool((valid & (pred == PAD)).any()):
        raise MetricInputError(
            f"{names[0]}: padding (-1) inside the target grid; decode predictions with the target's grid shape"
        )
    return pred, target, valid


def as_drawn(grid: np.ndarray) -> np.ndarray:
    """A predicted grid as it is drawn: `NO_COLOUR` cells as background 0, uint8 (what the object metrics read, and
    what a grid model's `predict` draws)."""
    return np.where(grid == NO_COLOUR, 0, grid).astype(np.uint8)


def unpadded(grid: torch.Tensor | np.ndarray) -> np.ndarray:
    """One padded grid (h, w) cropped to its real top-left block, as a uint8 numpy array."""
    array = grid.cpu().numpy() if isinstance(grid, torch.Tensor) else np.asarray(grid)
    height = int((array[:, 0] != PAD).sum())
    width = int((array[0] != PAD).sum())
    return array[:height, :width].astype(np.uint8)


def background_colors(
    background_rgb: torch.Tensor | Sequence[float] | Sequence[int], batch: int, device: torch.device
) -> torch.Tensor:
    """(B, 3, 1, 1) float background colors from one (3,) or per-sample (B, 3) RGB.

    Integer values are read as 0-255, floating-point values as 0-1.
    """
    colors = torch.as_tensor(background_rgb)
    colors = colors.float() / 255.0 if not colors.is_floating_point() else colors.float()
    if colors.shape == (3,):
        colors = colors.expand(batch, 3)
    if colors.shape != (batch, 3):
        raise MetricInputError(
            f"background_rgb: expected shape (3,) or ({batch}, 3), got {tuple(colors.shape)}"
        )
    return colors.to(device).view(batch, 3, 1, 1)
