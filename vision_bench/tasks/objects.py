"""The object library and its filters.

`ObjectLibrary(seed)` builds, once and lazily, a deterministic pool of a few thousand object
templates (see `vision_bench.tasks.templates`): label maps whose labels 1..k stand for k distinct
colors. Sampling picks a template matching an `ObjectFilter` and paints its labels with k
distinct colors drawn from the caller's RNG. Every property (`vision_bench.tasks.properties`) is
invariant under such a one-to-one recoloring, so the pool is indexed once, by property, and a
sample depends only on the library seed and the caller's RNG.
"""

from __future__ import annotations

import random

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vision_bench.errors import InfeasibleConfigError
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.properties import (
    COLOR_PATTERNS,
    FOOTPRINTS,
    MAX_OBJECT_SIDE,
    SYMMETRIES,
    ColorPattern,
    Connectivity,
    Footprint,
    ObjectProperties,
    Symmetry,
    footprint_mask,
    object_properties,
)
from vision_bench.tasks.templates import generate_templates

ALL_COLORS = tuple(range(1, 10))


class ObjectFilter(BaseModel):
    """Which objects to draw: bounds on size and colors, required symmetry, connectivity, pattern, footprint.

    Unset fields do not filter. `symmetric=True` keeps objects with at least one symmetry, `False`
    those with none; `symmetries` lists symmetries an object must all have. `cogitao_symmetric` filters
    on COGITAO's narrower definition (`properties.cogitao_symmetric`), which the study presets use.
    `connectivity` 4 keeps edge-connected objects, 8 every one-piece object (diagonal steps allowed), "distance" objects
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
    cogitao_symmetric: bool | None = None

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
        for name in ("outline", "hollow", "cogitao_symmetric"):
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
        "cogitao_symmetric": props.cogitao_symmetric,
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
        self.labels = generate_templates(self.seed, self.size, self.canonical_side)
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


__all__ = [
    "ALL_COLORS", "COLOR_PATTERNS", "FOOTPRINTS", "MAX_OBJECT_SIDE", "SYMMETRIES", "ObjectFilter", "ObjectLibrary",
    "ObjectProperties", "footprint_mask", "object_properties",
]
