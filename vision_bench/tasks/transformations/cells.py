"""Cell-level helpers shared by the transformations: next color, most frequent color, holes, contours."""

from __future__ import annotations

import numpy as np

from vision_bench.tasks.grid import GridObject, component_labels, count_components

NEXT_COLOR = np.array([0, 2, 3, 4, 5, 6, 7, 8, 9, 1], dtype=np.uint8)
"""Lookup table: `NEXT_COLOR[c] == c % 9 + 1` for object colors 1-9; background 0 stays 0."""

_N_COLORS = 10


def next_color(color: int) -> int:
    """The cyclic successor over object colors: 1 -> 2, ..., 8 -> 9, 9 -> 1."""
    return color % 9 + 1


def color_counts(pixels: np.ndarray) -> np.ndarray:
    """Cells per color 0-9 (index 0 counts background cells of the bounding box)."""
    return np.bincount(pixels.ravel(), minlength=_N_COLORS)


def most_frequent_color(pixels: np.ndarray) -> int:
    """The object color covering most cells (background cells of the box never count).

    A tie goes to the tied color that COGITAO's `max(set(colors), key=colors.count)` meets first,
    colors listed in reading order: see `set_order`.
    """
    counts = color_counts(pixels)[1:]
    tied = np.flatnonzero(counts == counts.max()) + 1
    if len(tied) == 1:
        return int(tied[0])
    return next(color for color in set_order(pixels) if color in tied)


def set_order(pixels: np.ndarray) -> list[int]:
    """The object's colors in the order CPython iterates a set built from them in reading order.

    Integers hash to themselves, so the order is fixed, but it is CPython's and is spelled out here
    so that it does not depend on the interpreter. Up to four colors share a table of 8 slots:
    color c takes slot c % 8 or, when that is taken (1 and 9 share slot 1), the next free slot of
    s -> (5 * s + 1) % 8. Five or more colors get a 32-slot table, one slot each: order by value.
    """
    values, first = np.unique(pixels.ravel(), return_index=True)
    in_reading_order = [int(values[k]) for k in np.argsort(first) if values[k] != 0]
    if len(in_reading_order) >= 5:
        return sorted(in_reading_order)
    slots: dict[int, int] = {}
    for color in in_reading_order:
        slot = color % 8
        while slot in slots:
            slot = (5 * slot + 1) % 8
        slots[slot] = color
    return [slots[slot] for slot in sorted(slots)]


def enclosed_holes(mask: np.ndarray) -> np.ndarray:
    """Boolean mask (read-only) of the enclosed holes of an object given by its bounding-box mask.

    A hole is a region of background cells of the bounding box, connected through edge-adjacent
    (4-connected) steps, none of whose cells lies on the bounding-box border: it cannot reach the
    background around the object. Background 4-connectivity is the dual of object 8-connectivity,
    so a ring closed only by diagonal steps still encloses its inside.

    Results are remembered by mask content: task generation asks about the same few thousand
    shapes again and again, and labelling is the slowest step of the hole transformations.
    """
    key = (mask.shape, mask.tobytes())
    found = _HOLES.get(key)
    if found is None:
        if len(_HOLES) >= _HOLES_LIMIT:
            _HOLES.clear()
        found = _HOLES[key] = holes_of(mask)
        found.setflags(write=False)
    return found


_HOLES: dict[tuple[tuple[int, ...], bytes], np.ndarray] = {}
_HOLES_LIMIT = 100_000


def holes_of(mask: np.ndarray) -> np.ndarray:
    """`enclosed_holes` computed afresh (writable; not remembered)."""
    if mask.shape[0] < 3 or mask.shape[1] < 3 or mask[1:-1, 1:-1].all():
        return np.zeros(mask.shape, dtype=bool)
    count, labels = component_labels(~mask, 4)
    open_region = np.zeros(count, dtype=bool)
    open_region[0] = True
    for border in (labels[0], labels[-1], labels[:, 0], labels[:, -1]):
        open_region[border] = True
    return ~open_region[labels]


def has_holes(mask: np.ndarray) -> bool:
    return bool(np.count_nonzero(enclosed_holes(mask)))


def is_one_piece(mask: np.ndarray) -> bool:
    """Whether the object's cells form a single 8-connected component."""
    return count_components(mask, 8) == 1


def contour_mask(mask: np.ndarray) -> np.ndarray:
    """Object cells with at least one 4-neighbour that is background or outside the bounding box."""
    inner = np.zeros_like(mask)
    inner[1:-1, 1:-1] = (
        mask[1:-1, 1:-1] & mask[:-2, 1:-1] & mask[2:, 1:-1] & mask[1:-1, :-2] & mask[1:-1, 2:]
    )
    return mask & ~inner


def trimmed(pixels: np.ndarray, top: int, left: int) -> GridObject:
    """The object of `pixels` (box at `top`, `left`) with its box shrunk to its cells, which stay in place.

    COGITAO's `Shape(grid)` of a grid-sized array. An object without cells gets an empty 0x0 box.
    """
    any_row, any_col = np.asarray(pixels.any(axis=1)), np.asarray(pixels.any(axis=0))
    if any_row.size and any_col.size and any_row[0] and any_row[-1] and any_col[0] and any_col[-1]:  # already tight
        return GridObject(pixels, top, left)
    rows, cols = np.flatnonzero(any_row), np.flatnonzero(any_col)
    if not rows.size:
        return GridObject(np.zeros((0, 0), dtype=np.uint8), top, left)
    first_row, first_col = int(rows[0]), int(cols[0])
    return GridObject(
        pixels[first_row : int(rows[-1]) + 1, first_col : int(cols[-1]) + 1], top + first_row, left + first_col
    )


def anchored(pixels: np.ndarray, top: int, left: int) -> GridObject:
    """The cells of `pixels` in their own tight box, whose top-left corner goes to (`top`, `left`).

    COGITAO's `Shape(array)` followed by `move_to_position`: most transformations build a new array
    from the object's box and put the box of its cells at a corner of the old box, so background
    rows or columns kept at the edge of the old box (after a crop) move the cells.
    """
    tight = trimmed(pixels, 0, 0)
    return tight.moved(top, left)
