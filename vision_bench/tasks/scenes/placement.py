"""Where a scene's two objects go: room for the largest size and any motion, far enough apart that no rule makes
them overlap, touch or leave the grid.

An object's anchor is the top-left cell of its footprint; a size change keeps the anchor (the footprint grows
right and down) and a motion moves it by `motion` cells. Anchors lie in [motion, grid_size - motion - 6] in
rows and columns, so a footprint of up to 6 cells moved `motion` cells any way stays in the grid; the two
anchors differ by at least `separation(motion)` = 6 + 2 motion + 1 cells in rows or in columns, so after both
move toward each other an empty cell is left between them. A pair of anchors is drawn uniformly among those
that qualify (both drawn again until they do).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from vision_bench.tasks.scenes.factors import SIZES, Combination, SceneObject, footprint

LARGEST = SIZES[-1]
"""The largest footprint's side: every anchor leaves room for it."""


def separation(motion: int) -> int:
    """The least Chebyshev distance between two anchors: largest side, both motions and one empty cell."""
    return LARGEST + 2 * motion + 1


def anchor_range(grid_size: int, motion: int) -> tuple[int, int]:
    """The lowest and highest anchor row (and column)."""
    return motion, grid_size - motion - LARGEST


def min_grid_size(motion: int) -> int:
    """The smallest grid side whose anchor range holds two anchors `separation(motion)` apart: 4 motion + 13."""
    return 2 * motion + LARGEST + separation(motion)


def reading_key(obj: SceneObject) -> tuple[int, int]:
    """The (row, column) of an object's first cell in row-major order, the order `factors.read_objects` finds it."""
    return obj.top, obj.left + int(footprint(obj.shape, obj.size)[0].argmax())


def place(rng: random.Random, combinations: Sequence[Combination], grid_size: int,
          motion: int) -> tuple[SceneObject, ...]:
    """Two objects: combinations drawn uniformly with replacement, anchors drawn as the module says; in the order
    `read_objects` finds them in the drawn grid."""
    drawn = [combinations[rng.randrange(len(combinations))] for _ in range(2)]
    low, high = anchor_range(grid_size, motion)
    apart = separation(motion)
    while True:
        anchors = [(rng.randint(low, high), rng.randint(low, high)) for _ in drawn]
        (top_a, left_a), (top_b, left_b) = anchors
        if max(abs(top_a - top_b), abs(left_a - left_b)) >= apart:
            break
    objects = (SceneObject(*combination, *anchor) for combination, anchor in zip(drawn, anchors))
    return tuple(sorted(objects, key=reading_key))


__all__ = ["LARGEST", "anchor_range", "min_grid_size", "place", "reading_key", "separation"]
