"""The object library: procedural objects, their properties, and filters over those properties.

`object_properties(pixels)` describes any object with the grid-world property vocabulary (size,
symmetry, connectivity, colors, color pattern, footprint, holes). `ObjectLibrary(seed)` builds,
once and lazily, a deterministic pool of a few thousand object *templates*: label maps whose
labels 1..k stand for k distinct colors. Sampling picks a template matching an `ObjectFilter`
and paints its labels with k distinct colors drawn from the caller's RNG. Every property is
invariant under such a one-to-one recoloring, so the pool is indexed once, by property, and a
sample depends only on the library seed and the caller's RNG.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from scipy import ndimage

from render.grid import GridError, validate_grid
from vision_bench.errors import InfeasibleConfigError
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations import enclosed_holes
from vision_bench.tasks.transformations.cells import count_components

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
ALL_COLORS = tuple(range(1, 10))

_CROSS = ndimage.generate_binary_structure(2, 1)


@dataclass(frozen=True)
class ObjectProperties:
    """What the library knows about one object (its bounding box is trimmed to its cells first).

    `connectivity` is 4 when the cells form one edge-connected piece, 8 when they need diagonal
    steps to be one piece, and "distance" for separate blocks. `outline` is True when the object
    is the one-cell contour of a filled `footprint`. `hollow` means at least one enclosed hole.
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
        mask = mask & ~ndimage.binary_erosion(mask, structure=_CROSS, border_value=0)
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


class ObjectFilter(BaseModel):
    """Which objects to draw: bounds on size and colors, required symmetry, connectivity, pattern, footprint.

    Unset fields do not filter. `symmetric=True` keeps objects with at least one symmetry, `False`
    those with none; `symmetries` lists symmetries an object must all have. `connectivity` 4 keeps
    edge-connected objects, 8 every one-piece object (diagonal steps allowed), "distance" objects
    made of separate blocks. `colors` restricts the colors an object may use.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_height: int = Field(1, ge=1, le=MAX_OBJECT_SIDE)
    max_height: int = Field(MAX_OBJECT_SIDE, ge=1, le=MAX_OBJECT_SIDE)
    min_width: int = Field(1, ge=1, le=MAX_OBJECT_SIDE)
    max_width: int = Field(MAX_OBJECT_SIDE, ge=1, le=MAX_OBJECT_SIDE)
    min_cells: int = Field(1, ge=1)
    max_cells: int | None = Field(None, ge=1)
    n_colors: int | None = Field(None, ge=1, le=9)
    min_colors: int = Field(1, ge=1, le=9)
    max_colors: int = Field(9, ge=1, le=9)
    colors: tuple[int, ...] | None = None
    symmetric: bool | None = None
    symmetries: tuple[Symmetry, ...] = ()
    connectivity: Connectivity | None = None
    color_pattern: tuple[ColorPattern, ...] | None = None
    footprint: tuple[Footprint, ...] | None = None
    outline: bool | None = None
    hollow: bool | None = None

    @field_validator("colors", "symmetries", "color_pattern", "footprint", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, (str, int)) else value

    @field_validator("colors")
    @classmethod
    def _valid_colors(cls, colors: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if colors is None:
            return None
        if not colors or any(c not in ALL_COLORS for c in colors) or len(set(colors)) != len(colors):
            raise ValueError(f"colors must be distinct object colors 1-9, got {list(colors)}")
        return tuple(sorted(colors))

    @model_validator(mode="after")
    def _consistent(self) -> ObjectFilter:
        for low, high in (("min_height", "max_height"), ("min_width", "max_width"), ("min_colors", "max_colors")):
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"{low} ({getattr(self, low)}) is larger than {high} ({getattr(self, high)})")
        if self.max_cells is not None and self.min_cells > self.max_cells:
            raise ValueError(f"min_cells ({self.min_cells}) is larger than max_cells ({self.max_cells})")
        if self.symmetric is False and self.symmetries:
            raise ValueError("symmetric is false but symmetries are required; drop one of them")
        return self

    def matches(self, props: ObjectProperties) -> bool:
        """Whether an object with these properties passes the filter."""
        table = {name: np.array([value]) for name, value in _property_row(props).items()}
        return bool(self._select(table)[0])

    def _select(self, table: dict[str, np.ndarray]) -> np.ndarray:
        """Vectorized `matches` over a table of property columns (see `_property_row`)."""
        h, w, n, k = table["height"], table["width"], table["n_cells"], table["n_colors"]
        keep = (h >= self.min_height) & (h <= self.max_height) & (w >= self.min_width) & (w <= self.max_width)
        keep &= (n >= self.min_cells) & (k >= self.min_colors) & (k <= self.max_colors)
        if self.max_cells is not None:
            keep &= n <= self.max_cells
        if self.n_colors is not None:
            keep &= k == self.n_colors
        if self.colors is not None:
            keep &= k <= len(self.colors)
        required = sum(1 << SYMMETRIES.index(s) for s in self.symmetries)
        keep &= (table["symmetry_bits"] & required) == required
        if self.symmetric is not None:
            keep &= (table["symmetry_bits"] != 0) == self.symmetric
        if self.connectivity is not None:
            allowed = (4, 8) if self.connectivity == 8 else (self.connectivity,)
            keep &= np.isin(table["connectivity"], [_CONNECTIVITY_CODES[c] for c in allowed])
        for name, vocabulary in (("color_pattern", COLOR_PATTERNS), ("footprint", FOOTPRINTS)):
            wanted = getattr(self, name)
            if wanted is not None:
                keep &= np.isin(table[name], [vocabulary.index(v) for v in wanted])
        for name in ("outline", "hollow"):
            if getattr(self, name) is not None:
                keep &= table[name] == getattr(self, name)
        return keep


_CONNECTIVITY_CODES = {4: 0, 8: 1, "distance": 2}


def _property_row(props: ObjectProperties) -> dict[str, int | bool]:
    return {
        "height": props.height,
        "width": props.width,
        "n_cells": props.n_cells,
        "n_colors": props.n_colors,
        "symmetry_bits": sum(1 << SYMMETRIES.index(s) for s in props.symmetries),
        "connectivity": _CONNECTIVITY_CODES[props.connectivity],
        "color_pattern": COLOR_PATTERNS.index(props.color_pattern),
        "footprint": FOOTPRINTS.index(props.footprint),
        "outline": props.outline,
        "hollow": props.hollow,
    }


class ObjectLibrary:
    """A deterministic pool of object templates built lazily from `seed`, indexed by property.

    The pool holds `size` distinct templates (at least the canonical ones): every rectangle /
    ellipse / diamond (filled and outline) up to `canonical_side` cells a side, then random
    templates up to `MAX_OBJECT_SIDE` cells a side: grown blobs (4- or 8-connected), symmetrized
    blobs, rings and multi-block ("distance") shapes, each painted with one of the color patterns.
    """

    def __init__(self, seed: int = 0, size: int = 4096, canonical_side: int = 10) -> None:
        self.seed = seed
        self.size = size
        self.canonical_side = canonical_side
        self._selections: dict[ObjectFilter, np.ndarray] = {}

    labels: list[np.ndarray]
    """The templates: uint8 label maps, labels 1..k standing for k distinct colors (0 = not the object)."""
    properties: list[ObjectProperties]
    property_dicts: list[dict[str, object]]
    n_colors: list[int]
    _table: dict[str, np.ndarray]

    def __getattr__(self, name: str) -> object:
        """Builds the pool on first use of `labels`, `properties`, `property_dicts`, `n_colors`."""
        if name not in ("labels", "properties", "property_dicts", "n_colors", "_table"):
            raise AttributeError(name)
        self.labels = _generate_templates(self.seed, self.size, self.canonical_side)
        self.properties = [object_properties(template) for template in self.labels]
        self.property_dicts = [props.to_dict() for props in self.properties]
        self.n_colors = [props.n_colors for props in self.properties]
        rows = [_property_row(props) for props in self.properties]
        self._table = {column: np.array([row[column] for row in rows]) for column in rows[0]}
        return getattr(self, name)

    def __len__(self) -> int:
        return len(self.labels)

    def select(self, object_filter: ObjectFilter) -> np.ndarray:
        """Indices of the templates passing `object_filter` (computed once per filter)."""
        selection = self._selections.get(object_filter)
        if selection is None:
            selection = np.flatnonzero(object_filter._select(self._table))
            self._selections[object_filter] = selection
        return selection

    def paint(self, index: int, rng: random.Random,
              colors: tuple[int, ...] = ALL_COLORS) -> tuple[np.ndarray, list[int]]:
        """Template `index` with its labels 1..k replaced by k distinct colors drawn from `colors`;
        returns the pixels and the colors in label order."""
        available = list(colors)
        chosen = [available.pop(int(rng.random() * len(available))) for _ in range(self.n_colors[index])]
        return np.array([0, *chosen], dtype=np.uint8)[self.labels[index]], chosen

    def sample(self, rng: random.Random, object_filter: ObjectFilter | None = None) -> GridObject:
        """A random object passing `object_filter`, anchored at (0, 0); `rng` is a `random.Random`."""
        object_filter = object_filter or ObjectFilter()
        selection = self.select(object_filter)
        if len(selection) == 0:
            raise InfeasibleConfigError(
                f"no object in the library passes the filter {object_filter.model_dump(exclude_defaults=True)}; "
                "relax the filter"
            )
        index = int(selection[rng.randrange(len(selection))])
        return GridObject(self.paint(index, rng, object_filter.colors or ALL_COLORS)[0], 0, 0)


def _generate_templates(seed: int, size: int, canonical_side: int) -> list[np.ndarray]:
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
        return _painted(rng, blob & ~ndimage.binary_erosion(blob, structure=_CROSS, border_value=0))
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


def _painted(rng: random.Random, mask: np.ndarray | None) -> np.ndarray | None:
    """Labels for `mask` following a random color pattern."""
    if mask is None:
        return None
    rows, cols = np.indices(mask.shape)
    pattern = rng.choices(COLOR_PATTERNS, weights=_PATTERN_WEIGHTS)[0]
    n_labels = rng.randint(2, 3)
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
