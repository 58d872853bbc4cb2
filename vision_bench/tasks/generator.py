"""Task generation: objects from the library, placed without touching, transformed step by step.

Reproducibility: sample `index` of `split` depends only on (config, split, index): its RNG is a
`random.Random` seeded from blake2b(seed, split, index), so any worker count or shard layout
yields the same dataset, and one sample can be regenerated alone.

Disjoint splits: every input grid has one owning split, a fixed hash partition: blake2b of its
shape and cells mapped to [0, 1) and cut by `OWNER_WEIGHTS`. A split keeps only the inputs it
owns, so no input grid appears in two splits, whatever their configs and sizes.

Objects: `vision_bench.tasks.planning` works out, per drawn sequence, which templates each object
filter allows (those meeting every step's constraints, checked on the input object as COGITAO
does). Each object picks a filter uniformly among those with an allowed template, then a
template uniformly, then colors.

Rules (`TaskConfig.rules`): a sample draws one rule and its sequence, then `n_objects` targets
that the rule's selector picks (transformed) and `n_distractors` objects it does not pick (left as
they are). Targets and distractors are drawn from the templates that can take their role
(`Plan.roles`: each template only in colours that give it its role), and the placed input grid is
checked as a whole (`selectors.select` must pick exactly the targets: a `near` selector depends on
the layout). The task key names the rule (`SELECTOR:SEQUENCE`) and each object's record says
whether it was `selected`. Configs without rules take the code path they always took (the same
bytes).

Feasibility: obvious impossibilities fail up front; otherwise a sample gives up after
`MAX_ATTEMPTS` attempts and `InfeasibleConfigError` names the constraint that kept failing.
"""

from __future__ import annotations

import bisect
import gc
import hashlib
import itertools
import multiprocessing
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import numpy as np

from vision_bench.errors import InfeasibleConfigError, TransformationError
from vision_bench.tasks.config import PAIRED_SPLITS, SPLITS, TaskConfig
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.placement import Canvas, PlacementShape
from vision_bench.tasks.planning import (
    LIBRARY,
    Choice,
    Plan,
    Sequence,
    placement_shape,
    plan_for,
)
from vision_bench.tasks.selectors import select
from vision_bench.tasks.task_code import IDENTITY_TOKEN, TASK_CODE_LENGTH
from vision_bench.tasks.transformations import transform_objects

OWNER_WEIGHTS = {"train": 0.9, "val_id": 0.025, "val_ood": 0.025, "test_id": 0.025, "test_ood": 0.025}
MAX_ATTEMPTS = 1000
DRAW_TRIES = 50
ROOM_TRIES = 20
UNCHANGED = "the rule left the grid as it was"
"""A rule sample must change its grid (else copying the input solves it); on this outcome the rule is drawn again."""
CHUNK = 128
T = TypeVar("T")
Anchor = tuple[int, int]
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


@dataclass(slots=True)
class DrawnObject:
    """One drawn object: template, colors, the object after each step (anchored at the origin), its extent."""

    index: int
    template: PlacementShape
    colors: list[int]
    path: list[GridObject]
    extent: tuple[int, int, int, int]


def _sample(plan: Plan, rng: random.Random, index: int) -> TaskSample:
    config = plan.config
    failures: Counter[str] = Counter()
    rule = None
    if config.rules is None:
        sequence = plan.draw_sequence(rng)
    else:
        rule, sequence = plan.draw_rule(rng)
    for _ in range(MAX_ATTEMPTS):
        height = rng.randint(*config.grid_height)
        width = height if config.square_grid else rng.randint(*config.grid_width)
        if rule is None:
            outcome = _attempt(plan, rng, sequence, height, width, rng.randint(*config.n_objects), index)
        else:
            counts = (rng.randint(*config.n_objects), rng.randint(*config.n_distractors))
            outcome = _attempt_rule(plan, rng, rule, sequence, height, width, counts, index)
        if isinstance(outcome, TaskSample):
            return outcome
        failures[outcome] += 1
        if outcome == UNCHANGED:  # e.g. steps that cancel out, or mirrors of a symmetric object: draw again
            rule, sequence = plan.draw_rule(rng)
    reason, count = failures.most_common(1)[0]
    advice = ("The config allows too few distinct input grids for this split: use a larger grid or more "
              "objects" if reason.startswith("the input grid") else
              "Use fewer or smaller objects, a larger grid or other transformations")
    raise InfeasibleConfigError(
        f"split {plan.split!r}, sample {index}: gave up after {MAX_ATTEMPTS} attempts; {count} failed because "
        f"{reason}. {advice}"
    )

def _attempt(plan: Plan, rng: random.Random, sequence: Sequence, height: int, width: int, n_objects: int,
             index: int) -> TaskSample | str:
    """Draw the objects, place the largest first (an object without room is redrawn), check ownership."""
    choices = plan.choices_for(sequence.names, height, width, n_objects)
    if not choices:
        return f"no object surviving {sequence.key} fits 1/{n_objects} of a {height}x{width} grid"
    drawn = []
    for _ in range(n_objects):
        found = _draw_object(rng, choices, sequence, height, width)
        if isinstance(found, str):
            return found
        drawn.append(found)
    canvas = Canvas(height, width, len(sequence.names))
    placed = _place_largest_first(rng, canvas, [(obj, None) for obj in drawn],
                                  lambda _: _draw_object(rng, choices, sequence, height, width))
    if isinstance(placed, str):
        return placed
    if owning_split(canvas.frames[0]) != plan.split:
        return "the input grid belonged to another split"
    objects = [_object_record(obj, top, left) for obj, (top, left), _ in placed]
    frames = canvas.frames
    return TaskSample(frames[0], frames[-1], sequence.names, tuple(frames), tuple(objects), sequence.code,
                      sequence.key, plan.config.seed, plan.split, index)


def _place_largest_first(rng: random.Random, canvas: Canvas, drawn: list[tuple[DrawnObject, T]],
                         redraw: Callable[[T], DrawnObject | str]) -> list[tuple[DrawnObject, Anchor, T]] | str:
    """Paint the drawn objects onto `canvas`, largest box first; an object without room is redrawn with
    `redraw(tag)`, up to ROOM_TRIES times. Returns (object, anchor, tag) in reading order, or why not."""
    placed = []
    for obj, tag in sorted(drawn, key=lambda item: _box_area(item[0]), reverse=True):
        for _ in range(ROOM_TRIES):
            anchor = canvas.find_anchor(rng, obj)
            if anchor is not None:
                break
            found = redraw(tag)
            if isinstance(found, str):
                return found
            obj = found
        else:
            return f"there was no room for {len(drawn)} objects in a {canvas.height}x{canvas.width} grid"
        canvas.paint(obj, anchor)
        placed.append((obj, anchor, tag))
    placed.sort(key=lambda item: (item[1][0], item[1][1] + item[0].template.first_column))
    return placed


def _box_area(obj: DrawnObject) -> int:
    """The area of the box an object's whole path spans."""
    top, left, bottom, right = obj.extent
    return (bottom - top) * (right - left)


def _object_record(obj: DrawnObject, top: int, left: int) -> dict[str, Any]:
    """What a task record says of one placed object: its input and output boxes, colours and properties."""
    first, last = obj.path[0], obj.path[-1]
    return {
        "bbox": [top, left, top + first.height, left + first.width],
        "output_bbox": [top + last.top, left + last.left, top + last.top + last.height, left + last.left + last.width],
        "colors": sorted(obj.colors),
        "properties": dict(LIBRARY.property_dicts[obj.index]),
    }


def _attempt_rule(plan: Plan, rng: random.Random, rule: int, sequence: Sequence, height: int, width: int,
                  counts: tuple[int, int], index: int) -> TaskSample | str:
    """`_attempt` for a rule: `counts` = (targets, distractors); targets follow `sequence`, distractors stay."""
    n_targets, n_distractors = counts
    targets, distractors = plan.choices_for_rule(rule, sequence.names, height, width, counts)
    if not targets:
        return f"no object the rule picks surviving {sequence.key} fits 1/{n_targets} of a {height}x{width} grid"
    if n_distractors and not distractors:
        return f"no object the rule leaves alone fits 1/{n_targets + n_distractors} of a {height}x{width} grid"
    selector = (plan.config.rules or ())[rule].selector
    roles = [True] * n_targets + [False] * n_distractors
    drawn = []
    for picked in roles:
        found = _draw_for_role(rng, targets if picked else distractors, sequence, height, width, picked)
        if isinstance(found, str):
            return found
        drawn.append((found, picked))
    canvas = Canvas(height, width, len(sequence.names))
    placed = _place_largest_first(
        rng, canvas, drawn,
        lambda picked: _draw_for_role(rng, targets if picked else distractors, sequence, height, width, picked))
    if isinstance(placed, str):
        return placed
    if owning_split(canvas.frames[0]) != plan.split:
        return "the input grid belonged to another split"
    inputs = [GridObject(obj.path[0].pixels, top, left) for obj, (top, left), _ in placed]
    if list(select(selector, inputs)) != [picked for _, _, picked in placed]:
        return "the rule's selector did not pick exactly the targets in the placed grid"
    if np.array_equal(canvas.frames[0], canvas.frames[-1]):
        return UNCHANGED
    objects = [{**_object_record(obj, top, left), "selected": picked} for obj, (top, left), picked in placed]
    frames = canvas.frames
    return TaskSample(frames[0], frames[-1], sequence.names, tuple(frames), tuple(objects), sequence.code,
                      sequence.key, plan.config.seed, plan.split, index)


def _draw_for_role(rng: random.Random, choices: list[Choice], sequence: Sequence, height: int, width: int,
                   picked: bool) -> DrawnObject | str:
    """A target (`picked`: transformed by `sequence`) or a distractor (left as it is). The choices paint each
    template only in colours that give it its role (`Plan.roles`), so no drawn object contradicts it."""
    if picked:
        return _draw_object(rng, choices, sequence, height, width)
    return _draw_still(rng, choices, len(sequence.names))


def _draw_still(rng: random.Random, choices: list[Choice], depth: int) -> DrawnObject:
    """One painted object that stays as it is through `depth` steps (a distractor)."""
    chosen, colors = choices[int(rng.random() * len(choices))]
    index = chosen[int(rng.random() * len(chosen))]
    pixels, painted = LIBRARY.paint(index, rng, colors)
    obj = GridObject(pixels, 0, 0)
    return DrawnObject(index, placement_shape(index), painted, [obj] * (depth + 1), (0, 0, *pixels.shape))


def _draw_object(rng: random.Random, choices: list[Choice], sequence: Sequence, height: int,
                 width: int) -> DrawnObject | str:
    """One painted object whose every step stays inside the grid, or why none was found. The choices hold
    only templates that meet the sequence's constraints and keep a cell (see `planning`)."""
    for _ in range(DRAW_TRIES):
        chosen, colors = choices[int(rng.random() * len(choices))]
        index = chosen[int(rng.random() * len(chosen))]
        pixels, painted = LIBRARY.paint(index, rng, colors)
        obj = GridObject(pixels, 0, 0)
        path = [obj]
        top, left, bottom, right = 0, 0, pixels.shape[0], pixels.shape[1]
        for step in sequence.steps:
            obj = step.transform(obj)
            path.append(obj)
            rows, cols = obj.pixels.shape
            top, left = min(top, obj.top), min(left, obj.left)
            bottom, right = max(bottom, obj.top + rows), max(right, obj.left + cols)
        if bottom - top <= height and right - left <= width:
            return DrawnObject(index, placement_shape(index), painted, path, (top, left, bottom, right))
    return f"objects transformed by {sequence.key} grew beyond the {height}x{width} grid"


def generate_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split`; the same (config, split, index) always gives the same sample."""
    if config.episode is not None:
        from vision_bench.tasks.carc.episodes import episode_sample

        return episode_sample(config, split, index)
    if config.paired_ood and split in (*PAIRED_SPLITS, *PAIRED_SPLITS.values()):
        return _paired_sample(config, split, index)
    plan = plan_for(config, split)
    return _sample(plan, sample_rng(plan.config.seed, split, index), index)


def _paired_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of a paired split (`paired_ood`): the ID sample and the OOD sample share one input grid.

    Attempt k draws an ID sample (attempt 0 with the split's own RNG, so an ID sample that pairs is the
    unpaired one) and an OOD sequence, and applies the sequence to the sample's input objects; the
    first pair that meets both sequences' constraints and stays valid is kept, as COGITAO keeps the
    first grid on which both sequences succeed. Both splits run the same attempts, so they agree.
    """
    ood_split = split if split in PAIRED_SPLITS else next(ood for ood, paired in PAIRED_SPLITS.items()
                                                           if paired == split)
    id_split = PAIRED_SPLITS[ood_split]
    id_plan, ood_plan = plan_for(config, id_split), plan_for(config, ood_split)
    failures: Counter[str] = Counter()
    last_error = ""
    for attempt in range(MAX_ATTEMPTS):
        label = "" if attempt == 0 else f"/pair{attempt}"
        id_sample = _sample(id_plan, sample_rng(config.seed, id_split + label, index), index)
        sequence = ood_plan.draw_sequence(sample_rng(config.seed, ood_split + label, index))
        objects = extract_objects(id_sample.input, config.connectivity)
        try:
            steps = transform_objects(objects, sequence.names, id_sample.input.shape)
        except TransformationError as error:
            failures[sequence.key] += 1
            last_error = str(error)
            continue
        if split == id_split:
            return id_sample
        frames = (id_sample.input, *(draw_objects(id_sample.input.shape, step) for step in steps[1:]))
        metadata = tuple({**meta, "output_bbox": list(obj.bbox)} for meta, obj in zip(id_sample.objects, steps[-1]))
        return TaskSample(id_sample.input, frames[-1], sequence.names, frames, metadata, sequence.code,
                          sequence.key, config.seed, ood_split, index)
    sequence_key, count = failures.most_common(1)[0]
    raise InfeasibleConfigError(
        f"split {split!r}, sample {index}: no {id_split} input of {MAX_ATTEMPTS} could also be transformed by an "
        f"{ood_split} sequence ({count} failed on {sequence_key}, the last because {last_error}); the paired "
        "splits need objects that meet the constraints of both; set paired_ood: false or change the sequences"
    )


def served_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split` as datasets serve it: `generate_sample`'s, except that a world-model study's
    (`kind: world_model`) is one step of its sequence (`studies.worldmodel.transition_sample`)."""
    if config.kind == "world_model":
        from vision_bench.tasks.studies.worldmodel import transition_sample

        return transition_sample(config, split, index)
    return generate_sample(config, split, index)


SampleMaker = Callable[[TaskConfig, str, int], TaskSample]
"""`served_sample` (what datasets hold) or `generate_sample` (whole sequences of world-model studies too)."""


def _generate_range(job: tuple[TaskConfig, str, int, int, Callable[[list[TaskSample]], T], SampleMaker]) -> T:
    config, split, start, stop, function, make = job
    return function([make(config, split, index) for index in range(start, stop)])


def map_split(config: TaskConfig, split: str, function: Callable[[list[TaskSample]], T], start: int = 0,
              stop: int | None = None, workers: int = 1,
              progress: Callable[[int], object] | None = None, make: SampleMaker = served_sample) -> Iterator[T]:
    """`function(chunk)` for consecutive chunks of `CHUNK` samples of start..stop-1 (stop defaults to the
    split's count), in order, computed by `workers` processes: this one and `workers - 1` helpers.
    Samples are made by `make`: by default `served_sample`, what datasets hold (`vision-bench generate`
    and `export` write a world-model study's one-step transitions, as training reads them).

    Running `function` where the samples are made keeps the traffic small: only what `function`
    returns travels (for example an Arrow table instead of thousands of sample objects). `function`
    must be picklable (a module-level function). This process takes a chunk itself whenever the
    next result it needs is not ready, so no core waits. Helpers are forked where the platform allows,
    so they start with this process's object library and caches; its objects are frozen out of the
    garbage collector's reach meanwhile (`gc.freeze`), so that neither side rescans them and shared
    memory pages stay shared. `progress`, if given, is called with the number of samples just finished.
    """
    stop = config.count(split) if stop is None else stop
    if stop <= start:
        return
    plan_for(config, split)
    jobs = [(config, split, first, min(first + CHUNK, stop), function, make) for first in range(start, stop, CHUNK)]
    results = _run_jobs(jobs, workers) if workers > 1 and len(jobs) > 1 else map(_generate_range, jobs)
    for job, result in zip(jobs, results):
        yield result
        if progress is not None:
            progress(job[3] - job[2])


def _run_jobs(jobs: list[tuple], workers: int) -> Iterator[object]:
    """The results of `_generate_range` over `jobs`, in order, from `workers - 1` helper processes and this one."""
    from vision_bench.io.pool import WorkerPool

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    window = 2 * (workers - 1)
    slots: dict[int, int | list[object]] = {}  # job -> a pool ticket, or [the result made here]
    upcoming = 0
    freezing = gc.get_freeze_count() == 0  # a caller's own freeze is left as it is
    if freezing:
        gc.freeze()
    try:
        with WorkerPool(workers - 1, method, single_threaded=False) as pool:
            for wanted in range(len(jobs)):
                while upcoming < len(jobs) and sum(isinstance(s, int) for s in slots.values()) < window:
                    slots[upcoming] = pool.submit(_generate_range, jobs[upcoming])
                    upcoming += 1
                while upcoming < len(jobs) and isinstance(slots[wanted], int) and not pool.done(slots[wanted]):
                    slots[upcoming] = [_generate_range(jobs[upcoming])]
                    upcoming += 1
                slot = slots.pop(wanted)
                yield slot[0] if isinstance(slot, list) else pool.result(slot)
    finally:
        if freezing:
            gc.unfreeze()


def iter_split(config: TaskConfig, split: str, start: int = 0, stop: int | None = None, workers: int = 1,
               progress: Callable[[int], object] | None = None) -> Iterator[TaskSample]:
    """`generate_sample`'s samples start..stop-1 of `split` in order (stop defaults to the split's count;
    whole sequences, world-model studies too), on `workers` processes (see `map_split`)."""
    for chunk in map_split(config, split, list, start, stop, workers, progress, make=generate_sample):
        yield from chunk


def generate_split(config: TaskConfig, split: str, start: int = 0, stop: int | None = None, workers: int = 1,
                   progress: Callable[[int], object] | None = None) -> list[TaskSample]:
    """`iter_split` as a list."""
    return list(iter_split(config, split, start, stop, workers, progress))
