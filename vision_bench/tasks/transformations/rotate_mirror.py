"""Rotation and mirrors: the object's cells turned or flipped, their box put at the old box's top-left corner."""

from __future__ import annotations

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import ANY_OBJECT, Transformation, register
from vision_bench.tasks.transformations.cells import anchored


def rot90(obj: GridObject) -> GridObject:
    """Counter-clockwise quarter turn (what numpy rot90 does); an h x w box becomes w x h at the same top-left."""
    return anchored(obj.pixels.T[::-1], obj.top, obj.left)


def mirror_horizontal(obj: GridObject) -> GridObject:
    """Top <-> bottom (numpy flipud)."""
    return anchored(obj.pixels[::-1], obj.top, obj.left)


def mirror_vertical(obj: GridObject) -> GridObject:
    """Left <-> right (numpy fliplr)."""
    return anchored(obj.pixels[:, ::-1], obj.top, obj.left)


register(Transformation(
    "rot90",
    "rotate the object 90 degrees counter-clockwise, keeping the top-left corner of its bounding box",
    ANY_OBJECT,
    rot90,
))
register(Transformation(
    "mirror_horizontal", "flip the object top to bottom inside its bounding box", ANY_OBJECT, mirror_horizontal
))
register(Transformation(
    "mirror_vertical", "flip the object left to right inside its bounding box", ANY_OBJECT, mirror_vertical
))
