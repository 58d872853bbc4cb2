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
- `stubbornness` (COGITAO App. G.4: STBN = 100/N x sum over the N OOD samples of 1[some in-distribution
  sequence tau has Y_hat_k = tau(X_k)]): 1 when the prediction equals some in-distribution sequence applied
  to the input; meant for OOD samples. A sequence that cannot be applied to that input matches nothing.
  A sample is NaN, left out of the mean, when its target equals its input (its own sequence is the identity
  there: `unchanged_samples`) *and* some training sequence leaves that input unchanged too: then the correct
  answer is that training sequence's answer and would count as stubborn (a departure from G.4's N, in
  docs/fidelity.md). A sample whose target equals its input but whose input no training sequence leaves as it is
  still counts: a prediction equal to a training sequence's answer there is stubborn, a copy of the input is not.
  With `exclude_identity` (`stubbornness_strict`), a sequence that leaves that input unchanged matches nothing
  either: when training holds such a sequence (mirror then mirror is the identity), copying the input would
  otherwise count as stubborn, and a model that learned nothing would score 100%. No sample is NaN there: a
  correct answer equal to the input matches no counted sequence.
"""

from __future__ import annotations

import math
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


def _applied(apply: SequenceApplier, grid: np.ndarray, sequence: Sequence[str]) -> np.ndarray | None:
    """`sequence` applied to `grid`, or None where it cannot be applied (it then matches nothing)."""
    try:
        return np.asarray(apply(grid, list(sequence)))
    except TransformationError:
        return None


def _same(first: np.ndarray, second: np.ndarray) -> bool:
    return first.shape == second.shape and bool(np.array_equal(first, second))


def _checked_inputs(input_grids: torch.Tensor, target_grids: torch.Tensor) -> torch.Tensor:
    """`input_grids` checked as grids, one per target."""
    inputs = as_grids(input_grids, "input_grids")
    if inputs.shape[0] != target_grids.shape[0]:
        raise MetricInputError(f"input_grids holds {inputs.shape[0]} grids but target_grids {target_grids.shape[0]}")
    return inputs


def unchanged_samples(target_grids: torch.Tensor, input_grids: torch.Tensor) -> list[bool]:
    """Per sample: whether its target equals its input at their real sizes, i.e. its own sequence is the identity
    on that input (`stubbornness` leaves such a sample out where a training sequence leaves the input unchanged
    too)."""
    targets = as_grids(target_grids, "target_grids")
    inputs = _checked_inputs(input_grids, targets)
    return [_same(unpadded(grid), unpadded(target)) for grid, target in zip(inputs.cpu(), targets.cpu())]


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
    `exclude_identity`, only a sequence that changes that input counts). Without `exclude_identity`, NaN when the
    target equals the input and some in-distribution sequence leaves that input unchanged too (a correct answer
    would count as stubborn); with it, never NaN.

    `apply_sequence(grid, names) -> grid` defaults to `vision_bench.tasks.transformations.apply_sequence`.
    """
    sequences = sorted({tuple(sequence) for sequence in id_sequences})
    if not sequences:
        raise MetricInputError("id_sequences is empty; pass the transformation sequences of the training split")
    if apply_sequence is None:
        from vision_bench.tasks.transformations import apply_sequence as default_applier

        apply_sequence = default_applier
    inputs = _checked_inputs(input_grids, target_grids)
    values = [_stubborn(apply_sequence, sequences, unpadded(grid), pred, target, exclude_identity)
              for grid, (pred, target) in zip(inputs.cpu().numpy(), cropped_pairs(pred_grids, target_grids))]
    return _per_sample(values, target_grids)


def _stubborn(apply: SequenceApplier, sequences: Sequence[Sequence[str]], grid: np.ndarray, pred: np.ndarray,
              target: np.ndarray, exclude_identity: bool) -> float:
    """One sample's stubbornness: 1 or 0; NaN (paper form only) when its target equals its input and a training
    sequence leaves that input unchanged too, so that its correct answer would count as stubborn."""
    results = [result for result in (_applied(apply, grid, sequence) for sequence in sequences) if result is not None]
    keeps_input = [_same(result, grid) for result in results]
    if not exclude_identity and any(keeps_input) and _same(grid, target):
        return math.nan
    return float(any(_same(result, pred) for result, keeps in zip(results, keeps_input, strict=True)
                     if not (exclude_identity and keeps)))
