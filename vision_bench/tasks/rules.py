"""Applying a rule to a grid: its transformation sequence to the objects its selector picks.

`apply_rule(grid, names, selector=None, connectivity=8) -> grid`: the objects `selector` picks
(`vision_bench.tasks.selectors`; None = every object, COGITAO's setting, the same grid as
`transformations.apply_sequence`) are transformed step by step, the others stay where they are.
It raises `TransformationError` when a step's constraints fail, an object leaves the grid or two
objects claim a cell. Together with `task_code.decode_selector` it recomputes a generated
sample's output from its input and task code, which is what a ground-truth baseline needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from vision_bench.errors import TransformationError
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects, validate_grid
from vision_bench.tasks.selectors import ALL_OBJECTS, select
from vision_bench.tasks.transformations import transform_objects


def apply_rule(grid: object, names: Iterable[str], selector: Any = None, connectivity: int = 8) -> np.ndarray:
    """`grid` with `names` applied to the objects `selector` picks (all when None); the others stay."""
    grid = validate_grid(grid)
    objects = extract_objects(grid, connectivity)
    picked = select(ALL_OBJECTS if selector is None else selector, objects)
    moved = transform_objects([obj for obj, flag in zip(objects, picked) if flag], names, grid.shape)[-1]
    still = [obj for obj, flag in zip(objects, picked) if not flag]
    _check_apart(moved, still)
    return draw_objects(grid.shape, [*still, *moved])


def _check_apart(moved: list[GridObject], still: list[GridObject]) -> None:
    """A transformed object may touch an object left alone but not share a cell with it."""
    taken = {(obj.top + r, obj.left + c) for obj in still for r, c in np.argwhere(obj.mask)}
    for obj in moved:
        for r, c in np.argwhere(obj.mask):
            if (obj.top + r, obj.left + c) in taken:
                raise TransformationError(
                    f"a transformed object covers row {obj.top + r}, column {obj.left + c} of an object the rule "
                    "leaves alone; place the objects further apart or choose another rule"
                )
