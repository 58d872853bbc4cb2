"""The memos of the object library that the COGITAO generator's modules share.

`LIBRARY` is the fixed object pool (`ObjectLibrary(LIBRARY_SEED)`, like COGITAO's pre-computed object
file); the functions below are pure functions of it and of transformation names, memoized with a
bound (`functools.lru_cache`), so they never change what is generated. The task generators' other
memos stay beside what they memoize, since each is built from its own module's types (and this
module sits below them): each plan's memos (`vision_bench.tasks.planning.Plan`), the plans
themselves (`planning.plan_for`, the latest 64 by config content and split) and C-ARC's episodes
(`vision_bench.tasks.carc.episodes.episode_of`, the latest `EPISODE_CACHE`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.objects import ObjectLibrary
from vision_bench.tasks.placement import PlacementShape
from vision_bench.tasks.transformations import TRANSFORMATIONS

LIBRARY_SEED = 0
LIBRARY = ObjectLibrary(LIBRARY_SEED)


@lru_cache(maxsize=len(LIBRARY.labels))
def placement_shape(index: int) -> PlacementShape:
    """The placement shape of library template `index`."""
    return PlacementShape.of(LIBRARY.labels[index] != 0)


@lru_cache(maxsize=200_000)
def after(prefix: tuple[str, ...], index: int) -> GridObject | None:
    """Template `index` in its reference coloring after `prefix`, or None if a step leaves it no cell."""
    if not prefix:
        return GridObject(LIBRARY.labels[index], 0, 0)
    before = after(prefix[:-1], index)
    found = None if before is None else TRANSFORMATIONS[prefix[-1]].transform(before)
    return found if found is not None and found.n_cells else None


@lru_cache(maxsize=4096)
def span(names: tuple[str, ...], shape: tuple[int, int]) -> tuple[int, int]:
    """Rows and columns a full box of `shape` spans over the steps of `names` (until one leaves it no cell):
    an estimate of the room a template of that shape needs."""
    obj = GridObject(np.ones(shape, dtype=np.uint8), 0, 0)
    top, left, bottom, right = 0, 0, shape[0], shape[1]
    for name in names:
        obj = TRANSFORMATIONS[name].transform(obj)
        if not obj.n_cells:
            break
        top, left = min(top, obj.top), min(left, obj.left)
        bottom, right = max(bottom, obj.top + obj.height), max(right, obj.left + obj.width)
    return bottom - top, right - left
