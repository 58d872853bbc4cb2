"""Grids and objects: validation (re-exported from `render.grid`) and connected-component objects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from render.grid import GridError, validate_grid

_STRUCTURES = {
    4: ndimage.generate_binary_structure(2, 1),
    8: ndimage.generate_binary_structure(2, 2),
}


@dataclass(frozen=True, eq=False)
class GridObject:
    """One object: its box-local pixels (0 = not part of the object) and the box's top-left anchor.

    The box is usually the bounding box of the cells. After a crop it is the window the crop kept,
    whose edge rows or columns may hold no cell: COGITAO keeps that box, and later steps anchor on
    it. Its empty cells are background; they never paint over anything.
    """

    pixels: np.ndarray
    top: int
    left: int

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def mask(self) -> np.ndarray:
        return self.pixels != 0

    @property
    def n_cells(self) -> int:
        return int(np.count_nonzero(self.pixels))

    @property
    def colors(self) -> list[int]:
        return sorted(int(c) for c in np.unique(self.pixels) if c != 0)

    @property
    def bbox(self) -> tuple[int, int, int, int]:
        """(top, left, bottom, right), bottom and right exclusive."""
        return self.top, self.left, self.top + self.height, self.left + self.width

    def moved(self, top: int, left: int) -> GridObject:
        return GridObject(self.pixels, top, left)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GridObject)
            and (self.top, self.left) == (other.top, other.left)
            and np.array_equal(self.pixels, other.pixels)
        )

    def __repr__(self) -> str:
        return f"GridObject(top={self.top}, left={self.left}, pixels={self.pixels.tolist()})"


def connectivity_structure(connectivity: int) -> np.ndarray:
    if connectivity not in _STRUCTURES:
        raise GridError(f"connectivity must be 4 or 8, got {connectivity!r}")
    return _STRUCTURES[connectivity]


def extract_objects(grid: np.ndarray, connectivity: int = 8) -> list[GridObject]:
    """Connected components of non-background cells (any colors mixed), in row-major order of first cell."""
    grid = validate_grid(grid)
    labels, count = ndimage.label(grid != 0, structure=connectivity_structure(connectivity))
    objects = []
    for label, slices in enumerate(ndimage.find_objects(labels), start=1):
        if slices is None:
            continue
        rows, cols = slices
        pixels = np.where(labels[slices] == label, grid[slices], 0).astype(np.uint8)
        objects.append(GridObject(pixels, rows.start, cols.start))
    return objects


def draw_objects(shape: tuple[int, int], objects: list[GridObject]) -> np.ndarray:
    """Paint objects onto an empty grid (later objects over earlier ones, background cells transparent)."""
    grid = np.zeros(shape, dtype=np.uint8)
    for obj in objects:
        top, left, bottom, right = obj.bbox
        region = grid[top:bottom, left:right]
        np.copyto(region, obj.pixels, where=obj.mask)
    return grid


__all__ = ["GridError", "GridObject", "connectivity_structure", "draw_objects", "extract_objects", "validate_grid"]
