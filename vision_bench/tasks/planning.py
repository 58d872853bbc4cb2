"""Sequence planning: which library templates each drawn sequence may use, worked out once per sequence.

For a drawn sequence, the allowed templates of each object filter are those that survive every
step in their reference coloring (labels as colors) and whose bounding box, carried through the
sequence, fits the grid and, with a one-cell margin, 1/n of its area for n objects (a larger one
would leave no room for the others). Constraints that read only an object's shape
(`SHAPE_CONSTRAINTS`) are settled here for every coloring; the generator checks the others again
on each painted object. Sequences that no allowed template survives are never drawn.

The object pool is the fixed `ObjectLibrary(LIBRARY_SEED)`, like COGITAO's pre-computed object
file. The caches below only save work: each holds a pure function of the library, a filter and a
sequence, so they never change what is generated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from vision_bench.errors import InfeasibleConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.objects import ALL_COLORS, ObjectLibrary
from vision_bench.tasks.placement import PlacementShape
from vision_bench.tasks.task_code import encode_task_code
from vision_bench.tasks.transformations import TRANSFORMATIONS, Transformation

LIBRARY_SEED = 0
LIBRARY = ObjectLibrary(LIBRARY_SEED)
SEQUENCE_REDRAWS = 200
REFERENCE_LISTS = 64
"""Reference lists a plan keeps (one per step prefix and filter; depth-2 sequences need 29 per filter):
a bound on memory for deep sequences, whose prefixes are many."""
SHAPE_CONSTRAINTS = frozenset({
    "crop_top_side", "crop_bottom_side", "crop_left_side", "crop_right_side", "crop_contours",
    "fill_holes_different_color", "empty_inside_pixels",
})
"""Transformations whose constraints read only an object's shape. Every transformation maps shapes to
shapes whatever the colors, so the reference coloring decides these constraints for any coloring;
other constraints (fill_holes_same_color needs one color) are checked again on the painted object."""


_TEMPLATES: dict[int, PlacementShape] = {}


def placement_shape(index: int) -> PlacementShape:
    """The placement shape of library template `index` (cached)."""
    found = _TEMPLATES.get(index)
    if found is None:
        found = _TEMPLATES[index] = PlacementShape.of(LIBRARY.labels[index] != 0)
    return found


class _Reference:
    """A template in its reference coloring (labels as colors) after some steps, with the keys under which
    constraint verdicts about it are cached: its mask for shape constraints, its cells for the others."""

    __slots__ = ("obj", "_cells_key", "_shape_key")

    def __init__(self, obj: GridObject) -> None:
        self.obj = obj
        self._cells_key: tuple[tuple[int, ...], bytes] | None = None
        self._shape_key: tuple[tuple[int, ...], bytes] | None = None

    def verdict_key(self, shape_only: bool) -> tuple[tuple[int, ...], bytes]:
        if shape_only:
            if self._shape_key is None:
                self._shape_key = (self.obj.pixels.shape, (self.obj.pixels != 0).tobytes())
            return self._shape_key
        if self._cells_key is None:
            self._cells_key = (self.obj.pixels.shape, self.obj.pixels.tobytes())
        return self._cells_key


_AFTER: dict[tuple[tuple[str, ...], int], _Reference | None] = {}
_AFTER_LIMIT = 200_000
_VERDICTS: dict[str, dict[tuple[tuple[int, ...], bytes], bool]] = {}
"""Per transformation, its verdicts by what its constraint reads (see `_Reference.verdict_key`)."""


def _verdicts(step: Transformation, references: list[_Reference | None]) -> list[bool]:
    """`step.accepts(reference.obj)` for each reference (False for None), cached in `_VERDICTS`."""
    shape_only = step.name in SHAPE_CONSTRAINTS
    cache = _VERDICTS.setdefault(step.name, {})
    verdicts = []
    for reference in references:
        if reference is None:
            verdicts.append(False)
            continue
        key = reference.verdict_key(shape_only)
        verdict = cache.get(key)
        if verdict is None:
            verdict = cache[key] = step.accepts(reference.obj)
        verdicts.append(verdict)
    return verdicts


def _after(prefix: tuple[str, ...], index: int) -> _Reference | None:
    """Template `index` in its reference coloring after `prefix`, or None if a step rejects it (memory-capped cache)."""
    key = (prefix, index)
    found = _AFTER.get(key, key)
    if found is key:
        if len(_AFTER) >= _AFTER_LIMIT:
            _AFTER.clear()
        if not prefix:
            found = _Reference(GridObject(LIBRARY.labels[index], 0, 0))
        else:
            before, step = _after(prefix[:-1], index), TRANSFORMATIONS[prefix[-1]]
            found = _Reference(step.transform(before.obj)) if _verdicts(step, [before])[0] else None
        _AFTER[key] = found
    return found  # type: ignore[return-value]


def _constrained_prefix(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` up to its last step that has constraints (empty if none has)."""
    constrained = [k for k, name in enumerate(names) if TRANSFORMATIONS[name].rejection is not None]
    return names[: constrained[-1] + 1] if constrained else ()


_BOXES: dict[tuple[tuple[str, ...], tuple[int, int]], tuple[int, int]] = {}


def _box(names: tuple[str, ...], shape: tuple[int, int]) -> tuple[int, int]:
    """Rows and columns a full box of `shape` spans over the steps of `names` that accept it."""
    key = (names, shape)
    if key not in _BOXES:
        obj = GridObject(np.ones(shape, dtype=np.uint8), 0, 0)
        top, left, bottom, right = 0, 0, shape[0], shape[1]
        for name in names:
            step = TRANSFORMATIONS[name]
            if step.accepts(obj):
                obj = step.transform(obj)
                top, left = min(top, obj.top), min(left, obj.left)
                bottom, right = max(bottom, obj.top + obj.height), max(right, obj.left + obj.width)
        _BOXES[key] = (bottom - top, right - left)
    return _BOXES[key]


@dataclass
class Sequence:
    """A drawn sequence with what the hot loop needs: its steps, which to re-check on painted objects, code."""

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        self.steps = [TRANSFORMATIONS[name] for name in self.names]
        self.verify = [step.rejection is not None and step.name not in SHAPE_CONSTRAINTS for step in self.steps]
        self.code = tuple(encode_task_code(self.names))
        self.key = "-".join(self.names)


Choice = tuple[list[int], tuple[int, ...]]
"""Template indices an object may be drawn from, and the colors it may be painted with."""


@dataclass
class Pool:
    """The templates one object filter allows (library order), the colors it allows, and each template's
    box shape as an index into `shapes` (so that per-shape work is done once per distinct shape)."""

    templates: np.ndarray
    colors: tuple[int, ...]
    shapes: list[tuple[int, int]]
    shape_of: np.ndarray

    @classmethod
    def of(cls, templates: list[int], colors: tuple[int, ...]) -> Pool:
        template_shapes = [LIBRARY.labels[i].shape for i in templates]
        shapes = sorted(set(template_shapes))
        position = {shape: k for k, shape in enumerate(shapes)}
        return cls(np.array(templates), colors, shapes, np.array([position[shape] for shape in template_shapes]))


Survivors = tuple[np.ndarray, np.ndarray, tuple[int, ...]]
"""The templates of a pool that survive a sequence, their boxes' rows and columns, the pool's colors."""


class Plan:
    """A config resolved for one split, ready for the hot loop."""

    def __init__(self, config: TaskConfig, split: str) -> None:
        self.config = resolved = config.for_split(split)
        self.split = split
        self.sequences: dict[tuple[str, ...], tuple[Sequence, list[Survivors]]] = {}
        self.choices: dict[tuple[tuple[str, ...], int, int, int], list[Choice]] = {}
        self.survivors: dict[tuple[tuple[str, ...], int], np.ndarray] = {}
        self.references: dict[tuple[tuple[str, ...], int], list[_Reference | None]] = {}
        max_height, max_width = resolved.grid_height[1], resolved.grid_width[1]
        self.pools: list[Pool] = []
        for number, object_filter in enumerate(resolved.object_filter):
            if object_filter.connectivity is None:
                object_filter = object_filter.model_copy(update={"connectivity": resolved.connectivity})
            chosen = [i for i in LIBRARY.select(object_filter).tolist()
                      if LIBRARY.labels[i].shape[0] <= max_height and LIBRARY.labels[i].shape[1] <= max_width]
            if not chosen:
                raise InfeasibleConfigError(
                    f"split {split!r}: no library object passes object filter {number} "
                    f"({object_filter.model_dump(exclude_defaults=True)}) and fits a {max_height}x{max_width} grid; "
                    "relax the filter or enlarge the grid"
                )
            self.pools.append(Pool.of(chosen, object_filter.colors or ALL_COLORS))
        smallest = min(placement_shape(i).packing_area for pool in self.pools for i in pool.templates.tolist())
        n_objects = resolved.n_objects[0]
        if n_objects * smallest > (max_height + 1) * (max_width + 1):
            raise InfeasibleConfigError(
                f"split {split!r}: {n_objects} objects cannot fit without touching in a {max_height}x{max_width} "
                f"grid (even the smallest allowed object needs {smallest} cells counting its one-cell gap); "
                "use fewer or smaller objects or a larger grid"
            )

    def _survivors(self, prefix: tuple[str, ...], number: int) -> np.ndarray:
        """Positions in pool `number` of the templates that, colored by their labels, meet the constraints of
        every step of `prefix` (cached)."""
        found = self.survivors.get((prefix, number))
        if found is None:
            if not prefix:
                found = np.arange(len(self.pools[number].templates))
            else:
                step = TRANSFORMATIONS[prefix[-1]]
                found = np.flatnonzero(_verdicts(step, self._references(prefix[:-1], number)))
            self.survivors[prefix, number] = found
        return found

    def _references(self, prefix: tuple[str, ...], number: int) -> list[_Reference | None]:
        """The templates of pool `number` after `prefix` in their reference coloring (see `_after`; cached)."""
        found = self.references.get((prefix, number))
        if found is None:
            if len(self.references) >= REFERENCE_LISTS:
                self.references.clear()
            found = self.references[prefix, number] = [_after(prefix, i)
                                                       for i in self.pools[number].templates.tolist()]
        return found

    def sequence(self, names: tuple[str, ...]) -> tuple[Sequence, list[Survivors]]:
        """The sequence and its survivors in each pool that has any."""
        found = self.sequences.get(names)
        if found is None:
            sequence, prefix = Sequence(names), _constrained_prefix(names)
            survivors = []
            for number, pool in enumerate(self.pools):
                kept = self._survivors(prefix, number)
                if len(kept):
                    shape_of = pool.shape_of[kept]
                    boxes = np.zeros((len(pool.shapes), 2), dtype=np.int64)
                    for k in np.unique(shape_of).tolist():
                        boxes[k] = _box(names, pool.shapes[k])
                    survivors.append((pool.templates[kept], boxes[shape_of], pool.colors))
            found = self.sequences[names] = (sequence, survivors)
        return found

    def choices_for(self, names: tuple[str, ...], height: int, width: int, n_objects: int) -> list[Choice]:
        """Per pool, the surviving templates whose box fits the grid and 1/n_objects of it (cached)."""
        key = (names, height, width, n_objects)
        found = self.choices.get(key)
        if found is None:
            found = []
            for templates, boxes, colors in self.sequence(names)[1]:
                rows, cols = boxes[:, 0], boxes[:, 1]
                fits = (rows <= height) & (cols <= width) & ((rows + 1) * (cols + 1) * n_objects
                                                             <= (height + 1) * (width + 1))
                if fits.any():
                    found.append((templates[fits].tolist(), colors))
            self.choices[key] = found
        return found

    def draw_sequence(self, rng: random.Random) -> Sequence:
        config = self.config
        for _ in range(SEQUENCE_REDRAWS):
            if config.sequences is not None:
                names = config.sequences[rng.randrange(len(config.sequences))]
            else:
                pool = config.transformations or ()
                names = tuple(pool[rng.randrange(len(pool))] for _ in range(rng.randint(*config.depth)))
            sequence, survivors = self.sequence(names)
            if survivors:
                return sequence
        raise InfeasibleConfigError(
            f"split {self.split!r}: no library object passing the object filter survives the drawn sequences "
            f"(for example {sequence.key}); allow other objects or other transformations"
        )

_PLANS: dict[tuple[str, str], Plan] = {}
_RECENT: dict[tuple[int, str], tuple[TaskConfig, Plan]] = {}


def plan_for(config: TaskConfig, split: str) -> Plan:
    """The plan of (config, split): found by identity for configs seen recently, else by content."""
    recent = _RECENT.get((id(config), split))
    if recent is not None and recent[0] is config:
        return recent[1]
    key = (config.model_dump_json(), split)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = Plan(config, split)
    if len(_RECENT) >= 64:
        _RECENT.clear()
    _RECENT[(id(config), split)] = (config, plan)
    return plan
