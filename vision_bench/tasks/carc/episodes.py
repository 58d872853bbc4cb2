"""Compositional-ARC episodes (paper 001, sections 3-4 and appendix B.3), seeded and reproducible.

An episode draws a grammar (`grammar.draw_grammar`: a level-2 composition of the split's, its
kinds assigned to the shape, color and neighbor indicators), then its examples. Each example is
a 10x10 grid with one object, plus the indicator object when the neighbor rule is involved (one
or two objects); the object is drawn so that exactly the example's rules pick it (its shape,
its color, the indicator beside it), and the output is `grammar.interpret` of the input: one
object transformed, the indicator unchanged. An example is kept when every step is valid and the
output object neither overlaps nor touches the indicator, as in the released code
(`transform_specifier.gen_input_outputs`); an episode that needs more than `MAX_TRIES` object
draws for one group of examples, or whose queries repeat an input, is drawn again.

Study examples (`STUDY_PLAN`): 3-Shot has 3 examples of the episode's level-2 composition
(drawn with the queries, all inputs distinct);
Systematicity has 12: 2 per indicator (primitive), then 2 per pair of indicators (level 1),
in the order shape, color, neighbor, shape+color, shape+neighbor, color+neighbor. Queries are
level-2 examples. Episode e of a split is drawn from the RNG of (seed, split, e), so the samples of
one episode (`vision_bench.tasks.families.episodes`) share its study examples and any sample can be
made alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vision_bench.errors import InfeasibleConfigError
from vision_bench.tasks.carc.grammar import (
    GRID_SIDE,
    INDICATORS,
    MAX_OBJECT_CELLS,
    Grammar,
    apply_sequence,
    draw_grammar,
    interpret,
    random_walk_object,
    shape_object,
)
from vision_bench.tasks.carc.spec import Composition, EpisodeSpec
from vision_bench.tasks.grid import GridObject, draw_objects
from vision_bench.tasks.sample import sample_rng
from vision_bench.tasks.selectors import chebyshev_distance, footprint

MAX_TRIES = 500
"""Object draws allowed for one group of examples (the released `max_tries`)."""
MAX_EPISODE_ATTEMPTS = 200
EPISODE_CACHE = 2048
"""Episodes kept per process (about 40 KiB each). Training reads a split's queries in shuffled order, so a cache
smaller than the split's episodes draws an episode again for nearly every query (ten times the work at 10 queries per
episode); 2,048 holds the episodes of a split of up to 20,480 such queries, each drawn once."""

Indicators = tuple[str, ...]

STUDY_PLAN: dict[str, tuple[tuple[Indicators, int], ...]] = {
    "3shot": ((INDICATORS, 3),),
    "systematicity": (
        (("shape",), 2), (("color",), 2), (("neighbor",), 2),
        (("shape", "color"), 2), (("shape", "neighbor"), 2), (("color", "neighbor"), 2),
    ),
}
"""Per setup, the study examples: (the indicators whose rules pick the object, how many)."""


@dataclass(frozen=True, eq=False)
class Example:
    """One input/output pair: its grids, its objects before and after, and the indicators involved."""

    input: np.ndarray
    output: np.ndarray
    objects: tuple[GridObject, ...]
    outputs: tuple[GridObject, ...]
    indicators: Indicators

    @property
    def level(self) -> int:
        """0 for a primitive, 1 for a level-1 composition, 2 for a level-2 composition."""
        return len(self.indicators) - 1


@dataclass(frozen=True, eq=False)
class Episode:
    """A grammar, its study examples (in `STUDY_PLAN` order) and its queries."""

    setup: str
    grammar: Grammar
    study: tuple[Example, ...]
    queries: tuple[Example, ...]


def _touches(first: GridObject, second: GridObject) -> bool:
    return chebyshev_distance(first, second) <= 1


def _draw_object(grammar: Grammar, indicators: Indicators, rng: random.Random) -> GridObject | None:
    """An object with the rule's color and shape where its rules ask for them, else a free color and
    a random-walk shape other than the shape rule's; None when the walk fell short."""
    free = grammar.free_colors
    color = grammar.color if "color" in indicators else free[rng.randint(0, len(free) - 1)]
    if "shape" in indicators:
        return shape_object(grammar.shape, color, rng)
    obj = random_walk_object(color, rng.randint(1, MAX_OBJECT_CELLS), rng)
    return None if obj is None or footprint(obj) == grammar.shape else obj


def draw_example(grammar: Grammar, indicators: Indicators, rng: random.Random) -> Example | None:
    """One example whose object exactly `indicators`' rules pick, or None (one failed draw).

    The object's transformations are tried first (the common failure: a step leaves the grid);
    the selectors then say which rules pick each object, and `interpret` gives the output."""
    obj = _draw_object(grammar, indicators, rng)
    if obj is None or apply_sequence(obj, grammar.sequence(indicators)) is None:
        return None
    objects = [grammar.indicator, obj] if "neighbor" in indicators else [obj]
    if len(objects) == 2 and _touches(*objects):
        return None
    picked = grammar.picked_by(objects)
    if picked[-1] != indicators or any(picked[:-1]):
        return None
    outputs = interpret(grammar, objects, picked)
    if outputs is None or (len(outputs) == 2 and _touches(*outputs)):
        return None
    shape = (GRID_SIDE, GRID_SIDE)
    return Example(draw_objects(shape, objects), draw_objects(shape, outputs), tuple(objects), tuple(outputs),
                   indicators)


def draw_examples(grammar: Grammar, indicators: Indicators, count: int, rng: random.Random) -> list[Example] | None:
    """`count` examples of `indicators`, or None when `MAX_TRIES` draws were not enough."""
    examples: list[Example] = []
    for _ in range(MAX_TRIES):
        found = draw_example(grammar, indicators, rng)
        if found is not None:
            examples.append(found)
            if len(examples) == count:
                return examples
    return None


def _distinct_inputs(examples: list[Example]) -> bool:
    return len({example.input.tobytes() for example in examples}) == len(examples)


def generate_episode(setup: str, compositions: tuple[Composition, ...], n_queries: int,
                     rng: random.Random) -> Episode:
    """One episode of `setup` whose level-2 composition is drawn uniformly from `compositions`.

    The level-2 examples (queries, then 3-Shot's study examples) are drawn together and have
    distinct inputs, as the released code takes 3-Shot's examples from the queries it drew."""
    plan = STUDY_PLAN[setup]
    level_2_study = sum(count for indicators, count in plan if indicators == INDICATORS)
    for _ in range(MAX_EPISODE_ATTEMPTS):
        grammar = draw_grammar(compositions[rng.randint(0, len(compositions) - 1)], rng)
        level_2 = draw_examples(grammar, INDICATORS, n_queries + level_2_study, rng)
        if level_2 is None or not _distinct_inputs(level_2):
            continue
        queries, spare = level_2[:n_queries], level_2[n_queries:]
        study: list[Example] = []
        for indicators, count in plan:
            if indicators == INDICATORS:
                study.extend(spare[:count])
                spare = spare[count:]
                continue
            found = draw_examples(grammar, indicators, count, rng)
            if found is None:
                break
            study.extend(found)
        else:
            return Episode(setup, grammar, tuple(study), tuple(queries))
    raise InfeasibleConfigError(
        f"no {setup} episode found in {MAX_EPISODE_ATTEMPTS} grammars; use fewer queries per episode"
    )


@lru_cache(maxsize=EPISODE_CACHE)
def episode_of(spec: EpisodeSpec, seed: int, split: str, episode_index: int) -> Episode:
    """Episode `episode_index` of `split`: a function of (spec, seed, split, episode_index) only.
    The latest episodes are kept, so the queries of one episode, read in turn, draw it once."""
    rng = sample_rng(seed, f"carc/{split}", episode_index)
    return generate_episode(spec.setup, spec.compositions(split), spec.queries_per_episode, rng)
