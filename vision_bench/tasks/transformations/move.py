"""Translations: move an object by one cell; its pixels are unchanged."""

from __future__ import annotations

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import ANY_OBJECT, Transformation, register


def _translation(name: str, direction: str, row_step: int, col_step: int) -> Transformation:
    def move(obj: GridObject) -> GridObject:
        return GridObject(obj.pixels, obj.top + row_step, obj.left + col_step)

    return Transformation(name, f"move the object one cell {direction}", ANY_OBJECT, move)


register(_translation("translate_up", "up", -1, 0))
register(_translation("translate_down", "down", 1, 0))
register(_translation("translate_left", "left", 0, -1))
register(_translation("translate_right", "right", 0, 1))
