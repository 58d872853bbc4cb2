"""Applying transformations to every object of a grid, one step or a whole sequence at a time."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from vision_bench.errors import ConfigError, TransformationError
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects, validate_grid
from vision_bench.tasks.transformations.base import Transformation
from vision_bench.tasks.transformations.registry import TRANSFORMATIONS


def resolve_sequence(names: Iterable[str]) -> tuple[Transformation, ...]:
    """The registered transformations for `names` (a list or tuple, possibly empty), checked before any work.

    Raises `UnknownNameError` (with close matches) for an unregistered name and `ConfigError` for
    a bare string or a non-string item.
    """
    if isinstance(names, (str, bytes)):
        raise ConfigError(
            f"expected a list of transformation names, got the string {names!r}; write [{names!r}]"
        )
    resolved = []
    for position, name in enumerate(names):
        if not isinstance(name, str):
            raise ConfigError(
                f"transformation names must be strings; item {position} is {name!r} of type {type(name).__name__}"
            )
        resolved.append(TRANSFORMATIONS[name])
    return tuple(resolved)


def check_constraints(objects: list[GridObject], names: Iterable[str]) -> None:
    """Raise `TransformationError` for the first object that breaks a constraint of any step of `names`.

    COGITAO's timing: every step's constraints are checked on the input objects of the sequence,
    never on what earlier steps made of them.
    """
    for transformation in resolve_sequence(names):
        for obj in objects:
            transformation.check(obj)


def apply_step(objects: list[GridObject], name: str, shape: tuple[int, int]) -> list[GridObject]:
    """Apply transformation `name` to every object of a grid of `shape`; the new objects, in the same order.

    One step of a sequence whose constraints were checked on its input objects (`check_constraints`),
    so none is checked here. Raises `TransformationError` when a transformed object has no cell left
    (a crop), when its box leaves the grid, or when two transformed objects share a cell (touching
    is allowed): COGITAO drops such samples.
    """
    transformation = TRANSFORMATIONS[name]
    transformed = [transformation.transform(obj) for obj in objects]
    _check_placement(transformed, name, shape)
    return transformed


def _check_placement(objects: list[GridObject], name: str, shape: tuple[int, int]) -> None:
    """Every object inside the grid and no cell claimed twice: one small numpy add per object."""
    height, width = shape
    claims = np.zeros(shape, dtype=np.uint16)
    for index, obj in enumerate(objects):
        if not obj.n_cells:
            raise TransformationError(
                f"{name} leaves object {index} with no cell; choose objects with more cells or another sequence"
            )
        rows, cols = obj.pixels.shape
        top, left = obj.top, obj.left
        if top < 0 or left < 0 or top + rows > height or left + cols > width:
            raise TransformationError(
                f"{name} moves object {index} to rows {top}..{top + rows - 1}, columns {left}..{left + cols - 1}, "
                f"outside the {height}x{width} grid; place objects further from the border or choose "
                "another sequence"
            )
        claims[top : top + rows, left : left + cols] += obj.mask
    if len(objects) > 1 and claims.max() > 1:
        row, col = (int(i) for i in np.argwhere(claims > 1)[0])
        first, second = [index for index, obj in enumerate(objects) if _has_cell(obj, row, col)][:2]
        raise TransformationError(
            f"{name} makes objects {first} and {second} overlap at row {row}, column {col}; place objects "
            "further apart or choose another sequence"
        )


def _has_cell(obj: GridObject, row: int, col: int) -> bool:
    top, left, bottom, right = obj.bbox
    return top <= row < bottom and left <= col < right and bool(obj.pixels[row - top, col - left])


def transform_objects(
    objects: list[GridObject], names: Iterable[str], shape: tuple[int, int]
) -> list[list[GridObject]]:
    """[objects, after step 1, ..., after the last step] for the objects of a grid of `shape`.

    Constraints are checked on the input objects first (`check_constraints`), then every step is
    applied (`apply_step`); either raises `TransformationError`.
    """
    names = [transformation.name for transformation in resolve_sequence(names)]
    check_constraints(objects, names)
    steps = [objects]
    for name in names:
        steps.append(apply_step(steps[-1], name, shape))
    return steps


def apply_sequence(grid: object, names: Iterable[str], connectivity: int = 8) -> np.ndarray:
    """The grid after applying `names` in order to every object (objects are extracted once, up front).

    An empty sequence is the identity. Works on any valid grid, for example an imported ARC grid.
    """
    names = [transformation.name for transformation in resolve_sequence(names)]
    grid = validate_grid(grid)
    return draw_objects(grid.shape, transform_objects(extract_objects(grid, connectivity), names, grid.shape)[-1])


def apply_sequence_frames(grid: object, names: Iterable[str], connectivity: int = 8) -> list[np.ndarray]:
    """[input, grid after step 1, ..., output]: one more grid than there are names."""
    names = [transformation.name for transformation in resolve_sequence(names)]
    grid = validate_grid(grid)
    steps = transform_objects(extract_objects(grid, connectivity), names, grid.shape)
    return [grid.copy(), *(draw_objects(grid.shape, objects) for objects in steps[1:])]
