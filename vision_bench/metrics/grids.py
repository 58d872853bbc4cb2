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

The paper's own numbers come from two more definitions, for comparison with them. `paper_pixel_accuracy`
is G.2 as written (`on_canvas`): every cell of the m x n canvas the grids are padded to (COGITAO pads
with -1 at the top-left to the experiment's largest grid) counts, padding included, and a padding
cell is right when the prediction is padding there too. `released_object_accuracy` is Obj-PPA as
COGITAO's released code computes it (arcworld/metrics.py, `non_white_pixel_accuracy`): the accuracy
over the cells where the target is an object, so extra objects in the prediction cost nothing. G.3
read literally cannot be what the paper reports: a mismatched cell always has a non-zero side
(padding is -1), so it equals 1 - G.2 PPA, while Table 3 of appendix H shows an Obj-PPA of 0.859
beside a PPA of 0.983.
"""

from __future__ import annotations

import torch

from vision_bench.metrics.inputs import PAD, MetricInputError, matching_grids


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


def on_canvas(
    pred_grids: torch.Tensor, target_grids: torch.Tensor, canvas: tuple[int, int] | None
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Both batches checked and laid on the m x n `canvas`, padded with -1 (and cropped to it).

    Without `canvas` the batch's own size is the canvas when no target grid in it is padded (every
    grid has that size); otherwise the canvas is unknown and the result is None.
    """
    pred, target, valid = matching_grids(pred_grids, target_grids)
    if canvas is None:
        return (pred, target) if bool(valid.all()) else None
    height, width = canvas
    if bool(valid[:, height:].any()) or bool(valid[:, :, width:].any()):
        raise MetricInputError(
            f"canvas {height}x{width} is smaller than a target grid; give the size of the largest grid"
        )
    laid = []
    for grids in (pred, target):
        full = torch.full((grids.shape[0], height, width), PAD, dtype=grids.dtype, device=grids.device)
        rows, cols = min(height, grids.shape[1]), min(width, grids.shape[2])
        full[:, :rows, :cols] = grids[:, :rows, :cols]
        laid.append(full)
    return laid[0], laid[1]


def paper_pixel_accuracy(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """COGITAO G.2 as written: matching cells over all m x n cells of the canvas, padding included."""
    return (pred == target).flatten(1).double().mean(dim=1)


def released_object_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Obj-PPA as COGITAO's code computes it: correct cells among those where the target is an object (> 0),
    per sample (the release pools a batch); 0 for a target without object cells, as the release returns."""
    pred, target, _ = matching_grids(pred_grids, target_grids)
    objects = target > 0
    count = objects.flatten(1).sum(dim=1)
    correct = (objects & (pred == target)).flatten(1).sum(dim=1)
    return correct.double() / count.clamp(min=1)
