"""SVIB's object factors in the grid world: the vocabularies, each object's footprint, and reading them back.

SVIB (paper 003; `data_creation/dsprites/macros.py`) gives each object a colour, a shape and a size,
four values each, in this order:

- colours green, magenta, azure, orange: palette indices 3, 6, 8, 7 (the same names in ARC's palette);
- shapes circle, triangle, square, star_4, drawn as `SIZES[size]`-cell square footprints:
  circle = the square without its four corner cells, triangle = the lower-left staircase
  (row r holds columns 0..r), square = every cell, star_4 = the two diagonals (an X, SVIB's
  four-pointed star turned by 45 degrees);
- sizes 3, 4, 5, 6 cells per side.

The four footprints differ at every size, and a footprint's side is its size, so an object's
factors are read back from its cells alone (`read_objects`). Objects are 8-connected (the star is
connected through its diagonals), and scenes keep one empty cell between objects, so each object is
one connected component. The quadrant (1 top right, 2 top left, 3 bottom left, 4 bottom right, as in
SVIB's `rule.py`) is read from the object's centre; it is not part of a combination.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from vision_bench.tasks.grid import extract_objects

COLOURS = (3, 6, 8, 7)
"""Palette index of colour factor 0..3 (SVIB's green, magenta, azure, orange)."""
COLOUR_NAMES = ("green", "magenta", "azure", "orange")
SHAPES = ("circle", "triangle", "square", "star_4")
"""Shape factor 0..3, SVIB's names and order."""
SIZES = (3, 4, 5, 6)
"""Cells per side of size factor 0..3."""
VOCABULARY = 4
"""Values per factor: SVIB's rules work modulo this."""
FACTORS = ("colour", "shape", "size")
"""The factors of a combination, in SVIB's order (a combination is a (colour, shape, size) triple)."""

Combination = tuple[int, int, int]

FACTOR_METRICS = ("factor_accuracy", "factor_colour_accuracy", "factor_shape_accuracy", "factor_size_accuracy",
                  "factor_position_accuracy")
"""The metrics that read objects' factors back from predicted grids (`vision_bench.metrics.factors`): all three
factors of an object right, each factor alone, and the position (for the motion rules); SVIB scenes only. All
begin with `factor_`: `color_accuracy` and `shape_accuracy` are Compositional-ARC's count metrics."""


@cache
def footprint(shape: int, size: int) -> np.ndarray:
    """The (side, side) boolean footprint of shape factor `shape` at size factor `size` (read-only)."""
    side = SIZES[size]
    rows, cols = np.indices((side, side))
    name = SHAPES[shape]
    if name == "circle":
        corners = ((rows == 0) | (rows == side - 1)) & ((cols == 0) | (cols == side - 1))
        cells = ~corners
    elif name == "triangle":
        cells = cols <= rows
    elif name == "square":
        cells = np.ones((side, side), dtype=bool)
    else:  # star_4
        cells = (rows == cols) | (rows + cols == side - 1)
    cells.setflags(write=False)
    return cells


@dataclass(frozen=True)
class SceneObject:
    """One object: its factors (indices into the vocabularies) and the top-left cell of its footprint."""

    colour: int
    shape: int
    size: int
    top: int
    left: int

    @property
    def side(self) -> int:
        return SIZES[self.size]

    @property
    def combination(self) -> Combination:
        return self.colour, self.shape, self.size

    def centre(self) -> tuple[float, float]:
        """(row, column) of the footprint's centre, in cells (a cell's centre is at +0.5)."""
        return self.top + self.side / 2, self.left + self.side / 2

    def quadrant(self, grid_size: int) -> int:
        """SVIB's quadrant of the centre: 1 top right, 2 top left, 3 bottom left, 4 bottom right. A centre on the
        middle line counts as SVIB's `rule.py` counts x = 0.5 and y = 0.5: right and top."""
        row, col = self.centre()
        right, top = col >= grid_size / 2, row <= grid_size / 2
        return {(True, True): 1, (False, True): 2, (False, False): 3, (True, False): 4}[(right, top)]

    def position(self, grid_size: int) -> tuple[float, float]:
        """SVIB's (x, y) in [0, 1]: x rightwards, y upwards (SVIB's frame), of the footprint's centre."""
        row, col = self.centre()
        return col / grid_size, 1 - row / grid_size


def draw(objects: list[SceneObject] | tuple[SceneObject, ...], grid_size: int) -> np.ndarray:
    """The (grid_size, grid_size) uint8 grid of `objects` on background 0 (later objects over earlier ones)."""
    grid = np.zeros((grid_size, grid_size), dtype=np.uint8)
    for obj in objects:
        region = grid[obj.top:obj.top + obj.side, obj.left:obj.left + obj.side]
        region[footprint(obj.shape, obj.size)] = COLOURS[obj.colour]
    return grid


@dataclass(frozen=True)
class ReadObject:
    """One connected object as read from a grid: each factor's index, or None where the cells match no
    value (a colour outside the four, several colours, a footprint no shape and size makes)."""

    colour: int | None
    shape: int | None
    size: int | None
    top: int
    left: int
    cells: int

    @property
    def factors(self) -> tuple[int | None, int | None, int | None]:
        return self.colour, self.shape, self.size

    def scene_object(self) -> SceneObject | None:
        """The object these factors make, when all three were read."""
        if self.colour is None or self.shape is None or self.size is None:
            return None
        return SceneObject(self.colour, self.shape, self.size, self.top, self.left)


@cache
def _shapes_by_footprint() -> dict[tuple[int, bytes], tuple[int, int]]:
    return {(SIZES[size], footprint(shape, size).tobytes()): (shape, size)
            for shape in range(len(SHAPES)) for size in range(len(SIZES))}


def read_objects(grid: np.ndarray) -> list[ReadObject]:
    """Every 8-connected object of `grid` with the factors its cells show, in row-major order of first cell."""
    read = []
    for obj in extract_objects(np.asarray(grid, dtype=np.uint8), connectivity=8):
        colours = set(np.unique(obj.pixels[obj.mask]).tolist())
        colour = COLOURS.index(colours.pop()) if len(colours) == 1 and colours <= set(COLOURS) else None
        height, width = obj.mask.shape
        shape_size = _shapes_by_footprint().get((height, obj.mask.tobytes())) if height == width else None
        shape, size = shape_size if shape_size is not None else (None, None)
        read.append(ReadObject(colour, shape, size, obj.top, obj.left, int(obj.mask.sum())))
    return read


def scene_objects(grid: np.ndarray) -> list[SceneObject]:
    """The objects of a scene grid, every factor read; ValueError naming the first object that is not one."""
    objects = []
    for obj in read_objects(grid):
        scene_object = obj.scene_object()
        if scene_object is None:
            raise ValueError(f"the object at row {obj.top}, column {obj.left} has no colour, shape and size of "
                             "SVIB's scenes; this grid is not a scene of the svib/ studies")
        objects.append(scene_object)
    return objects


__all__ = ["COLOURS", "COLOUR_NAMES", "FACTORS", "FACTOR_METRICS", "SHAPES", "SIZES", "VOCABULARY", "Combination",
           "ReadObject", "SceneObject", "draw", "footprint", "read_objects", "scene_objects"]
