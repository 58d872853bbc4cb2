"""COGITAO's generator: objects from the library, placed without touching, transformed step by step.

One sample follows COGITAO's algorithm: draw the sequence (with `rules`, a rule and its sequence),
then attempt up to `MAX_ATTEMPTS` times: draw a grid size and the objects, place them, check the
constraints, apply the steps; a failed attempt (`_Failure`) draws again. `generate` is the entry
point of the `sequences` and `rules` families (`vision_bench.tasks.families`); the RNG is
`sample_rng(seed, split, index)`, so a sample depends on (config, split, index) only.

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
whether it was `selected`. Without rules every object is a target and no selector is checked.

Feasibility: obvious impossibilities fail up front; otherwise a sample gives up after
`MAX_ATTEMPTS` attempts and `InfeasibleConfigError` names the constraint that kept failing.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from vision_bench.errors import InfeasibleConfigError, TransformationError
from vision_bench.tasks.caches import LIBRARY, placement_shape
from vision_bench.tasks.config import PAIRED_SPLITS, SPLITS, TaskConfig
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.placement import Canvas, DrawnObject
from vision_bench.tasks.planning import Choice, Plan, Sequence, plan_for
from vision_bench.tasks.sample import TaskSample, sample_rng
from vision_bench.tasks.selectors import Selector, select
from vision_bench.tasks.transformations import transform_objects

OWNER_WEIGHTS = {"train": 0.9, "val_id": 0.025, "val_ood": 0.025, "test_id": 0.025, "test_ood": 0.025}
MAX_ATTEMPTS = 1000
DRAW_TRIES = 50
ROOM_TRIES = 20
UNCHANGED = "the rule left the grid as it was"
"""A rule sample must change its grid (else copying the input solves it); on this outcome the rule is drawn again."""
T = TypeVar("T")
Anchor = tuple[int, int]
_OWNER_BOUNDS = list(itertools.accumulate(OWNER_WEIGHTS[split] for split in SPLITS))


class _Failure(Exception):
    """Why one attempt failed (its message, counted to explain a sample that gives up); `redraw`: draw the rule and
    its sequence again before the next attempt."""

    def __init__(self, reason: str, redraw: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.redraw = reason, redraw


def generate(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split`; the same (config, split, index) always gives the same sample."""
    if config.paired_ood and split in (*PAIRED_SPLITS, *PAIRED_SPLITS.values()):
        return _paired_sample(config, split, index)
    plan = plan_for(config, split)
    return _sample(plan, sample_rng(plan.config.seed, split, index), index)


def prepare(config: TaskConfig, split: str) -> None:
    """Plan `split` (cached), so that an infeasible config fails before any sample is made and forked workers
    start with the plan."""
    plan_for(config, split)


def _sample(plan: Plan, rng: random.Random, index: int) -> TaskSample:
    """Draw the sequence (or rule), then attempt until the objects are drawn, placed and checked."""
    config = plan.config
    failures: Counter[str] = Counter()
    rule, sequence = _draw_task(plan, rng)
    for _ in range(MAX_ATTEMPTS):
        height = rng.randint(*config.grid_height)
        width = height if config.square_grid else rng.randint(*config.grid_width)
        try:
            return _attempt(plan, rng, rule, sequence, height, width, index)
        except _Failure as failure:
            failures[failure.reason] += 1
            if failure.redraw:  # e.g. steps that cancel out, or mirrors of a symmetric object: draw again
                rule, sequence = _draw_task(plan, rng)
    reason, count = failures.most_common(1)[0]
    advice = ("The config allows too few distinct input grids for this split: use a larger grid or more "
              "objects" if reason.startswith("the input grid") else
              "Use fewer or smaller objects, a larger grid or other transformations")
    raise InfeasibleConfigError(
        f"split {plan.split!r}, sample {index}: gave up after {MAX_ATTEMPTS} attempts; {count} failed because "
        f"{reason}. {advice}"
    )


def _draw_task(plan: Plan, rng: random.Random) -> tuple[int | None, Sequence]:
    """The sequence of a sample, and with `rules` the number of the rule it belongs to (else None)."""
    if plan.config.rules is None:
        return None, plan.draw_sequence(rng)
    return plan.draw_rule(rng)


def _attempt(plan: Plan, rng: random.Random, rule: int | None, sequence: Sequence, height: int, width: int,
             index: int) -> TaskSample:
    """One attempt: draw the objects, place the largest first (an object without room is redrawn), check the
    ownership of the input grid and the rule, and record the frames the steps made."""
    cast = _cast(plan, rng, rule, sequence, height, width)
    drawn = [(_draw(rng, cast, sequence, height, width, picked), picked) for picked in cast.roles]
    canvas = Canvas(height, width, len(sequence.names))
    placed = _place_largest_first(rng, canvas, drawn,
                                  lambda picked: _draw(rng, cast, sequence, height, width, picked))
    if owning_split(canvas.frames[0]) != plan.split:
        raise _Failure("the input grid belonged to another split")
    if cast.selector is not None:
        _check_rule(cast.selector, canvas, placed)
    objects = [_object_record(obj, top, left) if cast.selector is None else
               {**_object_record(obj, top, left), "selected": picked} for obj, (top, left), picked in placed]
    frames = canvas.frames
    return TaskSample(frames[0], frames[-1], sequence.names, tuple(frames), tuple(objects), sequence.code,
                      sequence.key, plan.config.seed, plan.split, index)


@dataclass
class _Cast:
    """Who one attempt draws: per object whether the rule picks it (targets first), what targets and distractors
    are drawn from, and the rule's selector (None without rules: every object is a target, nothing is checked)."""

    roles: list[bool]
    targets: list[Choice]
    distractors: list[Choice]
    selector: Selector | None


def _cast(plan: Plan, rng: random.Random, rule: int | None, sequence: Sequence, height: int, width: int) -> _Cast:
    """Draw how many targets (and, with a rule, distractors) the attempt places, and what each role draws from."""
    config = plan.config
    if rule is None:
        n_objects = rng.randint(*config.n_objects)
        choices = plan.choices_for(sequence.names, height, width, n_objects)
        if not choices:
            raise _Failure(f"no object surviving {sequence.key} fits 1/{n_objects} of a {height}x{width} grid")
        return _Cast([True] * n_objects, choices, [], None)
    n_targets, n_distractors = counts = (rng.randint(*config.n_objects), rng.randint(*config.n_distractors))
    targets, distractors = plan.choices_for_rule(rule, sequence.names, height, width, counts)
    if not targets:
        raise _Failure(f"no object the rule picks surviving {sequence.key} fits 1/{n_targets} of a "
                       f"{height}x{width} grid")
    if n_distractors and not distractors:
        raise _Failure(f"no object the rule leaves alone fits 1/{n_targets + n_distractors} of a "
                       f"{height}x{width} grid")
    return _Cast([True] * n_targets + [False] * n_distractors, targets, distractors,
                 (config.rules or ())[rule].selector)


def _draw(rng: random.Random, cast: _Cast, sequence: Sequence, height: int, width: int,
          picked: bool) -> DrawnObject:
    """A target (`picked`: transformed by `sequence`) or a distractor (left as it is). With a rule, the choices
    paint each template only in colours that give it its role (`Plan.roles`), so no drawn object contradicts it."""
    if picked:
        return _draw_object(rng, cast.targets, sequence, height, width)
    return _draw_still(rng, cast.distractors, len(sequence.names))


def _draw_object(rng: random.Random, choices: list[Choice], sequence: Sequence, height: int,
                 width: int) -> DrawnObject:
    """One painted object whose every step stays inside the grid. The choices hold only templates that meet
    the sequence's constraints and keep a cell (see `planning`)."""
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
    raise _Failure(f"objects transformed by {sequence.key} grew beyond the {height}x{width} grid")


def _draw_still(rng: random.Random, choices: list[Choice], depth: int) -> DrawnObject:
    """One painted object that stays as it is through `depth` steps (a distractor)."""
    chosen, colors = choices[int(rng.random() * len(choices))]
    index = chosen[int(rng.random() * len(chosen))]
    pixels, painted = LIBRARY.paint(index, rng, colors)
    obj = GridObject(pixels, 0, 0)
    return DrawnObject(index, placement_shape(index), painted, [obj] * (depth + 1), (0, 0, *pixels.shape))


def _place_largest_first(rng: random.Random, canvas: Canvas, drawn: list[tuple[DrawnObject, T]],
                         redraw: Callable[[T], DrawnObject]) -> list[tuple[DrawnObject, Anchor, T]]:
    """Paint the drawn objects onto `canvas`, largest box first; an object without room is redrawn with
    `redraw(tag)`, up to ROOM_TRIES times. Returns (object, anchor, tag) in reading order."""
    placed = []
    for obj, tag in sorted(drawn, key=lambda item: _box_area(item[0]), reverse=True):
        for _ in range(ROOM_TRIES):
            anchor = canvas.find_anchor(rng, obj)
            if anchor is not None:
                break
            obj = redraw(tag)
        else:
            raise _Failure(f"there was no room for {len(drawn)} objects in a {canvas.height}x{canvas.width} grid")
        canvas.paint(obj, anchor)
        placed.append((obj, anchor, tag))
    placed.sort(key=lambda item: (item[1][0], item[1][1] + item[0].template.first_column))
    return placed


def _box_area(obj: DrawnObject) -> int:
    """The area of the box an object's whole path spans."""
    top, left, bottom, right = obj.extent
    return (bottom - top) * (right - left)


def _check_rule(selector: Selector, canvas: Canvas, placed: list[tuple[DrawnObject, Anchor, bool]]) -> None:
    """The rule's selector picks exactly the targets in the placed grid, and the rule changes the grid."""
    inputs = [GridObject(obj.path[0].pixels, top, left) for obj, (top, left), _ in placed]
    if list(select(selector, inputs)) != [picked for _, _, picked in placed]:
        raise _Failure("the rule's selector did not pick exactly the targets in the placed grid")
    if np.array_equal(canvas.frames[0], canvas.frames[-1]):
        raise _Failure(UNCHANGED, redraw=True)


def _object_record(obj: DrawnObject, top: int, left: int) -> dict[str, Any]:
    """What a task record says of one placed object: its input and output boxes, colours and properties."""
    first, last = obj.path[0], obj.path[-1]
    return {
        "bbox": [top, left, top + first.height, left + first.width],
        "output_bbox": [top + last.top, left + last.left, top + last.top + last.height, left + last.left + last.width],
        "colors": sorted(obj.colors),
        "properties": dict(LIBRARY.property_dicts[obj.index]),
    }


def owning_split(grid: np.ndarray) -> str:
    """The split that owns an input grid under the fixed hash partition."""
    digest = hashlib.blake2b(bytes(grid.shape) + grid.tobytes(), digest_size=8).digest()
    position = int.from_bytes(digest, "little") / 2**64
    return SPLITS[min(bisect.bisect_right(_OWNER_BOUNDS, position), len(SPLITS) - 1)]


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
