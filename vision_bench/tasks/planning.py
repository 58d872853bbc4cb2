"""Sequence planning: which library templates each drawn sequence may use, worked out once per sequence.

For a drawn sequence, the allowed templates of each object filter are those that meet the
constraints of every step of the sequence (checked on the template itself: COGITAO checks a
sequence's constraints on its input objects only), that keep at least one cell through every
step, and whose bounding box, carried through the sequence, fits the grid and, with a one-cell
margin, 1/n of its area for n objects (a larger one would leave no room for the others).

The reference coloring (labels as colors) settles the first two for every painted object: every
constraint reads only an object's shape and its number of colors, which painting the labels with
distinct colors keeps, and every transformation maps cells to cells whatever their colors.
Sequences that no allowed template survives are never drawn.

With `rules`, a sample draws one rule, then its sequence; each pool template gets, once per rule,
the colours in which the rule's selector can pick it and those in which it can leave it alone
(`Plan.roles`): targets are drawn from the first, distractors from the second, each template
uniformly among those its role allows.

The object pool is the fixed `caches.LIBRARY`, like COGITAO's pre-computed object file. Every memo
of the generator is in `vision_bench.tasks.caches` (pure functions of the library and the step
names), a `Plan`'s own dictionaries (bounded by its config's sequences and grid sizes) and the plans
themselves (`plan_for`); each only saves work, so none changes what is generated, and each is bounded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from vision_bench.errors import InfeasibleConfigError
from vision_bench.tasks.caches import LIBRARY, after, placement_shape, span
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.objects import ALL_COLORS
from vision_bench.tasks.selectors import judge_alone, selector_name
from vision_bench.tasks.task_code import TASK_CODE_LENGTH, encode_task_code
from vision_bench.tasks.transformations import TRANSFORMATIONS

SEQUENCE_REDRAWS = 200
HALF_CROPS = frozenset({"crop_top_side", "crop_bottom_side", "crop_left_side", "crop_right_side"})


def _emptying_prefix(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` up to its last step that can leave an object with no cell (empty if none can).

    Only crops can: crop_contours, and a half crop after another half crop. A half crop keeps an
    edge row or column of its box, which holds a cell unless an earlier half crop left the box with
    empty edges (every other step makes a tight box or keeps the box it got).
    """
    emptying = [k for k, name in enumerate(names)
                if name == "crop_contours" or (name in HALF_CROPS and HALF_CROPS.intersection(names[:k]))]
    return names[: emptying[-1] + 1] if emptying else ()


@dataclass
class Sequence:
    """A drawn sequence with what the hot loop needs: its steps, task code and key. With a rule's `selector`,
    the code starts with the selector's tokens and the key is `SELECTOR:SEQUENCE` (it names the rule)."""

    names: tuple[str, ...]
    selector: Any = None
    code_length: int = TASK_CODE_LENGTH

    def __post_init__(self) -> None:
        self.steps = [TRANSFORMATIONS[name] for name in self.names]
        self.code = tuple(encode_task_code(self.names, self.code_length, self.selector))
        self.key = "-".join(self.names)
        if self.selector is not None:
            self.key = f"{selector_name(self.selector)}:{self.key}"


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
        self.meets: dict[tuple[str, int], np.ndarray] = {}
        self.survivors: dict[tuple[tuple[str, ...], tuple[str, ...], int], np.ndarray] = {}
        self.rule_sequences: dict[tuple[int, tuple[str, ...]], Sequence] = {}
        self.rule_roles: dict[int, dict[tuple[int, tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        self.rule_choices: dict[tuple[int, tuple[str, ...], int, int, tuple[int, int]],
                                tuple[list[Choice], list[Choice]]] = {}
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

    def _meets(self, name: str, number: int) -> np.ndarray:
        """Per template of pool `number`, whether it (in its reference coloring) meets step `name`'s constraints."""
        found = self.meets.get((name, number))
        if found is None:
            step = TRANSFORMATIONS[name]
            found = self.meets[name, number] = np.array(
                [step.accepts(GridObject(LIBRARY.labels[i], 0, 0)) for i in self.pools[number].templates.tolist()],
                dtype=bool)
        return found

    def _survivors(self, names: tuple[str, ...], number: int) -> np.ndarray:
        """Positions in pool `number` of the templates that meet the constraints of every step of `names` and
        keep a cell through them; cached by what decides them."""
        constrained = tuple(sorted({name for name in names if TRANSFORMATIONS[name].rejection is not None}))
        prefix = _emptying_prefix(names)
        found = self.survivors.get((constrained, prefix, number))
        if found is None:
            meets = np.ones(len(self.pools[number].templates), dtype=bool)
            for name in constrained:
                meets &= self._meets(name, number)
            found = np.flatnonzero(meets)
            if prefix:
                templates = self.pools[number].templates
                found = np.array([k for k in found.tolist() if after(prefix, int(templates[k])) is not None],
                                 dtype=np.int64)
            self.survivors[constrained, prefix, number] = found
        return found

    def sequence(self, names: tuple[str, ...]) -> tuple[Sequence, list[Survivors]]:
        """The sequence and its survivors in each pool that has any."""
        found = self.sequences.get(names)
        if found is None:
            sequence = Sequence(names, code_length=self.config.task_code_length)
            survivors = []
            for number, pool in enumerate(self.pools):
                kept = self._survivors(names, number)
                if len(kept):
                    shape_of = pool.shape_of[kept]
                    boxes = np.zeros((len(pool.shapes), 2), dtype=np.int64)
                    for k in np.unique(shape_of).tolist():
                        boxes[k] = span(names, pool.shapes[k])
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

    def draw_sequence(self, rng: random.Random, depth: tuple[int, int] | None = None) -> Sequence:
        """A sequence of the config (from `sequences`, or `depth` steps of the pool, default the config's depth)
        that some allowed template survives."""
        config = self.config
        for _ in range(SEQUENCE_REDRAWS):
            if config.sequences is not None:
                names = config.sequences[rng.randrange(len(config.sequences))]
            else:
                pool = config.transformations or ()
                names = tuple(pool[rng.randrange(len(pool))] for _ in range(rng.randint(*(depth or config.depth))))
            sequence, survivors = self.sequence(names)
            if survivors:
                return sequence
        raise InfeasibleConfigError(
            f"split {self.split!r}: no library object passing the object filter survives the drawn sequences "
            f"(for example {sequence.key}); allow other objects or other transformations"
        )

    def draw_rule(self, rng: random.Random) -> tuple[int, Sequence]:
        """One rule (its number in `rules`) and one of its sequences, drawn uniformly."""
        rules = self.config.rules or ()
        number = rng.randrange(len(rules))
        own = rules[number].sequences
        if own is None:
            names = self.draw_sequence(rng, rules[number].depth).names
        else:
            for _ in range(SEQUENCE_REDRAWS):
                names = own[rng.randrange(len(own))]
                if self.sequence(names)[1]:
                    break
            else:
                raise InfeasibleConfigError(
                    f"split {self.split!r}: no library object passing the object filter survives the sequences "
                    f"of rule {number} (for example {'-'.join(names)}); allow other objects or other transformations"
                )
        sequence = self.rule_sequences.get((number, names))
        if sequence is None:
            sequence = self.rule_sequences[number, names] = Sequence(
                names, rules[number].selector, self.config.task_code_length)
        return number, sequence

    def roles(self, number: int) -> dict[tuple[int, tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]:
        """For rule `number`: per (template, colours of its pool), the colours that let its selector pick the
        painted template and those that let it leave the template alone (empty: that role is impossible).

        Each template is judged alone (`selectors.judge_alone`) in every coloring a selector can tell
        apart: a one-colour template in each colour of its pool; a multi-coloured one in its reference
        coloring (no colour selector picks it, whatever its colours), which then decides for all of the
        pool's colours. A verdict that depends on the other objects (a `near` part) allows both roles;
        the generator checks the placed grid.
        """
        found = self.rule_roles.get(number)
        if found is None:
            selector = (self.config.rules or ())[number].selector
            found = {}
            for pool in self.pools:
                for index in pool.templates.tolist():
                    labels = LIBRARY.labels[index]
                    colorings: list[tuple[tuple[int, ...], np.ndarray]]
                    if LIBRARY.n_colors[index] == 1:
                        colorings = [((color,), labels * color) for color in pool.colors]
                    else:
                        colorings = [(pool.colors, labels)]
                    verdicts = [(colors, judge_alone(selector, GridObject(pixels, 0, 0)))
                                for colors, pixels in colorings]
                    found[index, pool.colors] = (
                        tuple(c for colors, verdict in verdicts if verdict is not False for c in colors),
                        tuple(c for colors, verdict in verdicts if verdict is not True for c in colors))
            if not any(pick for pick, _ in found.values()):
                raise InfeasibleConfigError(
                    f"split {self.split!r}: rule {number} ({selector_name(selector)}) picks no library object "
                    "passing the object filter; name a colour or shape the filter allows, or relax the filter"
                )
            if self.config.n_distractors[1] and not any(leave for _, leave in found.values()):
                raise InfeasibleConfigError(
                    f"split {self.split!r}: rule {number} ({selector_name(selector)}) picks every library object "
                    "passing the object filter, so none can be a distractor; use a narrower selector or "
                    "n_distractors: [0, 0]"
                )
            self.rule_roles[number] = found
        return found

    def choices_for_rule(self, number: int, names: tuple[str, ...], height: int, width: int,
                         counts: tuple[int, int]) -> tuple[list[Choice], list[Choice]]:
        """The choices of rule `number`'s targets (transformed by `names`) and of its distractors (left as they
        are), one per template with the colours its role allows, so that a draw picks a template uniformly.
        For `counts` = (targets, distractors): targets fit 1/targets of the grid, distractors 1/all of it,
        so that many small distractors leave room for a larger target (cached)."""
        key = (number, names, height, width, counts)
        found = self.rule_choices.get(key)
        if found is None:
            roles = self.roles(number)
            targets = [([index], pick) for templates, colors in self.choices_for(names, height, width, counts[0])
                       for index in templates if (pick := roles[index, colors][0])]
            distractors = []
            area = (height + 1) * (width + 1)
            for pool in self.pools:
                for index in pool.templates.tolist():
                    rows, cols = LIBRARY.labels[index].shape
                    skip = roles[index, pool.colors][1]
                    if skip and rows <= height and cols <= width and (rows + 1) * (cols + 1) * sum(counts) <= area:
                        distractors.append(([index], skip))
            found = self.rule_choices[key] = (targets, distractors)
        return found


def plan_for(config: TaskConfig, split: str) -> Plan:
    """The plan of (config, split), shared by configs with the same content."""
    return _plan(_PlanKey(config.model_dump_json(), split, config))


@dataclass(frozen=True)
class _PlanKey:
    """A config and split, compared by the config's content."""

    config_json: str
    split: str
    config: TaskConfig = field(compare=False)


@lru_cache(maxsize=64)
def _plan(key: _PlanKey) -> Plan:
    return Plan(key.config, key.split)
