"""Compositional-ARC's error taxonomy (paper 001, section 5.2, Tables 5-6) on decoded grids.

A wrong prediction of a sample whose transformation sequence is known falls in the first class
that fits, in the paper's order:

1. `format`: not a grid of the target's shape with cells 0-9;
2. `no_transformation`: the input unchanged;
3. `primitive`: one step of the sequence applied alone (sequences of 2 or more steps);
4. `level_1`: two steps applied, in the sequence's order (sequences of 3 or more steps);
5. `invalid_position`: every color and every normalized shape as in the target (C-ARC's color
   and shape accuracy both 1), so only positions are wrong;
6. `invalid_shape`: colors right, shapes wrong;
7. `other`: anything else (wrong number of objects, wrong colors).

A right prediction is `correct`. The partial outcomes (`partial_outcomes`) apply the steps to the
objects the sequence transforms: the input's objects that do not appear unchanged in the target
(so a C-ARC indicator, which no step moves, stays as it is; in COGITAO's tasks, every object).
Step names are looked up in C-ARC's transformations first, then in COGITAO's; an outcome whose
steps leave the grid or overlap is no candidate. This applies to any task whose record gives the
sequence, not only to C-ARC. On a C-ARC episode canvas (`vision_bench.tasks.carc.canvas`), the
query's slots are cut out first, so the class describes the query.

Each class is a registered metric `error_<class>`: 1 when the sample falls in it (aggregates are
percentages of samples); `error_distribution` gives the paper's Table 5 form, percentages of the
errors. They need the samples' own sequences (`sequences`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from vision_bench.errors import TransformationError
from vision_bench.metrics.inputs import MetricInputError, as_grids, unpadded
from vision_bench.metrics.objects import color_counts, shape_counts
from vision_bench.metrics.registry import GRIDS, MetricInputs, metric
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.transformations.carc import CARC_TRANSFORMATIONS
from vision_bench.tasks.transformations.registry import TRANSFORMATIONS

ERROR_CLASSES = (
    "format", "no_transformation", "primitive", "level_1", "invalid_position", "invalid_shape", "other",
)
"""The error classes, in the order they are tried."""
SHORT_LABELS = {
    "format": "Err-format", "no_transformation": "Err-none", "primitive": "Err-prim", "level_1": "Err-L1",
    "invalid_position": "Err-pos", "invalid_shape": "Err-shape", "other": "Err-other",
}
"""Column names of the error classes (one word each, as tables split on spaces)."""
CLASSES = ("correct", *ERROR_CLASSES)


@dataclass(frozen=True)
class Outcomes:
    """The grids a partial composition of a sequence makes of one input."""

    primitive: tuple[np.ndarray, ...]
    level_1: tuple[np.ndarray, ...]


def _transform(obj: GridObject, name: str) -> GridObject:
    registry = CARC_TRANSFORMATIONS if name in CARC_TRANSFORMATIONS else TRANSFORMATIONS
    return registry[name].transform(obj)


def _apply_to(grid: np.ndarray, moved: list[GridObject], still: list[GridObject],
              names: Sequence[str]) -> np.ndarray | None:
    """The grid with `names` applied to the `moved` objects, or None when a step is invalid."""
    results = []
    for obj in moved:
        for name in names:
            obj = _transform(obj, name)
        top, left, bottom, right = obj.bbox
        if obj.n_cells == 0 or top < 0 or left < 0 or bottom > grid.shape[0] or right > grid.shape[1]:
            return None
        results.append(obj)
    cells = [(obj.top + r, obj.left + c) for obj in [*results, *still] for r, c in np.argwhere(obj.mask)]
    if len(cells) != len(set(cells)):
        return None
    return draw_objects(grid.shape, [*still, *results])


def partial_outcomes(input_grid: np.ndarray, target_grid: np.ndarray, sequence: Sequence[str]) -> Outcomes:
    """The primitive (one step) and level-1 (two steps, in order) outcomes of `sequence` on the
    input's objects that the target changes."""
    objects = extract_objects(input_grid)
    in_target = {(obj.top, obj.left, obj.pixels.tobytes()) for obj in extract_objects(target_grid)}
    moved = [obj for obj in objects if (obj.top, obj.left, obj.pixels.tobytes()) not in in_target]
    still = [obj for obj in objects if (obj.top, obj.left, obj.pixels.tobytes()) in in_target]

    def outcomes(size: int) -> tuple[np.ndarray, ...]:
        if len(sequence) <= size:
            return ()
        found = []
        for steps in itertools.combinations(range(len(sequence)), size):
            try:
                grid = _apply_to(input_grid, moved, still, [sequence[step] for step in steps])
            except TransformationError:
                grid = None
            if grid is not None:
                found.append(grid)
        return tuple(found)

    return Outcomes(outcomes(1), outcomes(2))


def classify(input_grid: np.ndarray, prediction: np.ndarray, target: np.ndarray, sequence: Sequence[str]) -> str:
    """The class of one prediction (see the module docstring)."""
    prediction = np.asarray(prediction)
    if prediction.shape != target.shape or prediction.min(initial=0) < 0 or prediction.max(initial=0) > 9:
        return "format"
    if np.array_equal(prediction, target):
        return "correct"
    if np.array_equal(prediction, input_grid):
        return "no_transformation"
    outcomes = partial_outcomes(input_grid, target, sequence)
    if any(np.array_equal(prediction, grid) for grid in outcomes.primitive):
        return "primitive"
    if any(np.array_equal(prediction, grid) for grid in outcomes.level_1):
        return "level_1"
    if color_counts(prediction) == color_counts(target):
        return "invalid_position" if shape_counts(prediction) == shape_counts(target) else "invalid_shape"
    return "other"


def query_view(input_grid: np.ndarray, prediction: np.ndarray,
               target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input, prediction, target) of the query when the grids are a C-ARC episode canvas, else as given."""
    setup = canvas.setup_of_canvas(target.shape)
    if setup is None or prediction.shape != target.shape or input_grid.shape != target.shape:
        return input_grid, prediction, target
    query_in, query_out = canvas.query_slots(setup)
    return canvas.crop(input_grid, query_in), canvas.crop(prediction, query_out), canvas.crop(target, query_out)


def classify_batch(pred_grids: torch.Tensor, target_grids: torch.Tensor, input_grids: torch.Tensor,
                   sequences: Sequence[Sequence[str]]) -> list[str]:
    """The class of every sample of a batch of decoded grids (long (B, h, w), padded with -1)."""
    pred = as_grids(pred_grids, "pred_grids").cpu().numpy()
    target = as_grids(target_grids, "target_grids").cpu().numpy()
    inputs = as_grids(input_grids, "input_grids").cpu().numpy()
    if not len(pred) == len(target) == len(inputs) == len(sequences):
        raise MetricInputError(
            f"error taxonomy: {len(pred)} predictions, {len(target)} targets, {len(inputs)} inputs and "
            f"{len(sequences)} sequences; pass one of each per sample"
        )
    classes = []
    for pred_grid, target_grid, input_grid, sequence in zip(pred, target, inputs, sequences):
        real = unpadded(target_grid)
        predicted = pred_grid[: real.shape[0], : real.shape[1]].astype(np.int64)
        classes.append(classify(*query_view(unpadded(input_grid), predicted, real), sequence))
    return classes


def error_distribution(classes: Sequence[str]) -> dict[str, float]:
    """Percent of the wrong predictions in each error class (the paper's Table 5); NaN without errors."""
    counts = Counter(name for name in classes if name != "correct")
    total = sum(counts.values())
    return {name: 100.0 * counts[name] / total if total else float("nan") for name in ERROR_CLASSES}


def _class_metric(name: str) -> None:
    """Register `error_<name>`: 1 for the samples whose prediction falls in class `name`."""

    def indicator(inputs: MetricInputs) -> torch.Tensor:
        pred, target = inputs.grid_pair()
        if inputs.error_classes is None:  # shared by the seven metrics of one batch
            inputs.error_classes = classify_batch(pred, target, inputs.input_grids,  # type: ignore[arg-type]
                                                  inputs.sequences)  # type: ignore[arg-type]
        return torch.tensor([float(found == name) for found in inputs.error_classes], dtype=torch.float64,
                            device=target.device)

    words = name.replace("_", " ").replace("level 1", "level-1")
    metric(f"error_{name}", "lower", f"C-ARC error taxonomy: prediction of class '{words}' (paper 001, 5.2), percent",
           needs=(*GRIDS, "input_grids", "sequences"), label=f"C-ARC error: {words} (%)",
           short_label=SHORT_LABELS[name], percent=True)(indicator)


for _name in ERROR_CLASSES:
    _class_metric(_name)
