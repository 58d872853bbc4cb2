"""Pads: a full row or column of a fixed color added on one side (or a frame on all four).

Each padded box's cells go where COGITAO moves them: their box's corner at the padded box's corner,
which differs only when the object's box has empty edge rows or columns (after a crop).
"""

from __future__ import annotations

import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import ANY_OBJECT, Transformation, register
from vision_bench.tasks.transformations.cells import anchored

PAD_TOP_COLOR = 8
PAD_BOTTOM_COLOR = 9
PAD_LEFT_COLOR = 7
PAD_RIGHT_COLOR = 6


def pad_top(obj: GridObject) -> GridObject:
    padded = np.empty((obj.height + 1, obj.width), dtype=np.uint8)
    padded[0] = PAD_TOP_COLOR
    padded[1:] = obj.pixels
    return anchored(padded, obj.top - 1, obj.left)


def pad_bottom(obj: GridObject) -> GridObject:
    padded = np.empty((obj.height + 1, obj.width), dtype=np.uint8)
    padded[:-1] = obj.pixels
    padded[-1] = PAD_BOTTOM_COLOR
    return anchored(padded, obj.top, obj.left)


def pad_left(obj: GridObject) -> GridObject:
    padded = np.empty((obj.height, obj.width + 1), dtype=np.uint8)
    padded[:, 0] = PAD_LEFT_COLOR
    padded[:, 1:] = obj.pixels
    return anchored(padded, obj.top, obj.left - 1)


def pad_right(obj: GridObject) -> GridObject:
    padded = np.empty((obj.height, obj.width + 1), dtype=np.uint8)
    padded[:, :-1] = obj.pixels
    padded[:, -1] = PAD_RIGHT_COLOR
    return anchored(padded, obj.top, obj.left)


def pad_shape(obj: GridObject) -> GridObject:
    """A one-cell frame; the left and right columns are drawn last, so they own the four corners."""
    padded = np.empty((obj.height + 2, obj.width + 2), dtype=np.uint8)
    padded[1:-1, 1:-1] = obj.pixels
    padded[0] = PAD_TOP_COLOR
    padded[-1] = PAD_BOTTOM_COLOR
    padded[:, 0] = PAD_LEFT_COLOR
    padded[:, -1] = PAD_RIGHT_COLOR
    return anchored(padded, obj.top - 1, obj.left - 1)


register(Transformation("pad_top", f"add a full row of color {PAD_TOP_COLOR} above the object", ANY_OBJECT, pad_top))
register(Transformation(
    "pad_bottom", f"add a full row of color {PAD_BOTTOM_COLOR} below the object", ANY_OBJECT, pad_bottom
))
register(Transformation(
    "pad_left", f"add a full column of color {PAD_LEFT_COLOR} left of the object", ANY_OBJECT, pad_left
))
register(Transformation(
    "pad_right", f"add a full column of color {PAD_RIGHT_COLOR} right of the object", ANY_OBJECT, pad_right
))
register(Transformation(
    "pad_shape",
    f"frame the object: color {PAD_TOP_COLOR} above, {PAD_BOTTOM_COLOR} below, {PAD_LEFT_COLOR} left "
    f"and {PAD_RIGHT_COLOR} right (the columns cover the corners)",
    ANY_OBJECT,
    pad_shape,
))
