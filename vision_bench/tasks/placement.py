"""Placing drawn objects on a task's frames: no touching in the input, no overlap later.

Used by `vision_bench.tasks.generator` for every COGITAO sample, so anchors are found with a few random
tries first and one OpenCV correlation over all anchors when those fail. The input's occupancy
is also kept as one Python integer, a bit per cell, so that a random try against it is a shift
and an AND instead of several numpy calls.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

import cv2
import numpy as np

from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations import enclosed_holes

PLACEMENT_TRIES = 8
"""Random anchors tried before enumerating every free anchor."""


@dataclass
class PlacementShape:
    """How an object template takes room: its mask filled (holes included), that grown by one cell all
    round (`halo`), the cells it needs with a one-cell gap when packed (`packing_area`), and the column of
    its first cell in the top row (`first_column`, for reading order)."""

    filled: np.ndarray
    halo: np.ndarray
    packing_area: int
    first_column: int
    _bits: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, mask: np.ndarray) -> PlacementShape:
        filled = mask | enclosed_holes(mask)
        height, width = filled.shape
        halo = np.zeros((height + 2, width + 2), dtype=bool)
        for dr, dc in itertools.product(range(3), range(3)):
            halo[dr : dr + height, dc : dc + width] |= filled
        block = np.zeros((height + 1, width + 1), dtype=bool)
        for dr, dc in itertools.product(range(2), range(2)):
            block[dr : dr + height, dc : dc + width] |= filled
        return cls(filled, halo, int(np.count_nonzero(block)), int(np.argmax(mask[0])))

    def bits(self, stride: int) -> tuple[int, int]:
        """`filled` and `halo` as bit sets of a grid `stride` cells wide (see `mask_bits`)."""
        found = self._bits.get(stride)
        if found is None:
            found = self._bits[stride] = (mask_bits(self.filled, stride), mask_bits(self.halo, stride))
        return found


@dataclass(slots=True)
class DrawnObject:
    """One drawn object: template, colors, the object after each step (anchored at the origin), its extent."""

    index: int
    template: PlacementShape
    colors: list[int]
    path: list[GridObject]
    extent: tuple[int, int, int, int]


def mask_bits(mask: np.ndarray, stride: int) -> int:
    """The cells of `mask` as an integer with bit r * stride + c set for cell (r, c); `stride` >= its width."""
    height, width = mask.shape
    rows = np.zeros((height, stride), dtype=bool)
    rows[:, :width] = mask
    return int.from_bytes(np.packbits(rows, bitorder="little").tobytes(), "little")


def bits_mask(bits: int, height: int, stride: int) -> np.ndarray:
    """The inverse of `mask_bits`: a height x stride boolean array."""
    cells = height * stride
    packed = np.frombuffer(bits.to_bytes((cells + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(packed, count=cells, bitorder="little").view(bool).reshape(height, stride)


class Canvas:
    """The frames being drawn plus the input's occupancy: placed objects' filled masks grown by one cell.

    An anchor is free when the new object's filled input mask misses the occupancy (no touching,
    no nesting) and, at every later step, its cells miss the cells already drawn in that frame (no
    overlap; touching allowed). Anchor ranges keep every step inside the grid. Random anchors are
    tried first, then all free anchors are enumerated; both pick uniformly among free anchors.
    The occupancy covers the grid plus a one-cell margin, as bits of rows `width + 2` cells wide.
    """

    def __init__(self, height: int, width: int, depth: int) -> None:
        self.height, self.width = height, width
        self.stride = width + 2
        self.occupied = 0
        self.frames = [np.zeros((height, width), dtype=np.uint8) for _ in range(depth + 1)]

    def find_anchor(self, rng: random.Random, obj: DrawnObject) -> tuple[int, int] | None:
        filled = obj.template.filled
        rows, cols = filled.shape
        top_min, left_min, bottom_max, right_max = obj.extent
        low_top, span_top = -top_min, self.height - bottom_max + top_min + 1
        low_left, span_left = -left_min, self.width - right_max + left_min + 1
        uniform, occupied, stride = rng.random, self.occupied, self.stride
        if not occupied:
            return low_top + int(uniform() * span_top), low_left + int(uniform() * span_left)
        filled_bits = obj.template.bits(stride)[0]
        later = [(frame, moved.top, moved.left, moved.pixels != 0) for frame, moved in zip(self.frames[1:],
                                                                                          obj.path[1:])]
        for _ in range(PLACEMENT_TRIES):
            top, left = low_top + int(uniform() * span_top), low_left + int(uniform() * span_left)
            if occupied & (filled_bits << ((top + 1) * stride + left + 1)):
                continue
            for frame, row, col, mask in later:
                cells = frame[top + row : top + row + mask.shape[0], left + col : left + col + mask.shape[1]][mask]
                if np.count_nonzero(cells):  # 2x faster than cells.any() on arrays this small
                    break
            else:
                return top, left
        occupancy = bits_mask(occupied, self.height + 2, stride)
        area = occupancy[low_top + 1 : low_top + span_top + rows, low_left + 1 : low_left + span_left + cols]
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
        self.occupied |= obj.template.bits(self.stride)[1] << (top * self.stride + left)
        for frame, moved in zip(self.frames, obj.path):
            row, col = top + moved.top, left + moved.left
            # The free-anchor checks keep every frame's cells under the object empty, and its pixels are 0
            # off the object, so OR-ing its box paints exactly its cells (faster than copying where masked).
            region = frame[row : row + moved.pixels.shape[0], col : col + moved.pixels.shape[1]]
            np.bitwise_or(region, moved.pixels, out=region)


def collisions(area: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """For every placement of `mask` inside boolean `area` (top-left at (r, c)), how many cells it shares."""
    counts = cv2.filter2D(area.view(np.uint8), cv2.CV_16S, mask.view(np.uint8), anchor=(0, 0),
                          borderType=cv2.BORDER_CONSTANT)
    return counts[: area.shape[0] - mask.shape[0] + 1, : area.shape[1] - mask.shape[1] + 1]
