"""Object-level grid metrics: exact objects, Compositional-ARC color and shape accuracy, stubbornness.

Inputs are decoded grids as long (B, h, w) tensors padded with -1. Each sample is cropped to the
real size of its target grid (the prediction to the same size) and scored in numpy; the result
is a float64 tensor (B,) on the grids' device.

- `object_accuracy`: objects are 8-connected components of non-background cells, several colors
  allowed (`vision_bench.tasks.grid.extract_objects`); a target object counts as found when the
  prediction holds the identical object: same cells, same colors, same place, nothing attached.
  A target without objects scores 1 when the prediction is blank too, else 0.
- `color_accuracy` / `shape_accuracy` (Compositional-ARC, appendix D.1): objects are 8-connected
  cells of *one* color; 1 when, for every color (resp. every normalized shape: the cell set
  translated to its top-left corner), prediction and target hold the same number of objects.
- `stubbornness` (COGITAO G.4): 1 when the prediction equals some in-distribution sequence applied
  to the input; meant for OOD samples. A sequence that cannot be applied to that input matches nothing.
  With `exclude_identity`, a sequence that leaves that input unchanged matches nothing either: when
  training holds such a sequence (mirror then mirror is the identity), copying the input would otherwise
  count as stubborn, and a model that learned nothing would score 100%.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from scipy import ndimage

from vision_bench.errors import TransformationError
from vision_bench.metrics.inputs import MetricInputError, as_drawn, as_grids, matching_grids, unpadded
from vision_bench.tasks.grid import GridObject, component_labels, extract_objects

SequenceApplier = Callable[[np.ndarray, Sequence[str]], np.ndarray]


def cropped_pairs(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(prediction, target) numpy grids per sample, both cut to the target's real size (`NO_COLOUR` read as
    background: `as_drawn`)."""
    pred, target, _ = matching_grids(pred_grids, target_grids)
    for pred_grid, target_grid in zip(pred.cpu().numpy(), target.cpu().numpy()):
        real = unpadded(target_grid)
        yield as_drawn(pred_grid[: real.shape[0], : real.shape[1]]), real


def _per_sample(values: Iterable[float], grids: object) -> torch.Tensor:
    device = grids.device if isinstance(grids, torch.Tensor) else None
    return torch.tensor(list(values), dtype=torch.float64, device=device)


def _object_key(obj: GridObject) -> tuple[int, int, tuple[int, int], bytes]:
    return obj.top, obj.left, obj.pixels.shape, obj.pixels.tobytes()


def objects_found(pred: np.ndarray, target: np.ndarray) -> float:
    """Fraction of the target's objects that appear unchanged in the prediction."""
    wanted = [_object_key(obj) for obj in extract_objects(target)]
    if not wanted:
        return float(not pred.any())
    present = {_object_key(obj) for obj in extract_objects(pred)}
    return sum(key in present for key in wanted) / len(wanted)


def single_color_objects(grid: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(color, bounding-box mask) of every 8-connected set of cells sharing one color, color by color.

    These are Compositional-ARC's objects; labelling each color alone separates touching colors.
    """
    objects = []
    for color in np.unique(grid[grid != 0]):
        _, labels = component_labels(grid == color, 8)
        for index, slices in enumerate(ndimage.find_objects(labels), start=1):
            if slices is not None:
                objects.append((int(color), labels[slices] == index))
    return objects


def color_counts(grid: np.ndarray) -> Counter[int]:
    """Number of single-color objects of each color."""
    return Counter(color for color, _ in single_color_objects(grid))


def shape_counts(grid: np.ndarray) -> Counter[tuple[tuple[int, int], bytes]]:
    """Number of single-color objects of each normalized shape (cell set anchored at its top-left)."""
    return Counter((mask.shape, mask.tobytes()) for _, mask in single_color_objects(grid))


def object_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Per sample: fraction of target objects reproduced exactly."""
    return _per_sample((objects_found(p, t) for p, t in cropped_pairs(pred_grids, target_grids)), target_grids)


def color_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Per sample: 1 when every color has as many objects in the prediction as in the target."""
    pairs = cropped_pairs(pred_grids, target_grids)
    return _per_sample((float(color_counts(p) == color_counts(t)) for p, t in pairs), target_grids)


def shape_accuracy(pred_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """Per sample: 1 when every normalized shape has as many objects in the prediction as in the target."""
    pairs = cropped_pairs(pred_grids, target_grids)
    return _per_sample((float(shape_counts(p) == shape_counts(t)) for p, t in pairs), target_grids)


def _matches(apply: SequenceApplier, grid: np.ndarray, sequence: Sequence[str], pred: np.ndarray,
             exclude_identity: bool = False) -> bool:
    try:
        result = np.asarray(apply(grid, list(sequence)))
    except TransformationError:
        return False
    if exclude_identity and result.shape == grid.shape and np.array_equal(result, grid):
        return False
    return result.shape == pred.shape and bool(np.array_equal(result, pred))


def stubbornness(
    pred_grids: torch.Tensor,
    target_grids: torch.Tensor,
    input_grids: torch.Tensor,
    id_sequences: Iterable[Sequence[str]],
    *,
    apply_sequence: SequenceApplier | None = None,
    exclude_identity: bool = False,
) -> torch.Tensor:
    """Per OOD sample: 1 when the prediction equals an in-distribution sequence applied to the input (with
    `exclude_identity`, only a sequence that changes that input counts).

    `apply_sequence(grid, names) -> grid` defaults to `vision_bench.tasks.transformations.apply_sequence`.
    """
    sequences = sorted({tuple(sequence) for sequence in id_sequences})
    if not sequences:
        raise MetricInputError("id_sequences is empty; pass the transformation sequences of the training split")
    if apply_sequence is None:
        from vision_bench.tasks.transformations import apply_sequence as default_applier

        apply_sequence = default_applier
    inputs = as_grids(input_grids, "input_grids")
    if inputs.shape[0] != target_grids.shape[0]:
        raise MetricInputError(f"input_grids holds {inputs.shape[0]} grids but target_grids {target_grids.shape[0]}")
    values = [
        float(any(_matches(apply_sequence, unpadded(grid), sequence, pred, exclude_identity) for sequence in sequences))
        for grid, (pred, _) in zip(inputs.cpu().numpy(), cropped_pairs(pred_grids, target_grids))
    ]
    return _per_sample(values, target_grids)
