"""Filling enclosed holes (see `cells.enclosed_holes` for the precise definition of a hole).

Both fills need, as in COGITAO, a single-colored object with at least one hole (COGITAO's
constraints table gives fill_holes_different_color the constraints of fill_holes_same_color).
Later in a sequence they may meet other objects: one without holes is returned unchanged, box
included, and a filled one's box shrinks to its cells, which stay in place.
"""

from __future__ import annotations

import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import Transformation, register
from vision_bench.tasks.transformations.cells import (
    color_counts,
    enclosed_holes,
    most_frequent_color,
    next_color,
    trimmed,
)


def _single_colored_with_holes(obj: GridObject) -> str | None:
    n_colors = int(np.count_nonzero(color_counts(obj.pixels)[1:]))
    if n_colors != 1:
        return f"it has {n_colors} colors"
    return None if enclosed_holes(obj.mask).any() else "it has no enclosed hole"


def fill_holes_same_color(obj: GridObject) -> GridObject:
    """Holes filled; the whole object takes its most frequent color (a single-colored one keeps its color)."""
    mask = obj.mask
    holes = enclosed_holes(mask)
    if not holes.any():
        return obj
    pixels = np.where(mask | holes, np.uint8(most_frequent_color(obj.pixels)), np.uint8(0))
    return trimmed(pixels, obj.top, obj.left)


def fill_holes_different_color(obj: GridObject) -> GridObject:
    """Holes filled with next(most frequent color); the object's own cells keep their colors."""
    holes = enclosed_holes(obj.mask)
    if not holes.any():
        return obj
    pixels = obj.pixels.copy()
    pixels[holes] = next_color(most_frequent_color(obj.pixels))
    return trimmed(pixels, obj.top, obj.left)


register(Transformation(
    "fill_holes_same_color",
    "fill the object's enclosed holes with its own color",
    "single-colored objects with at least one enclosed hole",
    fill_holes_same_color,
    _single_colored_with_holes,
))
register(Transformation(
    "fill_holes_different_color",
    "fill the object's enclosed holes with the color after its most frequent color",
    "single-colored objects with at least one enclosed hole",
    fill_holes_different_color,
    _single_colored_with_holes,
))
