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
objects the sample's rule transforms: the objects its selector picks (every object when the task code
names no selector, as in COGITAO's studies), so a sequence whose net effect is the identity still has
its primitives. On a C-ARC episode the grammar that picks the query object is not in the sample, so
the moved objects are those the target changes: the query object (every C-ARC step changes an object)
and not the indicator, which no rule picks. Steps are COGITAO's transformations, C-ARC's on an
episode; an outcome whose steps leave the grid or overlap is no candidate. Objects are extracted
with the task config's connectivity (8 when it is not known, COGITAO's default). On a C-ARC episode
canvas (`vision_bench.tasks.carc.canvas`, the setup given by the evaluation), the query's slots are
cut out first, so the class describes the query.

Each class is a registered metric `error_<class>`: 1 when the sample falls in it (aggregates are
percentages of samples). They need the samples' own sequences (`sequences`); an empty sequence (SVIB's
scenes, where a relational rule over the objects' factors makes the target, and imported tasks), a
sequence that names an unregistered transformation (an extension not loaded) or a task code whose
selector cannot be read makes them unavailable (NaN, with a status line) instead of failing the evaluation.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from vision_bench.errors import TransformationError, UserError
from vision_bench.metrics.inputs import MetricInputError, as_drawn, as_grids, unpadded
from vision_bench.metrics.objects import color_counts, shape_counts
from vision_bench.metrics.registry import GRIDS, MetricInputs, metric
from vision_bench.registry import Registry
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.selectors import ALL_OBJECTS, Selector, select
from vision_bench.tasks.task_code import decode_selector
from vision_bench.tasks.transformations.base import Transformation
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
DEFAULT_CONNECTIVITY = 8
"""Object connectivity when the task config's is not known: COGITAO's default."""


class TaxonomyUnavailable(Exception):
    """The batch cannot be classified (an unregistered step name, an unreadable selector); says why."""


@dataclass(frozen=True)
class Outcomes:
    """The grids a partial composition of a sequence makes of one input."""

    primitive: tuple[np.ndarray, ...]
    level_1: tuple[np.ndarray, ...]


def _registry(episode: bool) -> Registry[Transformation]:
    return CARC_TRANSFORMATIONS if episode else TRANSFORMATIONS


def _apply_to(grid: np.ndarray, moved: list[GridObject], still: list[GridObject],
              names: Sequence[str], episode: bool) -> np.ndarray | None:
    """The grid with `names` applied to the `moved` objects, or None when a step is invalid."""
    results = []
    for obj in moved:
        for name in names:
            obj = _registry(episode)[name].transform(obj)
        top, left, bottom, right = obj.bbox
        if obj.n_cells == 0 or top < 0 or left < 0 or bottom > grid.shape[0] or right > grid.shape[1]:
            return None
        results.append(obj)
    cells = [(obj.top + r, obj.left + c) for obj in [*results, *still] for r, c in np.argwhere(obj.mask)]
    if len(cells) != len(set(cells)):
        return None
    return draw_objects(grid.shape, [*still, *results])


def _moved_flags(objects: list[GridObject], target_grid: np.ndarray, selector: Selector | None, episode: bool,
                 connectivity: int) -> tuple[bool, ...]:
    """Which objects the rule transforms: on an episode, those the target changes; else the selector's."""
    if episode:
        in_target = {(obj.top, obj.left, obj.pixels.tobytes()) for obj in extract_objects(target_grid, connectivity)}
        return tuple((obj.top, obj.left, obj.pixels.tobytes()) not in in_target for obj in objects)
    return select(ALL_OBJECTS if selector is None else selector, objects)


def partial_outcomes(input_grid: np.ndarray, target_grid: np.ndarray, sequence: Sequence[str], *,
                     selector: Selector | None = None, episode: bool = False,
                     connectivity: int = DEFAULT_CONNECTIVITY) -> Outcomes:
    """The primitive (one step) and level-1 (two steps, in order) outcomes of `sequence` on the
    objects the rule transforms (see the module docstring; `selector` None picks every object)."""
    objects = extract_objects(input_grid, connectivity)
    flags = _moved_flags(objects, target_grid, selector, episode, connectivity)
    moved = [obj for obj, flag in zip(objects, flags) if flag]
    still = [obj for obj, flag in zip(objects, flags) if not flag]

    def outcomes(size: int) -> tuple[np.ndarray, ...]:
        if len(sequence) <= size:
            return ()
        found = []
        for steps in itertools.combinations(range(len(sequence)), size):
            try:
                grid = _apply_to(input_grid, moved, still, [sequence[step] for step in steps], episode)
            except TransformationError:
                grid = None
            if grid is not None:
                found.append(grid)
        return tuple(found)

    return Outcomes(outcomes(1), outcomes(2))


def classify(input_grid: np.ndarray, prediction: np.ndarray, target: np.ndarray, sequence: Sequence[str], *,
             selector: Selector | None = None, episode: bool = False, connectivity: int = DEFAULT_CONNECTIVITY) -> str:
    """The class of one prediction (see the module docstring)."""
    prediction = np.asarray(prediction)
    if prediction.shape != target.shape or prediction.min(initial=0) < 0 or prediction.max(initial=0) > 9:
        return "format"
    if np.array_equal(prediction, target):
        return "correct"
    if np.array_equal(prediction, input_grid):
        return "no_transformation"
    outcomes = partial_outcomes(input_grid, target, sequence, selector=selector, episode=episode,
                                connectivity=connectivity)
    if any(np.array_equal(prediction, grid) for grid in outcomes.primitive):
        return "primitive"
    if any(np.array_equal(prediction, grid) for grid in outcomes.level_1):
        return "level_1"
    if color_counts(prediction) == color_counts(target):
        return "invalid_position" if shape_counts(prediction) == shape_counts(target) else "invalid_shape"
    return "other"


def query_view(input_grid: np.ndarray, prediction: np.ndarray, target: np.ndarray,
               setup: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input, prediction, target) of the query of a C-ARC episode canvas of `setup`; as given when
    `setup` is None (no episode) or the grids are not that setup's canvas."""
    shape = canvas.canvas_shape(setup) if setup is not None else None
    if shape is None or not tuple(target.shape) == tuple(prediction.shape) == tuple(input_grid.shape) == shape:
        return input_grid, prediction, target
    query_in, query_out = canvas.query_slots(setup)  # type: ignore[arg-type]
    return canvas.crop(input_grid, query_in), canvas.crop(prediction, query_out), canvas.crop(target, query_out)


def _selectors(task_codes: torch.Tensor | None, count: int, episode_setup: str | None) -> list[Selector | None]:
    """Each sample's selector, read from its task code (None: every object; episodes carry none)."""
    if task_codes is None or episode_setup is not None:
        return [None] * count
    try:
        return [decode_selector(code) for code in task_codes.tolist()]
    except UserError as error:
        raise TaxonomyUnavailable(f"a task code's selector cannot be read ({error})") from None


def _check_names(sequences: Sequence[Sequence[str]], episode: bool) -> None:
    if any(len(sequence) == 0 for sequence in sequences):
        # SVIB's scenes and imported tasks: a relational rule, or nothing known, made the target
        raise TaxonomyUnavailable("a sample has no transformation sequence, so its partial outcomes are not defined")
    registry = _registry(episode)
    unknown = sorted({name for sequence in sequences for name in sequence if name not in registry})
    if unknown:
        where = "C-ARC's transformations" if episode else "the transformation registry"
        raise TaxonomyUnavailable(
            f"{', '.join(unknown)} not in {where}; load the extension that defines them to classify errors"
        )


def classify_batch(pred_grids: torch.Tensor, target_grids: torch.Tensor, input_grids: torch.Tensor,
                   sequences: Sequence[Sequence[str]], *, task_codes: torch.Tensor | None = None,
                   episode_setup: str | None = None, connectivity: int = DEFAULT_CONNECTIVITY) -> list[str]:
    """The class of every sample of a batch of decoded grids (long (B, h, w), padded with -1).

    `task_codes` (B, L) give each sample's selector; `episode_setup` ('3shot', 'systematicity') says
    the grids are C-ARC episode canvases of that setup. Raises `TaxonomyUnavailable` when a step name
    is not registered or a selector cannot be read."""
    pred = as_grids(pred_grids, "pred_grids", predicted=True).cpu().numpy()
    target = as_grids(target_grids, "target_grids").cpu().numpy()
    inputs = as_grids(input_grids, "input_grids").cpu().numpy()
    if not len(pred) == len(target) == len(inputs) == len(sequences):
        raise MetricInputError(
            f"error taxonomy: {len(pred)} predictions, {len(target)} targets, {len(inputs)} inputs and "
            f"{len(sequences)} sequences; pass one of each per sample"
        )
    episode = episode_setup is not None
    _check_names(sequences, episode)
    selectors = _selectors(task_codes, len(pred), episode_setup)
    classes = []
    for pred_grid, target_grid, input_grid, sequence, selector in zip(pred, target, inputs, sequences, selectors):
        real = unpadded(target_grid)
        predicted = as_drawn(pred_grid[: real.shape[0], : real.shape[1]]).astype(np.int64)
        view = query_view(unpadded(input_grid), predicted, real, episode_setup)
        classes.append(classify(*view, sequence, selector=selector, episode=episode, connectivity=connectivity))
    return classes


def _batch_classes(inputs: MetricInputs) -> list[str] | str:
    """The batch's classes, computed once for the seven metrics; a string says why they are unavailable."""
    if inputs.error_classes is None:
        pred, target = inputs.grid_pair()
        try:
            inputs.error_classes = classify_batch(
                pred, target, inputs.input_grids, inputs.sequences,  # type: ignore[arg-type]
                task_codes=inputs.task_codes, episode_setup=inputs.episode_setup,
                connectivity=inputs.connectivity or DEFAULT_CONNECTIVITY,
            )
        except TaxonomyUnavailable as reason:
            inputs.error_classes = f"unavailable: error taxonomy: {reason}"
    return inputs.error_classes


def _class_metric(name: str) -> None:
    """Register `error_<name>`: 1 for the samples whose prediction falls in class `name`."""

    def indicator(inputs: MetricInputs) -> torch.Tensor:
        classes = _batch_classes(inputs)
        _, target = inputs.grid_pair()
        if isinstance(classes, str):
            inputs.status[f"error_{name}"] = classes
            return torch.full((target.shape[0],), float("nan"), dtype=torch.float64, device=target.device)
        return torch.tensor([float(found == name) for found in classes], dtype=torch.float64, device=target.device)

    words = name.replace("_", " ").replace("level 1", "level-1")
    metric(f"error_{name}", "lower", f"C-ARC error taxonomy: prediction of class '{words}' (paper 001, 5.2), percent",
           needs=(*GRIDS, "input_grids", "sequences"), label=f"C-ARC error: {words} (%)",
           short_label=SHORT_LABELS[name], percent=True)(indicator)


for _name in ERROR_CLASSES:
    _class_metric(_name)
