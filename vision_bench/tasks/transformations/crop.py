"""Crops: keep one half of the bounding box, or everything but its one-cell border.

Cells cut away are gone; background cells that remain inside the kept window stay background
(COGITAO keeps them as explicit object cells, which shifts later anchors and can paint
background over a neighbour). The result's bounding box shrinks to the cells that remain, and a
crop that would leave no cell is rejected.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import Transformation
from vision_bench.tasks.transformations.cells import trimmed

Window = Callable[[int, int], tuple[slice, slice]]
"""(height, width) -> the (rows, columns) of the bounding box that the crop keeps."""

MIN_SIDE = 4


def _crop(name: str, description: str, window: Window, rows: bool, cols: bool) -> Transformation:
    """A crop that needs at least `MIN_SIDE` rows (if `rows`) and columns (if `cols`)."""
    needs = " and ".join(
        f"at least {MIN_SIDE} {side}" for side, needed in (("rows", rows), ("columns", cols)) if needed
    )

    def rejection(obj: GridObject) -> str | None:
        if rows and obj.height < MIN_SIDE:
            return f"it has {obj.height} rows"
        if cols and obj.width < MIN_SIDE:
            return f"it has {obj.width} columns"
        if not np.count_nonzero(obj.pixels[window(obj.height, obj.width)]):
            return "cropping would leave no cell"
        return None

    def crop(obj: GridObject) -> GridObject:
        kept_rows, kept_cols = window(obj.height, obj.width)
        return trimmed(
            obj.pixels[kept_rows, kept_cols],
            obj.top + (kept_rows.start or 0),
            obj.left + (kept_cols.start or 0),
        )

    return Transformation(name, description, f"objects with {needs}", crop, rejection)


_ALL = slice(None)

ENTRIES = (
    _crop(
        "crop_top_side",
        "remove the top half of the object: keep rows from floor(h/2) down",
        lambda h, w: (slice(h // 2, h), _ALL),
        rows=True,
        cols=False,
    ),
    _crop(
        "crop_bottom_side",
        "remove the bottom half of the object: keep the top ceil(h/2) rows",
        lambda h, w: (slice(0, (h + 1) // 2), _ALL),
        rows=True,
        cols=False,
    ),
    _crop(
        "crop_left_side",
        "remove the left half of the object: keep columns from floor(w/2) on",
        lambda h, w: (_ALL, slice(w // 2, w)),
        rows=False,
        cols=True,
    ),
    _crop(
        "crop_right_side",
        "remove the right half of the object: keep the left ceil(w/2) columns",
        lambda h, w: (_ALL, slice(0, (w + 1) // 2)),
        rows=False,
        cols=True,
    ),
    _crop(
        "crop_contours",
        "remove the one-cell border of the object's bounding box",
        lambda h, w: (slice(1, h - 1), slice(1, w - 1)),
        rows=True,
        cols=True,
    ),
)
