"""`TRANSFORMATIONS`: the 28 COGITAO transformations, registered in the order of the reference table.

The order is part of the public API: task codes number transformations 1..28 by it.
"""

from __future__ import annotations

from vision_bench.registry import Registry
from vision_bench.tasks.transformations import color, contour, crop, fill, move, pad, rotate_mirror, tile
from vision_bench.tasks.transformations.base import Transformation

TRANSFORMATION_NAMES = (
    "translate_up",
    "translate_down",
    "translate_left",
    "translate_right",
    "rot90",
    "mirror_horizontal",
    "mirror_vertical",
    "crop_top_side",
    "crop_bottom_side",
    "crop_left_side",
    "crop_right_side",
    "crop_contours",
    "change_shape_color",
    "fill_holes_same_color",
    "fill_holes_different_color",
    "empty_inside_pixels",
    "extend_contours_same_color",
    "extend_contours_different_color",
    "pad_top",
    "pad_bottom",
    "pad_left",
    "pad_right",
    "pad_shape",
    "double_right",
    "double_left",
    "double_down",
    "double_up",
    "quadruple_shape",
)

_FAMILIES = (move, rotate_mirror, crop, color, fill, contour, pad, tile)


def _build_registry() -> Registry[Transformation]:
    by_name = {entry.name: entry for family in _FAMILIES for entry in family.ENTRIES}
    registry: Registry[Transformation] = Registry("transformation")
    for name in TRANSFORMATION_NAMES:
        registry.add(name, by_name[name], by_name[name].description)
    return registry


TRANSFORMATIONS = _build_registry()
