"""Filling enclosed holes (see `cells.enclosed_holes` for the precise definition of a hole)."""

from __future__ import annotations

import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import Transformation
from vision_bench.tasks.transformations.cells import (
    color_counts,
    enclosed_holes,
    has_holes,
    most_frequent_color,
    next_color,
)


def _single_colored_with_holes(obj: GridObject) -> str | None:
    n_colors = int(np.count_nonzero(color_counts(obj.pixels)[1:]))
    if n_colors != 1:
        return f"it has {n_colors} colors"
    return _with_holes(obj)


def _with_holes(obj: GridObject) -> str | None:
    return None if has_holes(obj.mask) else "it has no enclosed hole"


def fill_holes_same_color(obj: GridObject) -> GridObject:
    """Holes filled; the whole object (a single-colored one) takes its most frequent color."""
    mask = obj.mask
    filled = mask | enclosed_holes(mask)
    pixels = np.where(filled, np.uint8(most_frequent_color(obj.pixels)), np.uint8(0))
    return GridObject(pixels, obj.top, obj.left)


def fill_holes_different_color(obj: GridObject) -> GridObject:
    """Holes filled with next(most frequent color); the object's own cells keep their colors."""
    pixels = obj.pixels.copy()
    pixels[enclosed_holes(obj.mask)] = next_color(most_frequent_color(obj.pixels))
    return GridObject(pixels, obj.top, obj.left)


ENTRIES = (
    Transformation(
        "fill_holes_same_color",
        "fill the object's enclosed holes with its own color",
        "single-colored objects with at least one enclosed hole",
        fill_holes_same_color,
        _single_colored_with_holes,
    ),
    Transformation(
        "fill_holes_different_color",
        "fill the object's enclosed holes with the color after its most frequent color",
        "objects with at least one enclosed hole",
        fill_holes_different_color,
        _with_holes,
    ),
)
