"""Validation of symbolic grids: 2-D, rectangular, integers 0-9, 1..100 cells a side.

Lives in `render` (numpy only) so that the renderer and the task generator share one validator.
"""

from __future__ import annotations

import numpy as np

from render.errors import UserError

MAX_SIDE = 100
N_COLORS = 10


class GridError(UserError):
    """A grid that is not a 2-D rectangular array of integers 0-9 with 1..100 cells a side."""


def _rows_of(grid: object, name: str) -> np.ndarray:
    if isinstance(grid, np.ndarray):
        return grid
    if not isinstance(grid, (list, tuple)) or len(grid) == 0:
        raise GridError(f"{name}: expected a non-empty list of rows, got {type(grid).__name__}")
    widths = []
    for r, row in enumerate(grid):
        if not isinstance(row, (list, tuple, np.ndarray)):
            raise GridError(f"{name}: row {r} is a {type(row).__name__}, expected a list of integers")
        widths.append(len(row))
    if len(set(widths)) != 1:
        bad = next(r for r, w in enumerate(widths) if w != widths[0])
        raise GridError(
            f"{name}: not rectangular: row 0 has {widths[0]} cells but row {bad} has {widths[bad]}"
        )
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise GridError(
                    f"{name}: cell ({r}, {c}) is {value!r}; cells must be integers 0-9"
                )
    return np.asarray(grid)


def validate_grid(grid: object, name: str = "grid") -> np.ndarray:
    """Return `grid` as a contiguous uint8 array, or raise `GridError` saying what is wrong and where."""
    array = _rows_of(grid, name)
    if array.ndim != 2:
        raise GridError(f"{name}: expected a 2-D grid, got {array.ndim} dimensions (shape {array.shape})")
    height, width = array.shape
    if not (1 <= height <= MAX_SIDE and 1 <= width <= MAX_SIDE):
        raise GridError(
            f"{name}: shape {height}x{width} is out of range; each side must be 1..{MAX_SIDE} cells"
        )
    if array.dtype.kind == "f":
        non_integer = ~np.isfinite(array) | (array != np.round(array))
        if non_integer.any():
            r, c = (int(i) for i in np.argwhere(non_integer)[0])
            raise GridError(f"{name}: cell ({r}, {c}) is {array[r, c]!r}; cells must be integers 0-9")
        array = array.astype(np.int64)
    elif array.dtype.kind not in "iu":
        raise GridError(f"{name}: cells must be integers 0-9, got values of type {array.dtype}")
    bad = (array < 0) | (array >= N_COLORS)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise GridError(f"{name}: cell ({r}, {c}) is {int(array[r, c])}; colors must be 0 (background) to 9")
    return np.ascontiguousarray(array, dtype=np.uint8)
