"""Object properties: the grid-world vocabulary (size, symmetry, connectivity, colors, color pattern,
footprint, holes) and `object_properties(pixels)`, which describes any object with it."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Literal, get_args

import numpy as np
from scipy import ndimage

from render.grid import GridError, validate_grid
from vision_bench.tasks.grid import count_components
from vision_bench.tasks.transformations import enclosed_holes

Symmetry = Literal["horizontal", "vertical", "diagonal", "anti_diagonal", "point"]
ColorPattern = Literal["uniform", "row_stripes", "column_stripes", "diagonal_stripes", "top_bottom", "left_right",
                       "random"]
Footprint = Literal["rectangle", "square", "disk", "ellipse", "diamond", "irregular"]
Connectivity = Literal[4, 8, "distance"]

SYMMETRIES: tuple[str, ...] = get_args(Symmetry)
"""horizontal: unchanged by mirror_horizontal (top <-> bottom); vertical: by mirror_vertical;
diagonal: equal to its transpose; anti_diagonal: to its anti-transpose; point: to its 180-degree turn."""
COLOR_PATTERNS: tuple[str, ...] = get_args(ColorPattern)
FOOTPRINTS: tuple[str, ...] = get_args(Footprint)
MAX_OBJECT_SIDE = 15

CROSS = ndimage.generate_binary_structure(2, 1)
"""Edge neighbours: the structuring element of 4-connectivity and one-cell erosion."""


@dataclass(frozen=True)
class ObjectProperties:
    """What the library knows about one object (its bounding box is trimmed to its cells first).

    `connectivity` is 4 when the cells form one edge-connected piece, 8 when they need diagonal
    steps to be one piece, and "distance" for separate blocks. `outline` is True when the object
    is the one-cell contour of a filled `footprint`. `hollow` means at least one enclosed hole.
    `cogitao_symmetric` is COGITAO's `is_shape_symmetric`, which the study presets filter on (see
    `cogitao_symmetric`).
    """

    height: int
    width: int
    n_cells: int
    n_colors: int
    symmetries: tuple[str, ...]
    connectivity: int | str
    color_pattern: str
    footprint: str
    outline: bool
    hollow: bool
    cogitao_symmetric: bool

    @property
    def symmetric(self) -> bool:
        return bool(self.symmetries)

    def to_dict(self) -> dict[str, object]:
        return {field.name: getattr(self, field.name) for field in fields(self)} | {"symmetries": list(self.symmetries)}


def object_properties(pixels: object) -> ObjectProperties:
    """The properties of an object given as a 2-D array of colors (0 = not part of the object)."""
    array = validate_grid(pixels, name="object")
    mask = array != 0
    if not mask.any():
        raise GridError("object: it has no cell; an object needs at least one non-zero cell")
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    array = array[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    mask = array != 0
    n_colors = len(np.unique(array[mask]))
    footprint, outline = _footprint(mask)
    return ObjectProperties(
        height=array.shape[0],
        width=array.shape[1],
        n_cells=int(mask.sum()),
        n_colors=n_colors,
        symmetries=_symmetries(array),
        connectivity=_connectivity(mask),
        color_pattern=_color_pattern(array, mask, n_colors),
        footprint=footprint,
        outline=outline,
        hollow=bool(enclosed_holes(mask).any()),
        cogitao_symmetric=cogitao_symmetric(array),
    )


def _symmetries(array: np.ndarray) -> tuple[str, ...]:
    square = array.shape[0] == array.shape[1]
    images = {
        "horizontal": array[::-1],
        "vertical": array[:, ::-1],
        "diagonal": array.T if square else None,
        "anti_diagonal": array[::-1, ::-1].T if square else None,
        "point": array[::-1, ::-1],
    }
    return tuple(name for name, image in images.items() if image is not None and np.array_equal(array, image))


def cogitao_symmetric(array: np.ndarray) -> bool:
    """COGITAO's `is_shape_symmetric` on a trimmed object: its footprint (cells, colors ignored) is unchanged
    by mirror_horizontal or mirror_vertical, or, for a square box, its colors equal their transpose or
    anti-transpose. There is no point symmetry, and mirrors ignore colors while diagonals do not
    (arcworld/conditionals/single_shape_conditionals.py). It differs from `symmetries`, which reads colors
    for every symmetry and includes the 180-degree turn."""
    mask = array != 0
    if np.array_equal(mask, mask[::-1]) or np.array_equal(mask, mask[:, ::-1]):
        return True
    if array.shape[0] != array.shape[1]:
        return False
    return bool(np.array_equal(array, array.T) or np.array_equal(array, array[::-1, ::-1].T))


def _connectivity(mask: np.ndarray) -> int | str:
    if count_components(mask, 4) == 1:
        return 4
    if count_components(mask, 8) == 1:
        return 8
    return "distance"


def _line_colors(array: np.ndarray, mask: np.ndarray, axis: int) -> np.ndarray | None:
    """The single color of each occupied row (axis=1) or column (axis=0); None if a line has two colors."""
    occupied = mask.any(axis=axis)
    highest = np.where(mask, array, 0).max(axis=axis)[occupied]
    lowest = np.where(mask, array, 10).min(axis=axis)[occupied]
    return highest if np.array_equal(highest, lowest) else None


def _color_pattern(array: np.ndarray, mask: np.ndarray, n_colors: int) -> str:
    if n_colors == 1:
        return "uniform"
    for axis, split, stripes in ((1, "top_bottom", "row_stripes"), (0, "left_right", "column_stripes")):
        colors = _line_colors(array, mask, axis)
        if colors is not None:
            changes = np.count_nonzero(np.diff(colors.astype(np.int16)))
            return split if n_colors == 2 and changes == 1 else stripes
    rows, cols = np.nonzero(mask)
    values = array[rows, cols].astype(np.int64)
    for key in (rows + cols, rows - cols + array.shape[1]):
        if len(np.unique(key * 16 + values)) == len(np.unique(key)):
            return "diagonal_stripes"
    return "random"


@lru_cache(maxsize=4096)
def footprint_mask(kind: str, height: int, width: int, outline: bool = False) -> np.ndarray:
    """The canonical rectangle, ellipse or diamond filling a height x width box, or its one-cell contour.

    Cell (r, c) belongs to the ellipse when its centre lies inside the inscribed ellipse, and to the
    diamond when its centre lies inside the inscribed rhombus (exact integer arithmetic).
    """
    r = np.arange(height)[:, None]
    c = np.arange(width)[None, :]
    dr, dc = np.abs(2 * r + 1 - height), np.abs(2 * c + 1 - width)
    if kind == "rectangle":
        mask = np.ones((height, width), dtype=bool)
    elif kind == "ellipse":
        mask = dr**2 * width**2 + dc**2 * height**2 <= height**2 * width**2
    elif kind == "diamond":
        mask = dr * width + dc * height <= height * width
    else:
        raise ValueError(f"unknown footprint kind {kind!r}")
    if outline:
        mask = mask & ~ndimage.binary_erosion(mask, structure=CROSS, border_value=0)
    mask.setflags(write=False)
    return mask


def _footprint(mask: np.ndarray) -> tuple[str, bool]:
    height, width = mask.shape
    square = height == width
    names = {"rectangle": "square" if square else "rectangle", "ellipse": "disk" if square else "ellipse"}
    for kind in ("rectangle", "ellipse", "diamond"):
        filled = footprint_mask(kind, height, width)
        if np.array_equal(mask, filled):
            return names.get(kind, kind), False
        contour = footprint_mask(kind, height, width, outline=True)
        if not np.array_equal(contour, filled) and np.array_equal(mask, contour):
            return names.get(kind, kind), True
    return "irregular", False
