"""Placing drawn objects on a task's frames: no touching in the input, no overlap later.

Used by `vision_bench.tasks.generator` for every sample, so anchors are found with a few random
tries first and one OpenCV correlation over all anchors when those fail.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import cv2
import numpy as np

if TYPE_CHECKING:
    from vision_bench.tasks.generator import DrawnObject

PLACEMENT_TRIES = 8
"""Random anchors tried before enumerating every free anchor."""


class Canvas:
    """The frames being drawn plus the input's occupancy: placed objects' filled masks grown by one cell.

    An anchor is free when the new object's filled input mask misses the occupancy (no touching,
    no nesting) and, at every later step, its cells miss the cells already drawn in that frame (no
    overlap; touching allowed). Anchor ranges keep every step inside the grid. Random anchors are
    tried first, then all free anchors are enumerated; both pick uniformly among free anchors.
    """

    def __init__(self, height: int, width: int, depth: int) -> None:
        self.height, self.width = height, width
        self.occupied = np.zeros((height + 2, width + 2), dtype=bool)
        self.frames = [np.zeros((height, width), dtype=np.uint8) for _ in range(depth + 1)]
        self.empty = True

    def find_anchor(self, rng: random.Random, obj: DrawnObject) -> tuple[int, int] | None:
        filled = obj.template.filled
        rows, cols = filled.shape
        top_min, left_min, bottom_max, right_max = obj.extent
        low_top, span_top = -top_min, self.height - bottom_max + top_min + 1
        low_left, span_left = -left_min, self.width - right_max + left_min + 1
        uniform, occupied = rng.random, self.occupied
        if self.empty:
            return low_top + int(uniform() * span_top), low_left + int(uniform() * span_left)
        later = [(frame, moved.top, moved.left, mask) for frame, moved, mask in zip(self.frames[1:], obj.path[1:],
                                                                                   obj.masks[1:])]
        for _ in range(PLACEMENT_TRIES):
            top, left = low_top + int(uniform() * span_top), low_left + int(uniform() * span_left)
            if occupied[top + 1 : top + 1 + rows, left + 1 : left + 1 + cols][filled].any():
                continue
            for frame, row, col, mask in later:
                if frame[top + row : top + row + mask.shape[0], left + col : left + col + mask.shape[1]][mask].any():
                    break
            else:
                return top, left
        area = occupied[low_top + 1 : low_top + span_top + rows, low_left + 1 : low_left + span_left + cols]
        free = collisions(area, filled) == 0
        for frame, row, col, mask in later:
            area = frame[low_top + row : low_top + row + span_top - 1 + mask.shape[0],
                         low_left + col : low_left + col + span_left - 1 + mask.shape[1]] != 0
            free &= collisions(area, mask) == 0
        candidates = np.flatnonzero(free)
        if len(candidates) == 0:
            return None
        offset = int(candidates[int(uniform() * len(candidates))])
        return low_top + offset // span_left, low_left + offset % span_left

    def paint(self, obj: DrawnObject, anchor: tuple[int, int]) -> None:
        top, left = anchor
        self.empty = False
        halo = obj.template.halo
        self.occupied[top : top + halo.shape[0], left : left + halo.shape[1]] |= halo
        for frame, moved, mask in zip(self.frames, obj.path, obj.masks):
            row, col = top + moved.top, left + moved.left
            np.copyto(frame[row : row + mask.shape[0], col : col + mask.shape[1]], moved.pixels, where=mask)


def collisions(area: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """For every placement of `mask` inside boolean `area` (top-left at (r, c)), how many cells it shares."""
    counts = cv2.filter2D(area.view(np.uint8), cv2.CV_16S, mask.view(np.uint8), anchor=(0, 0),
                          borderType=cv2.BORDER_CONSTANT)
    return counts[: area.shape[0] - mask.shape[0] + 1, : area.shape[1] - mask.shape[1] + 1]
