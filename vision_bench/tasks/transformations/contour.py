"""Contours: keep only the outline of an object, or grow it outwards by one cell on every side."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import ANY_OBJECT, Transformation, register
from vision_bench.tasks.transformations.cells import (
    anchored,
    contour_mask,
    has_holes,
    is_one_piece,
    most_frequent_color,
    next_color,
)

MIN_EMPTY_SIDE = 3
MIN_EMPTY_CELLS = 6


def _solid_enough_to_empty(obj: GridObject) -> str | None:
    if obj.height < MIN_EMPTY_SIDE or obj.width < MIN_EMPTY_SIDE:
        return f"its bounding box is smaller than {MIN_EMPTY_SIDE}x{MIN_EMPTY_SIDE}"
    if obj.n_cells < MIN_EMPTY_CELLS:
        return f"it has only {obj.n_cells} cells"
    mask = obj.mask
    if not is_one_piece(mask):
        return "it is not one 8-connected piece"
    if has_holes(mask):
        return "it already has an enclosed hole"
    return None


def empty_inside_pixels(obj: GridObject) -> GridObject:
    """Keep the contour cells: object cells with a 4-neighbour that is background or outside the box.

    The contour spans the cells' bounding box, which goes to the box's corner (COGITAO), so cells
    move only when the box has empty edge rows or columns (after a crop).
    """
    return anchored(obj.pixels * contour_mask(obj.mask), obj.top, obj.left)


def _extended(obj: GridObject) -> np.ndarray:
    """The (h + 2) x (w + 2) box: the object in the middle, each edge row/column copied outwards, corners empty."""
    pixels = obj.pixels
    grown = np.zeros((obj.height + 2, obj.width + 2), dtype=np.uint8)
    grown[1:-1, 1:-1] = pixels
    grown[0, 1:-1] = pixels[0]
    grown[-1, 1:-1] = pixels[-1]
    grown[1:-1, 0] = pixels[:, 0]
    grown[1:-1, -1] = pixels[:, -1]
    return grown


def extend_contours_same_color(obj: GridObject) -> GridObject:
    """The grown box's cells, their box one cell up and left of the old corner (COGITAO's anchoring)."""
    return anchored(_extended(obj), obj.top - 1, obj.left - 1)


def extend_contours_different_color(obj: GridObject) -> GridObject:
    """Like the same-color extension, but every new cell takes next(most frequent color)."""
    grown = _extended(obj)
    grown[_border(*grown.shape) & (grown != 0)] = next_color(most_frequent_color(obj.pixels))
    return anchored(grown, obj.top - 1, obj.left - 1)


@lru_cache(maxsize=1024)
def _border(height: int, width: int) -> np.ndarray:
    """The one-cell border of a height x width box (read-only)."""
    border = np.ones((height, width), dtype=bool)
    border[1:-1, 1:-1] = False
    border.setflags(write=False)
    return border


register(Transformation(
    "empty_inside_pixels",
    "keep only the object's contour: cells with a 4-neighbour that is background or outside it",
    f"single 8-connected objects without enclosed holes, a bounding box of at least "
    f"{MIN_EMPTY_SIDE}x{MIN_EMPTY_SIDE} and at least {MIN_EMPTY_CELLS} cells",
    empty_inside_pixels,
    _solid_enough_to_empty,
))
register(Transformation(
    "extend_contours_same_color",
    "grow the bounding box by one cell on every side, copying each edge cell outwards (corners stay empty)",
    ANY_OBJECT,
    extend_contours_same_color,
))
register(Transformation(
    "extend_contours_different_color",
    "grow the bounding box by one cell on every side like extend_contours_same_color, "
    "new cells in the color after the most frequent color",
    ANY_OBJECT,
    extend_contours_different_color,
))
