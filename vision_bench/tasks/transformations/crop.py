"""Crops: keep one half of the object's box, or everything but its one-cell border.

As in COGITAO, a half crop keeps its window as the object's box, even where the window's edge rows
or columns hold no cell, and later steps anchor on that box (`GridObject`). `crop_contours` puts
the box of the remaining cells one cell below and right of the old box's corner, which moves them
when the inner window's first rows or columns are empty. A crop may leave no cell: that makes the
sample invalid, as COGITAO's empty shapes do.
"""

from __future__ import annotations

from collections.abc import Callable

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import Transformation, register
from vision_bench.tasks.transformations.cells import anchored

Window = Callable[[int, int], tuple[slice, slice]]
"""(height, width) -> the (rows, columns) of the box that the crop keeps."""

MIN_SIDE = 4


def _half_crop(name: str, description: str, window: Window, rows: bool) -> Transformation:
    """A crop keeping the window of its box; it needs at least `MIN_SIDE` rows (if `rows`) or else columns."""
    side = "rows" if rows else "columns"

    def rejection(obj: GridObject) -> str | None:
        size = obj.height if rows else obj.width
        return f"it has {size} {side}" if size < MIN_SIDE else None

    def crop(obj: GridObject) -> GridObject:
        kept_rows, kept_cols = window(obj.height, obj.width)
        return GridObject(
            obj.pixels[kept_rows, kept_cols], obj.top + (kept_rows.start or 0), obj.left + (kept_cols.start or 0)
        )

    return Transformation(name, description, f"objects with at least {MIN_SIDE} {side}", crop, rejection)


def _too_small_for_contours(obj: GridObject) -> str | None:
    if obj.height < MIN_SIDE:
        return f"it has {obj.height} rows"
    if obj.width < MIN_SIDE:
        return f"it has {obj.width} columns"
    return None


def crop_contours(obj: GridObject) -> GridObject:
    return anchored(obj.pixels[1:-1, 1:-1], obj.top + 1, obj.left + 1)


_ALL = slice(None)

register(_half_crop(
    "crop_top_side",
    "remove the top half of the object: keep rows from floor(h/2) down",
    lambda h, w: (slice(h // 2, h), _ALL),
    rows=True,
))
register(_half_crop(
    "crop_bottom_side",
    "remove the bottom half of the object: keep the top ceil(h/2) rows",
    lambda h, w: (slice(0, (h + 1) // 2), _ALL),
    rows=True,
))
register(_half_crop(
    "crop_left_side",
    "remove the left half of the object: keep columns from floor(w/2) on",
    lambda h, w: (_ALL, slice(w // 2, w)),
    rows=False,
))
register(_half_crop(
    "crop_right_side",
    "remove the right half of the object: keep the left ceil(w/2) columns",
    lambda h, w: (_ALL, slice(0, (w + 1) // 2)),
    rows=False,
))
register(Transformation(
    "crop_contours",
    "remove the one-cell border of the object's box; the box of what remains goes one cell in from its corner",
    f"objects with at least {MIN_SIDE} rows and {MIN_SIDE} columns",
    crop_contours,
    _too_small_for_contours,
))
