"""Recoloring: every object color c becomes the next color c % 9 + 1."""

from __future__ import annotations

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import ANY_OBJECT, Transformation, register
from vision_bench.tasks.transformations.cells import NEXT_COLOR, trimmed


def change_shape_color(obj: GridObject) -> GridObject:
    """Recolored in place; like COGITAO, the box shrinks to the cells (it can be wider after a crop)."""
    return trimmed(NEXT_COLOR[obj.pixels], obj.top, obj.left)


register(Transformation(
    "change_shape_color",
    "replace every color c of the object by the next color c % 9 + 1 (9 becomes 1)",
    ANY_OBJECT,
    change_shape_color,
))
