"""Task generation: objects from the library, placed without touching, transformed step by step.

Reproducibility: sample `index` of `split` depends only on (config, split, index): its RNG is a
`random.Random` seeded from blake2b(seed, split, index), so any worker count or shard layout
yields the same dataset, and one sample can be regenerated alone. The object pool is the fixed
`ObjectLibrary(LIBRARY_SEED)`, like COGITAO's pre-computed object file; the caches below only
save work (each holds a pure function of the library, a filter and a sequence).

Disjoint splits: every input grid has one owning split, a fixed hash partition: blake2b of its
shape and cells mapped to [0, 1) and cut by `OWNER_WEIGHTS`. A split keeps only the inputs it
owns, so no input grid appears in two splits, whatever their configs and sizes.

Objects: for a drawn sequence, the allowed templates of each object filter are those that survive
every step in their reference coloring (labels as colors) and whose bounding box, carried through
the sequence, fits the grid and, with a one-cell margin, 1/n of its area for n objects (a larger
one would leave no room for the others). Each object picks a filter uniformly among those with an
allowed template, then a template uniformly, then colors; constraints that depend on colors are
checked again on the painted object. Sequences that no allowed template survives are never drawn.

Feasibility: obvious impossibilities fail up front; otherwise a sample gives up after
`MAX_ATTEMPTS` attempts and `InfeasibleConfigError` names the constraint that kept failing.
"""

from __future__ import annotations

import bisect
import gc
import hashlib
import itertools
import multiprocessing
from multiprocessing.pool import AsyncResult
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar
from dataclasses import dataclass, fields

import numpy as np

from vision_bench.errors import InfeasibleConfigError
from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.objects import ALL_COLORS, ObjectLibrary
from vision_bench.tasks.placement import Canvas, PlacementShape
from vision_bench.tasks.task_code import IDENTITY_TOKEN, TASK_CODE_LENGTH, encode_task_code
from vision_bench.tasks.transformations import TRANSFORMATIONS, Transformation

LIBRARY_SEED = 0
OWNER_WEIGHTS = {"train": 0.9, "val_id": 0.025, "val_ood": 0.025, "test_id": 0.025, "test_ood": 0.025}
MAX_ATTEMPTS = 1000
DRAW_TRIES = 50
ROOM_TRIES = 20
SEQUENCE_REDRAWS = 200
CHUNK = 128
SHAPE_CONSTRAINTS = frozenset({
    "crop_top_side", "crop_bottom_side", "crop_left_side", "crop_right_side", "crop_contours",
    "fill_holes_different_color", "empty_inside_pixels",
})
"""Transformations whose constraints read only an object's shape. Every transformation maps shapes to
shapes whatever the colors, so the reference coloring decides these constraints for any coloring;
other constraints (fill_holes_same_color needs one color) are checked again on the painted object."""

_LIBRARY = ObjectLibrary(LIBRARY_SEED)
T = TypeVar("T")
_OWNER_BOUNDS = list(itertools.accumulate(OWNER_WEIGHTS[split] for split in SPLITS))


@dataclass(frozen=True, eq=False)
class TaskSample:
    """One input/output pair with everything needed to explain or regenerate it.

    `frames` is [input, after step 1, ..., output]; `objects` holds one mapping per input object,
    in the order `extract_objects` finds them (`bbox` and `output_bbox` as [top, left, bottom,
    right), `colors`, `properties`). Imported tasks have no sequence, objects or seed, an
    all-identity task code, and frames (input, output).
    """

    input: np.ndarray
    output: np.ndarray
    sequence: tuple[str, ...] = ()
    frames: tuple[np.ndarray, ...] = ()
    objects: tuple[dict, ...] = ()
    task_code: tuple[int, ...] = (IDENTITY_TOKEN,) * TASK_CODE_LENGTH
    task_key: str = ""
    seed: int | None = None
    split: str = "train"
    index: int = 0

    def __post_init__(self) -> None:
        if not self.frames:
            object.__setattr__(self, "frames", (self.input, self.output))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskSample):
            return NotImplemented
        grids = ("input", "output", "frames")
        return (
            len(self.frames) == len(other.frames)
            and all(np.array_equal(a, b) for a, b in zip((self.input, self.output, *self.frames),
                                                          (other.input, other.output, *other.frames)))
            and all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name not in grids)
        )


def sample_rng(seed: int, split: str, index: int) -> random.Random:
    """The RNG of one sample: a function of (seed, split, index) only."""
    digest = hashlib.blake2b(f"{seed}/{split}/{index}".encode(), digest_size=16).digest()
    return random.Random(int.from_bytes(digest, "little"))


def owning_split(grid: np.ndarray) -> str:
    """The split that owns an input grid under the fixed hash partition."""
    digest = hashlib.blake2b(bytes(grid.shape) + grid.tobytes(), digest_size=8).digest()
    position = int.from_bytes(digest, "little") / 2**64
    return SPLITS[min(bisect.bisect_right(_OWNER_BOUNDS, position), len(SPLITS) - 1)]


_TEMPLATES: dict[int, PlacementShape] = {}


def _template(index: int) -> PlacementShape:
    found = _TEMPLATES.get(index)
    if found is None:
        found = _TEMPLATES[index] = PlacementShape.of(_LIBRARY.labels[index] != 0)
    return found


class _Reference:
    """A template in its reference coloring (labels as colors) after some steps, with the keys under which
    constraint verdicts about it are cached: its cells for color constraints, its mask for shape ones."""

    __slots__ = ("obj", "_cells_key", "_shape_key")

    def __init__(self, obj: GridObject) -> None:
        self.obj = obj
        self._cells_key: tuple[tuple[int, ...], bytes] | None = None
        self._shape_key: tuple[tuple[int, ...], bytes] | None = None

    def verdict_key(self, step: Transformation) -> tuple[str, tuple[int, ...], bytes]:
        if step.name in SHAPE_CONSTRAINTS:
            if self._shape_key is None:
                self._shape_key = (self.obj.pixels.shape, (self.obj.pixels != 0).tobytes())
            return (step.name, *self._shape_key)
        if self._cells_key is None:
            self._cells_key = (self.obj.pixels.shape, self.obj.pixels.tobytes())
        return (step.name, *self._cells_key)


_AFTER: dict[tuple[tuple[str, ...], int], _Reference | None] = {}
_AFTER_LIMIT = 200_000
_VERDICTS: dict[tuple[str, tuple[int, ...], bytes], bool] = {}


def _accepts(step: Transformation, reference: _Reference) -> bool:
    """`step.accepts(reference.obj)`, cached by what the constraint reads: the shape, or the cells for color constraints."""
    key = reference.verdict_key(step)
    found = _VERDICTS.get(key)
    if found is None:
        found = _VERDICTS[key] = step.accepts(reference.obj)
    return found


def _after(prefix: tuple[str, ...], index: int) -> _Reference | None:
    """Template `index` in its reference coloring after `prefix`, or None if a step rejects it (memory-capped cache)."""
    key = (prefix, index)
    found = _AFTER.get(key, key)
    if found is key:
        if len(_AFTER) >= _AFTER_LIMIT:
            _AFTER.clear()
        if not prefix:
            found = _Reference(GridObject(_LIBRARY.labels[index], 0, 0))
        else:
            before, step = _after(prefix[:-1], index), TRANSFORMATIONS[prefix[-1]]
            found = _Reference(step.transform(before.obj)) if before is not None and _accepts(step, before) else None
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
class _Sequence:
    """A drawn sequence with what the hot loop needs: its steps, which to re-check on painted objects, code."""

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        self.steps = [TRANSFORMATIONS[name] for name in self.names]
        self.verify = [step.rejection is not None and step.name not in SHAPE_CONSTRAINTS for step in self.steps]
        self.code = tuple(encode_task_code(self.names))
        self.key = "-".join(self.names)


@dataclass(slots=True)
class DrawnObject:
    """One drawn object: template, colors, the object after each step (anchored at the origin), its extent."""

    index: int
    template: PlacementShape
    colors: list[int]
    path: list[GridObject]
    masks: list[np.ndarray]
    extent: tuple[int, int, int, int]


Choice = tuple[list[int], tuple[int, ...]]
"""Template indices an object may be drawn from, and the colors it may be painted with."""


@dataclass
class _Pool:
    """The templates one object filter allows (library order), the colors it allows, and each template's
    box shape as an index into `shapes` (so that per-shape work is done once per distinct shape)."""

    templates: np.ndarray
    colors: tuple[int, ...]
    shapes: list[tuple[int, int]]
    shape_of: np.ndarray

    @classmethod
    def of(cls, templates: list[int], colors: tuple[int, ...]) -> _Pool:
        template_shapes = [_LIBRARY.labels[i].shape for i in templates]
        shapes = sorted(set(template_shapes))
        position = {shape: k for k, shape in enumerate(shapes)}
        return cls(np.array(templates), colors, shapes, np.array([position[shape] for shape in template_shapes]))


Survivors = tuple[np.ndarray, np.ndarray, tuple[int, ...]]
"""The templates of a pool that survive a sequence, their boxes' rows and columns, the pool's colors."""


class _Plan:
    """A config resolved for one split, ready for the hot loop."""

    def __init__(self, config: TaskConfig, split: str) -> None:
        self.config = resolved = config.for_split(split)
        self.split = split
        self.sequences: dict[tuple[str, ...], tuple[_Sequence, list[Survivors]]] = {}
        self.choices: dict[tuple[tuple[str, ...], int, int, int], list[Choice]] = {}
        self.survivors: dict[tuple[tuple[str, ...], int], np.ndarray] = {}
        self.references: dict[tuple[tuple[str, ...], int], list[_Reference | None]] = {}
        max_height, max_width = resolved.grid_height[1], resolved.grid_width[1]
        self.pools: list[_Pool] = []
        for number, object_filter in enumerate(resolved.object_filter):
            if object_filter.connectivity is None:
                object_filter = object_filter.model_copy(update={"connectivity": resolved.connectivity})
            chosen = [i for i in _LIBRARY.select(object_filter).tolist()
                      if _LIBRARY.labels[i].shape[0] <= max_height and _LIBRARY.labels[i].shape[1] <= max_width]
            if not chosen:
                raise InfeasibleConfigError(
                    f"split {split!r}: no library object passes object filter {number} "
                    f"({object_filter.model_dump(exclude_defaults=True)}) and fits a {max_height}x{max_width} grid; "
                    "relax the filter or enlarge the grid"
                )
            self.pools.append(_Pool.of(chosen, object_filter.colors or ALL_COLORS))
        smallest = min(_template(i).packing_area for pool in self.pools for i in pool.templates.tolist())
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
                found = np.flatnonzero([reference is not None and _accepts(step, reference)
                                        for reference in self._references(prefix[:-1], number)])
            self.survivors[prefix, number] = found
        return found

    def _references(self, prefix: tuple[str, ...], number: int) -> list[_Reference | None]:
        """The templates of pool `number` after `prefix` in their reference coloring (see `_after`; cached)."""
        found = self.references.get((prefix, number))
        if found is None:
            found = self.references[prefix, number] = [_after(prefix, i)
                                                       for i in self.pools[number].templates.tolist()]
        return found

    def _sequence(self, names: tuple[str, ...]) -> tuple[_Sequence, list[Survivors]]:
        """The sequence and its survivors in each pool that has any."""
        found = self.sequences.get(names)
        if found is None:
            sequence, prefix = _Sequence(names), _constrained_prefix(names)
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

    def _choices(self, names: tuple[str, ...], height: int, width: int, n_objects: int) -> list[Choice]:
        """Per pool, the surviving templates whose box fits the grid and 1/n_objects of it (cached)."""
        key = (names, height, width, n_objects)
        found = self.choices.get(key)
        if found is None:
            found = []
            for templates, boxes, colors in self._sequence(names)[1]:
                rows, cols = boxes[:, 0], boxes[:, 1]
                fits = (rows <= height) & (cols <= width) & ((rows + 1) * (cols + 1) * n_objects
                                                             <= (height + 1) * (width + 1))
                if fits.any():
                    found.append((templates[fits].tolist(), colors))
            self.choices[key] = found
        return found

    def _draw_sequence(self, rng: random.Random) -> _Sequence:
        config = self.config
        for _ in range(SEQUENCE_REDRAWS):
            if config.sequences is not None:
                names = config.sequences[rng.randrange(len(config.sequences))]
            else:
                pool = config.transformations or ()
                names = tuple(pool[rng.randrange(len(pool))] for _ in range(rng.randint(*config.depth)))
            sequence, survivors = self._sequence(names)
            if survivors:
                return sequence
        raise InfeasibleConfigError(
            f"split {self.split!r}: no library object passing the object filter survives the drawn sequences "
            f"(for example {sequence.key}); allow other objects or other transformations"
        )

    def sample(self, rng: random.Random, index: int) -> TaskSample:
        config = self.config
        failures: Counter[str] = Counter()
        sequence = self._draw_sequence(rng)
        for _ in range(MAX_ATTEMPTS):
            height = rng.randint(*config.grid_height)
            width = height if config.square_grid else rng.randint(*config.grid_width)
            outcome = self._attempt(rng, sequence, height, width, rng.randint(*config.n_objects), index)
            if isinstance(outcome, TaskSample):
                return outcome
            failures[outcome] += 1
        reason, count = failures.most_common(1)[0]
        advice = ("The config allows too few distinct input grids for this split: use a larger grid or more "
                  "objects" if reason.startswith("the input grid") else
                  "Use fewer or smaller objects, a larger grid or other transformations")
        raise InfeasibleConfigError(
            f"split {self.split!r}, sample {index}: gave up after {MAX_ATTEMPTS} attempts; {count} failed because "
            f"{reason}. {advice}"
        )

    def _attempt(self, rng: random.Random, sequence: _Sequence, height: int, width: int, n_objects: int,
                 index: int) -> TaskSample | str:
        """Draw the objects, place the largest first (an object without room is redrawn), check ownership."""
        choices = self._choices(sequence.names, height, width, n_objects)
        if not choices:
            return f"no object surviving {sequence.key} fits 1/{n_objects} of a {height}x{width} grid"
        drawn = []
        for _ in range(n_objects):
            found = _draw_object(rng, choices, sequence, height, width)
            if isinstance(found, str):
                return found
            drawn.append(found)
        drawn.sort(key=lambda obj: (obj.extent[2] - obj.extent[0]) * (obj.extent[3] - obj.extent[1]), reverse=True)
        canvas = Canvas(height, width, len(sequence.names))
        placed = []
        for obj in drawn:
            for _ in range(ROOM_TRIES):
                anchor = canvas.find_anchor(rng, obj)
                if anchor is not None:
                    break
                found = _draw_object(rng, choices, sequence, height, width)
                if isinstance(found, str):
                    return found
                obj = found
            else:
                return f"there was no room for {n_objects} objects in a {height}x{width} grid"
            canvas.paint(obj, anchor)
            placed.append((obj, anchor))
        if owning_split(canvas.frames[0]) != self.split:
            return "the input grid belonged to another split"
        placed.sort(key=lambda item: (item[1][0], item[1][1] + item[0].template.first_column))
        objects = []
        for obj, (top, left) in placed:
            first, last = obj.path[0], obj.path[-1]
            objects.append({
                "bbox": [top, left, top + first.height, left + first.width],
                "output_bbox": [top + last.top, left + last.left, top + last.top + last.height,
                                left + last.left + last.width],
                "colors": sorted(obj.colors),
                "properties": dict(_LIBRARY.property_dicts[obj.index]),
            })
        frames = canvas.frames
        return TaskSample(frames[0], frames[-1], sequence.names, tuple(frames), tuple(objects), sequence.code,
                          sequence.key, self.config.seed, self.split, index)


def _draw_object(rng: random.Random, choices: list[Choice], sequence: _Sequence, height: int,
                 width: int) -> DrawnObject | str:
    """One painted object that meets every step's constraints and stays inside the grid, or why none was found."""
    uniform = rng.random
    rejected_by = None
    for _ in range(DRAW_TRIES):
        chosen, colors = choices[int(uniform() * len(choices))]
        index = chosen[int(uniform() * len(chosen))]
        pixels, painted = _LIBRARY.paint(index, rng, colors)
        obj = GridObject(pixels, 0, 0)
        path, masks = [obj], [pixels != 0]
        top, left, bottom, right = 0, 0, pixels.shape[0], pixels.shape[1]
        for step, verify in zip(sequence.steps, sequence.verify):
            if verify and not step.accepts(obj):
                rejected_by = step
                break
            obj = step.transform(obj)
            path.append(obj)
            mask = obj.pixels != 0
            masks.append(mask)
            top, left = min(top, obj.top), min(left, obj.left)
            bottom, right = max(bottom, obj.top + mask.shape[0]), max(right, obj.left + mask.shape[1])
        else:
            if bottom - top <= height and right - left <= width:
                return DrawnObject(index, _template(index), painted, path, masks, (top, left, bottom, right))
    if rejected_by is not None:
        return f"no drawn object met the constraints of {rejected_by.name} ({rejected_by.constraints})"
    return f"objects transformed by {sequence.key} grew beyond the {height}x{width} grid"


_PLANS: dict[tuple[str, str], _Plan] = {}
_RECENT: dict[tuple[int, str], tuple[TaskConfig, _Plan]] = {}


def _plan(config: TaskConfig, split: str) -> _Plan:
    """The plan of (config, split): found by identity for configs seen recently, else by content."""
    recent = _RECENT.get((id(config), split))
    if recent is not None and recent[0] is config:
        return recent[1]
    key = (config.model_dump_json(), split)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _Plan(config, split)
    if len(_RECENT) >= 64:
        _RECENT.clear()
    _RECENT[(id(config), split)] = (config, plan)
    return plan


def generate_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split`; the same (config, split, index) always gives the same sample."""
    plan = _plan(config, split)
    return plan.sample(sample_rng(plan.config.seed, split, index), index)


def _generate_range(job: tuple[TaskConfig, str, int, int, Callable[[list[TaskSample]], T]]) -> T:
    config, split, start, stop, function = job
    with _collector_paused():
        return function([generate_sample(config, split, index) for index in range(start, stop)])


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a while (restored after). Generating a chunk makes tens of
    thousands of short-lived objects, all freed by reference counting, yet their count alone triggers
    collections that rescan every long-lived cache: about a tenth of the time, for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def map_split(config: TaskConfig, split: str, function: Callable[[list[TaskSample]], T], start: int = 0,
              stop: int | None = None, workers: int = 1,
              progress: Callable[[int], object] | None = None) -> Iterator[T]:
    """`function(chunk)` for consecutive chunks of `CHUNK` samples of start..stop-1 (stop defaults to the
    split's count), in order, computed by `workers` processes: this one and `workers - 1` helpers.

    Running `function` where the samples are made keeps the traffic small: only what `function`
    returns travels (for example an Arrow table instead of thousands of sample objects). `function`
    must be picklable (a module-level function). This process takes a chunk itself whenever the
    next result it needs is not ready, so no core waits. Helpers are forked where the platform allows,
    so they start with this process's object library and caches; its objects are frozen out of the
    garbage collector's reach meanwhile (`gc.freeze`), so that neither side rescans them and shared
    memory pages stay shared. `progress`, if given, is called with the number of samples just finished.
    """
    stop = config.count(split) if stop is None else stop
    _plan(config, split)
    jobs = [(config, split, first, min(first + CHUNK, stop), function) for first in range(start, stop, CHUNK)]
    results = _run_jobs(jobs, workers) if workers > 1 and len(jobs) > 1 else map(_generate_range, jobs)
    for job, result in zip(jobs, results):
        yield result
        if progress is not None:
            progress(job[3] - job[2])


def _run_jobs(jobs: list[tuple], workers: int) -> Iterator[object]:
    """The results of `_generate_range` over `jobs`, in order, from `workers - 1` helper processes and this one."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    window = 2 * (workers - 1)
    slots: dict[int, AsyncResult | list[object]] = {}
    upcoming = 0
    gc.freeze()
    try:
        with multiprocessing.get_context(method).Pool(workers - 1) as pool:
            for wanted in range(len(jobs)):
                while upcoming < len(jobs) and sum(isinstance(slot, AsyncResult) for slot in slots.values()) < window:
                    slots[upcoming] = pool.apply_async(_generate_range, (jobs[upcoming],))
                    upcoming += 1
                while upcoming < len(jobs) and isinstance(slots[wanted], AsyncResult) and not slots[wanted].ready():
                    slots[upcoming] = [_generate_range(jobs[upcoming])]
                    upcoming += 1
                slot = slots.pop(wanted)
                yield slot[0] if isinstance(slot, list) else slot.get()
    finally:
        gc.unfreeze()


def iter_split(config: TaskConfig, split: str, start: int = 0, stop: int | None = None, workers: int = 1,
               progress: Callable[[int], object] | None = None) -> Iterator[TaskSample]:
    """Samples start..stop-1 of `split` in order (stop defaults to the split's count), on `workers`
    processes (see `map_split`)."""
    for chunk in map_split(config, split, list, start, stop, workers, progress):
        yield from chunk


def generate_split(config: TaskConfig, split: str, start: int = 0, stop: int | None = None, workers: int = 1,
                   progress: Callable[[int], object] | None = None) -> list[TaskSample]:
    """`iter_split` as a list."""
    return list(iter_split(config, split, start, stop, workers, progress))
