"""The visual interpretation grammar of one Compositional-ARC episode, as three selector rules.

An episode maps three indicators to three transformations of different kinds (paper 001,
section 3.1 and appendix B.3; released code `vmlc/visual_grammar/study_examples.py`):

- shape: objects of one shape (a random 8-connected shape of 1-9 cells) get one transformation;
- color: objects of one color get another;
- neighbor: objects beside the indicator object (a small object of fixed shape and color,
  at one place for the whole episode) get the third.

Each indicator is a selector of `vision_bench.tasks.selectors`, so the grammar is three rules
(selector, transformation), applied in the order shape, color, neighbor as the released code
composes them. `interpret` applies them to the objects of a grid; the indicator object itself is
picked by no rule (its shape and color differ from the other two indicators').

The neighbor rule is a near selector at `NEAR_DISTANCE`, the largest the selectors offer: the
released code only asks that the indicator be in the grid, the paper's text speaks of
proximity (see docs/fidelity.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vision_bench.tasks.carc.spec import Composition
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.selectors import MAX_NEAR_DISTANCE, Selector, footprint, parse_selector, select
from vision_bench.tasks.transformations.carc import CARC_TRANSFORMATIONS, KIND_OF, KINDS, UNCHANGED_IS_INVALID

GRID_SIDE = 10
MAX_OBJECT_CELLS = 9
NEAR_DISTANCE = MAX_NEAR_DISTANCE
INDICATORS = ("shape", "color", "neighbor")
"""The three indicators, in the order their transformations are composed."""

INDICATOR_SHAPES: tuple[tuple[str, ...], ...] = (
    ("#",), ("##",), ("#", "#"), (".#", "#."), ("#.", ".#"), (".#", "##"), ("##", "#."), ("#.", "##"),
    ("##", "##"), ("##", ".#"),
)
"""The ten shapes of the neighbor indicator object (released code `gen_indicator_shapes`)."""


@dataclass(frozen=True)
class Grammar:
    """One episode's grammar: a transformation per indicator and what each indicator looks like."""

    transformations: tuple[str, str, str]
    """The transformation of the shape, color and neighbor indicator, in `INDICATORS` order."""
    shape: tuple[str, ...]
    color: int
    indicator: GridObject
    free_colors: tuple[int, ...]
    """Colors of objects that the color rule must not pick (neither the rule's nor the indicator's)."""

    @property
    def composition(self) -> Composition:
        """The episode's level-2 composition: its three kinds in `KINDS` order."""
        order = list(KINDS)
        return tuple(sorted((KIND_OF[name] for name in self.transformations), key=order.index))  # type: ignore[return-value]

    @cached_property
    def selectors(self) -> tuple[Selector, Selector, Selector]:
        """The selectors of the shape, color and neighbor rules, in `INDICATORS` order."""
        return tuple(self._selector(indicator) for indicator in INDICATORS)  # type: ignore[return-value]

    def _selector(self, indicator: str) -> Selector:
        if indicator == "shape":
            return parse_selector({"kind": "shape", "shape": list(self.shape)})
        if indicator == "color":
            return parse_selector({"kind": "color", "color": self.color})
        marker = {"kind": "all_of", "selectors": [
            {"kind": "color", "color": self.indicator.colors[0]},
            {"kind": "shape", "shape": list(footprint(self.indicator))},
        ]}
        return parse_selector({"kind": "near", "indicator": marker, "distance": NEAR_DISTANCE})

    def sequence(self, indicators: tuple[str, ...] = INDICATORS) -> tuple[str, ...]:
        """The transformations of `indicators`, in composition order."""
        return tuple(name for indicator, name in zip(INDICATORS, self.transformations) if indicator in indicators)

    def picked_by(self, objects: list[GridObject]) -> list[tuple[str, ...]]:
        """For each object, the indicators whose rule picks it, in composition order."""
        flags = [select(selector, objects) for selector in self.selectors]
        return [tuple(ind for ind, column in zip(INDICATORS, flags) if column[k]) for k in range(len(objects))]

    def describe(self) -> str:
        shape = "/".join(self.shape)
        return (f"shape {shape} -> {self.transformations[0]}; color {self.color} -> {self.transformations[1]}; "
                f"beside indicator {'/'.join(footprint(self.indicator))} of color {self.indicator.colors[0]} -> "
                f"{self.transformations[2]}")


def apply_transformation(obj: GridObject, name: str) -> GridObject | None:
    """`obj` transformed by one C-ARC transformation, or None when C-ARC calls the result invalid
    (outside the 10x10 grid, or a rotation / reflection that leaves the object as it was)."""
    result = CARC_TRANSFORMATIONS[name].transform(obj)
    top, left, bottom, right = result.bbox
    if top < 0 or left < 0 or bottom > GRID_SIDE or right > GRID_SIDE:
        return None
    if name in UNCHANGED_IS_INVALID and result == obj:
        return None
    return result


def apply_sequence(obj: GridObject, names: tuple[str, ...]) -> GridObject | None:
    """`obj` after each of `names` in turn, or None when a step is invalid."""
    for name in names:
        found = apply_transformation(obj, name)
        if found is None:
            return None
        obj = found
    return obj


def interpret(grammar: Grammar, objects: list[GridObject],
              picked: list[tuple[str, ...]] | None = None) -> list[GridObject] | None:
    """The objects after the grammar's rules (each object gets the rules that pick it, in order),
    or None when a step is invalid. `picked` is `grammar.picked_by(objects)` when the caller has it.
    Overlap and touching are the caller's to check."""
    results = []
    for obj, rules in zip(objects, grammar.picked_by(objects) if picked is None else picked):
        found = apply_sequence(obj, grammar.sequence(rules))
        if found is None:
            return None
        results.append(found)
    return results


def shape_object(rows: tuple[str, ...], color: int, rng: random.Random) -> GridObject:
    """An object of shape `rows` and `color` at a uniformly drawn place where it fits the grid."""
    mask = np.array([[cell == "#" for cell in row] for row in rows])
    top = rng.randint(0, GRID_SIDE - mask.shape[0])
    left = rng.randint(0, GRID_SIDE - mask.shape[1])
    return GridObject(np.where(mask, color, 0).astype(np.uint8), top, left)


def random_walk_object(color: int, size: int, rng: random.Random) -> GridObject | None:
    """A random 8-connected object of `size` cells grown by a random walk inside the grid, as the
    released `generate_group` draws one (at most 4 x size moves), or None when the walk fell short."""
    current = (rng.randint(0, GRID_SIDE - 1), rng.randint(0, GRID_SIDE - 1))
    cells = [current]
    moves = 0
    while len(cells) < size and moves < 4 * size:
        neighbors = [(current[0] + dr, current[1] + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)
                     if (dr or dc) and 0 <= current[0] + dr < GRID_SIDE and 0 <= current[1] + dc < GRID_SIDE]
        current = neighbors[int(rng.random() * len(neighbors))]
        if current not in cells:
            cells.append(current)
        moves += 1
    if len(cells) < size:
        return None
    rows, cols = zip(*cells)
    top, left = min(rows), min(cols)
    pixels = np.zeros((max(rows) - top + 1, max(cols) - left + 1), dtype=np.uint8)
    for row, col in cells:
        pixels[row - top, col - left] = color
    return GridObject(pixels, top, left)


def random_shape(rng: random.Random, forbidden: tuple[str, ...]) -> tuple[str, ...]:
    """The footprint of a random-walk object of 1-9 cells that differs from `forbidden`."""
    while True:
        obj = random_walk_object(1, rng.randint(1, MAX_OBJECT_CELLS), rng)
        if obj is not None and footprint(obj) != forbidden:
            return footprint(obj)


def draw_grammar(composition: Composition, rng: random.Random) -> Grammar:
    """A grammar whose three transformations have the kinds of `composition`, assigned to the
    indicators in a random order, each with a random setting; random colors and shapes."""
    kinds = list(composition)
    rng.shuffle(kinds)
    transformations = tuple(KINDS[kind][rng.randint(0, 1)] for kind in kinds)
    colors = list(range(1, 10))
    color = colors.pop(rng.randint(0, len(colors) - 1))
    indicator_color = colors.pop(rng.randint(0, len(colors) - 1))
    indicator_shape = INDICATOR_SHAPES[rng.randint(0, len(INDICATOR_SHAPES) - 1)]
    indicator = shape_object(indicator_shape, indicator_color, rng)
    shape = random_shape(rng, forbidden=indicator_shape)
    return Grammar(transformations, shape, color, indicator, tuple(colors))  # type: ignore[arg-type]
