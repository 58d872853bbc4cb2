"""Object templates: the label maps of the object library, procedurally generated from a seed.

A template is a uint8 label map whose labels 1..k stand for k distinct colors (0 = not the
object). The pool starts with every canonical footprint, then adds random templates (grown
blobs, symmetrized blobs, rings, multi-block shapes, each painted with a color pattern) until it
holds the requested number of distinct ones. The same seed always gives the same pool.
"""

from __future__ import annotations

import heapq
import itertools
import random
from typing import overload

import numpy as np
from scipy import ndimage

from vision_bench.tasks.grid import count_components
from vision_bench.tasks.properties import COLOR_PATTERNS, CROSS, MAX_OBJECT_SIDE, SYMMETRIES, footprint_mask


def generate_templates(seed: int, size: int, canonical_side: int) -> list[np.ndarray]:
    """Canonical footprints first, then random templates until `size` distinct ones exist."""
    rng = random.Random(seed)
    seen: set[tuple[tuple[int, ...], bytes]] = set()
    templates: list[np.ndarray] = []

    def add(labels: np.ndarray | None) -> None:
        if labels is None or not labels.any():
            return
        labels = _normalized(labels)
        key = (labels.shape, labels.tobytes())
        if key not in seen:
            seen.add(key)
            templates.append(labels)

    sides = range(1, canonical_side + 1)
    for height, width, kind, outline in itertools.product(sides, sides, ("rectangle", "ellipse", "diamond"), (0, 1)):
        add(footprint_mask(kind, height, width, bool(outline)).astype(np.uint8))
    for _ in range(20 * size):
        if len(templates) >= size:
            break
        add(_random_template(rng))
    return templates


def _normalized(labels: np.ndarray) -> np.ndarray:
    """Trimmed to its cells, labels renumbered 1..k in order of first appearance (row-major); read-only."""
    rows, cols = np.flatnonzero(labels.any(axis=1)), np.flatnonzero(labels.any(axis=0))
    labels = labels[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    flat = labels.ravel()
    values, first = np.unique(flat, return_index=True)
    lookup = np.zeros(int(values.max()) + 1, dtype=np.uint8)
    object_values = values[values != 0][np.argsort(first[values != 0])]
    lookup[object_values] = np.arange(1, len(object_values) + 1)
    result = np.ascontiguousarray(lookup[labels])
    result.setflags(write=False)
    return result


_KINDS = ("footprint", "grown", "symmetric", "ring", "distance")
_KIND_WEIGHTS = (0.25, 0.3, 0.25, 0.1, 0.1)
_PATTERN_WEIGHTS = (0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)
_SYMMETRIZERS = {
    "horizontal": lambda a: a[::-1],
    "vertical": lambda a: a[:, ::-1],
    "point": lambda a: a[::-1, ::-1],
    "diagonal": lambda a: a.T,
    "anti_diagonal": lambda a: a[::-1, ::-1].T,
}


def _random_template(rng: random.Random) -> np.ndarray | None:
    """One random label map; sides mostly up to 6, sometimes up to 10 or `MAX_OBJECT_SIDE`."""
    largest = rng.choices((6, 10, MAX_OBJECT_SIDE), weights=(0.6, 0.3, 0.1))[0]
    height, width = rng.randint(1, largest), rng.randint(1, largest)
    kind = rng.choices(_KINDS, weights=_KIND_WEIGHTS)[0]
    if kind == "footprint":
        shape = rng.choice(("rectangle", "ellipse", "diamond"))
        return _painted(rng, footprint_mask(shape, height, width, bool(rng.random() < 0.4)))
    if kind == "distance":
        return _painted(rng, _blocks(rng, max(height, 3), max(width, 3)))
    if kind == "ring":
        blob = _grown(rng, max(height, 3), max(width, 3), diagonal=False)
        return _painted(rng, blob & ~ndimage.binary_erosion(blob, structure=CROSS, border_value=0))
    if kind == "grown":
        return _painted(rng, _grown(rng, height, width, diagonal=bool(rng.random() < 0.3)))
    symmetry = rng.choice(SYMMETRIES)
    if symmetry in ("diagonal", "anti_diagonal"):
        width = height
    labels = _painted(rng, _grown(rng, height, width, diagonal=False))
    mirrored = np.maximum(labels, _SYMMETRIZERS[symmetry](labels))
    return mirrored if rng.random() < 0.7 else np.maximum(mirrored, _SYMMETRIZERS["vertical"](mirrored))


def _grown(rng: random.Random, height: int, width: int, diagonal: bool) -> np.ndarray:
    """A blob grown from a random seed cell to 35-90% of the box, each step taking a random frontier edge."""
    target = max(1, round(rng.uniform(0.35, 0.9) * height * width))
    steps = _STEPS_8 if diagonal else _STEPS_4
    cells: set[tuple[int, int]] = set()
    frontier = [(0.0, rng.randrange(height), rng.randrange(width))]
    while frontier and len(cells) < target:
        _, row, col = heapq.heappop(frontier)
        if (row, col) in cells:
            continue
        cells.add((row, col))
        for dr, dc in steps:
            r, c = row + dr, col + dc
            if 0 <= r < height and 0 <= c < width and (r, c) not in cells:
                heapq.heappush(frontier, (rng.random(), r, c))
    mask = np.zeros((height, width), dtype=bool)
    mask[tuple(np.array(sorted(cells)).T)] = True
    return mask


_STEPS_4 = ((-1, 0), (1, 0), (0, -1), (0, 1))
_STEPS_8 = _STEPS_4 + ((-1, -1), (-1, 1), (1, -1), (1, 1))


def _blocks(rng: random.Random, height: int, width: int) -> np.ndarray | None:
    """Two or three small rectangles that do not touch each other, or None when they happened to touch."""
    mask = np.zeros((height, width), dtype=bool)
    n_blocks = rng.randint(2, 3)
    for _ in range(n_blocks):
        block_h, block_w = rng.randint(1, min(3, height)), rng.randint(1, min(3, width))
        top, left = rng.randint(0, height - block_h), rng.randint(0, width - block_w)
        mask[top : top + block_h, left : left + block_w] = True
    return mask if count_components(mask, 8) == n_blocks else None


@overload
def _painted(rng: random.Random, mask: np.ndarray) -> np.ndarray: ...
@overload
def _painted(rng: random.Random, mask: None) -> None: ...
@overload
def _painted(rng: random.Random, mask: np.ndarray | None) -> np.ndarray | None: ...
def _painted(rng: random.Random, mask: np.ndarray | None) -> np.ndarray | None:
    """Labels for `mask` following a random color pattern (None for no mask)."""
    if mask is None:
        return None
    indices = np.indices(mask.shape)
    rows, cols = indices[0], indices[1]
    pattern = rng.choices(COLOR_PATTERNS, weights=_PATTERN_WEIGHTS)[0]
    n_labels = rng.randint(2, 3)
    labels: np.ndarray
    if pattern == "top_bottom":
        labels = 1 + (rows >= rng.randint(1, max(mask.shape[0] - 1, 1)))
    elif pattern == "left_right":
        labels = 1 + (cols >= rng.randint(1, max(mask.shape[1] - 1, 1)))
    elif pattern == "random":
        labels = np.frombuffer(rng.randbytes(mask.size), dtype=np.uint8).reshape(mask.shape) % (n_labels + 1) + 1
    else:
        stripe = {"uniform": 0 * rows, "row_stripes": rows, "column_stripes": cols, "diagonal_stripes": rows + cols}
        labels = stripe[pattern] % n_labels + 1
    return np.where(mask, labels, 0).astype(np.uint8)
