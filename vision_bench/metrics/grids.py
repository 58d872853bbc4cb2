"""Cell-level grid metrics (COGITAO appendix G): grid accuracy, per-pixel accuracy, object-pixel accuracy.

Inputs are decoded grids as long (B, h, w) tensors padded with -1; only the real cells of each
target grid count. Values are float64 fractions in [0, 1] per sample; aggregates report them x100.

Two deliberate differences from the paper's formulas:
- PPA counts the real cells of each grid, not the padded m x n canvas (padding would inflate it).
- Obj-PPA is an *accuracy over object cells*: correct cells among those where the prediction or
  the target is non-background. The paper's G.3 formula divides the error count by m x n, which
  is an error ratio over the whole canvas; an accuracy over the union is what its prose describes
  ("accuracy calculated only on non-background pixels"). When both grids are all background the
  union is empty and the value is 1 (nothing to get wrong).
"""

from __future__ import annotations

import torch

from vision_bench.metrics.inputs import matching_grids


def grid_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """1 where every real cell matches (exact grid match), else 0."""
    pred, target, valid = matching_grids(pred_grids, target_grids)
    return ((pred == target) | ~valid).flatten(1).all(dim=1).double()


def pixel_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Fraction of the real cells predicted correctly (PPA)."""
    pred, target, valid = matching_grids(pred_grids, target_grids)
    correct = ((pred == target) & valid).flatten(1).sum(dim=1)
    return correct.double() / valid.flatten(1).sum(dim=1)


def object_pixel_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Fraction correct over cells where prediction or target is non-background (Obj-PPA); 1 if there are none."""
    pred, target, valid = matching_grids(pred_grids, target_grids)
    union = valid & ((pred != 0) | (target != 0))
    count = union.flatten(1).sum(dim=1)
    correct = (union & (pred == target)).flatten(1).sum(dim=1)
    return torch.where(count > 0, correct.double() / count.clamp(min=1), torch.ones_like(count, dtype=torch.float64))
