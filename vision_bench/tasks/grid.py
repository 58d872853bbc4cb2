"""Grids and objects: validation (re-exported from `render.grid`) and connected-component objects.

Every connected-component labelling in the project goes through `component_labels` (OpenCV's
`connectedComponents`, several times faster than scipy's on small masks): the objects of a grid
(`extract_objects`), the single-colour objects of the metrics, holes and one-piece checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
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


def component_labels(mask: np.ndarray, connectivity: int) -> tuple[int, np.ndarray]:
    """(components + 1, labels): the connected components of the true cells of a boolean mask, labelled 1..n
    (0 = false cells, int32), by 4- or 8-connectivity, in no particular order (`ordered_labels` sorts them)."""
    connectivity_structure(connectivity)  # checks it
    image = np.ascontiguousarray(mask, dtype=bool).view(np.uint8)
    count, labels = cv2.connectedComponents(image, connectivity=connectivity, ltype=cv2.CV_32S)
    return int(count), labels


def count_components(mask: np.ndarray, connectivity: int) -> int:
    """How many connected components the true cells of a boolean mask form (4- or 8-connectivity)."""
    return component_labels(mask, connectivity)[0] - 1


def ordered_labels(mask: np.ndarray, connectivity: int) -> tuple[int, np.ndarray]:
    """`component_labels` renumbered in row-major order of each component's first cell (scipy's
    `ndimage.label` order, which COGITAO's object order follows)."""
    count, labels = component_labels(mask, connectivity)
    if count > 2:
        _, first = np.unique(labels.ravel(), return_index=True)  # label k's first cell, k = 0..count-1
        renumber = np.zeros(count, dtype=labels.dtype)
        renumber[np.argsort(first[1:], kind="stable") + 1] = np.arange(1, count, dtype=labels.dtype)
        labels = renumber[labels]
    return count, labels


def extract_objects(grid: np.ndarray, connectivity: int = 8) -> list[GridObject]:
    """Connected components of non-background cells (any colors mixed), in row-major order of first cell."""
    grid = validate_grid(grid)
    _, labels = ordered_labels(grid != 0, connectivity)
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


__all__ = [
    "GridError",
    "GridObject",
    "component_labels",
    "connectivity_structure",
    "count_components",
    "draw_objects",
    "extract_objects",
    "ordered_labels",
    "validate_grid",
]
