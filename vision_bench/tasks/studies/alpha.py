"""COGITAO transformations on SVIB-style combination splits: `alpha/<transformation>/<alpha>`.

These are not SVIB's tasks (those are `svib/<task>/<alpha>`, `vision_bench.tasks.studies.svib`): SVIB's
rules set one object's factors from factors (Shape-Swap: other[shape] -> self[shape]), so at alpha 0.0,
where the training factors are correlated, which factor is the parent is ambiguous. Here each object is
transformed alone by one COGITAO transformation (the rule), which may read none of the factors
(`translate_up`), so alpha 0.0 need not be hard. What follows SVIB is the split construction (paper 003,
section 2.2), on the library's grid objects.

An object is a combination of three factors: color (4 values) x footprint (filled square, square
frame, disk, diamond) x size (5x5, 6x6, 7x7 cells): 48 combinations. The core combinations, the
smallest set showing every factor value at least once (combination i takes value i of every
factor, cycling), are always in training. Of the other combinations, 20% are held out for OOD
testing (the same ones for every alpha), and the first alpha fraction of the rest (a fixed
order, so training sets are nested as alpha grows) joins the core in training. Each task applies
one fixed transformation to 2 objects in a 16x16 grid; in-distribution splits use the
training combinations, OOD splits only held-out ones. Any alpha in [0, 1] is accepted.
"""

from __future__ import annotations

import random
from functools import partial
from itertools import product

from vision_bench.errors import UnknownNameError
from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.studies.builder import ALPHA_STUDIES, STUDIES
from vision_bench.tasks.transformations import TRANSFORMATIONS

COLORS = (1, 2, 3, 4)
FOOTPRINTS = {"square": ("square", False), "frame": ("square", True), "disk": ("disk", False),
              "diamond": ("diamond", False)}
SIZES = (5, 6, 7)
TEST_FRACTION = 0.2
ORDER_SEED = 0
RULES = ("translate_up", "change_shape_color", "crop_top_side", "pad_right", "extend_contours_different_color")
ALPHAS = (0.0, 0.2, 0.4, 0.6)

STUDY_PREFIX = "alpha/"

Combination = tuple[int, str, int]


def combinations() -> tuple[list[Combination], list[Combination], list[Combination]]:
    """(core, held-out test, remaining in their fixed order) combinations of (color, footprint, size)."""
    footprints = tuple(FOOTPRINTS)
    every = list(product(COLORS, footprints, SIZES))
    core = [(COLORS[i % len(COLORS)], footprints[i % len(footprints)], SIZES[i % len(SIZES)])
            for i in range(max(len(COLORS), len(footprints), len(SIZES)))]
    rest = [combination for combination in every if combination not in core]
    random.Random(ORDER_SEED).shuffle(rest)
    n_test = round(TEST_FRACTION * len(rest))
    return core, sorted(rest[:n_test]), rest[n_test:]


def training_combinations(alpha: float) -> list[Combination]:
    core, _, remaining = combinations()
    return core + remaining[: round(alpha * len(remaining))]


def _filter(combination: Combination) -> ObjectFilter:
    color, footprint, size = combination
    shape, outline = FOOTPRINTS[footprint]
    return ObjectFilter(min_height=size, max_height=size, min_width=size, max_width=size, n_colors=1,
                        colors=(color,), footprint=(shape,), outline=outline)


def build(rule: str, alpha: float, counts: SampleCounts, seed: int) -> TaskConfig:
    held_out = combinations()[1]
    ood_split = SplitConfig(object_filter=tuple(_filter(c) for c in held_out))
    return TaskConfig(
        description=f"alpha {alpha} ({rule}): {len(training_combinations(alpha))} of 48 color x footprint x size "
                    f"combinations in training, {len(held_out)} held out for OOD",
        seed=seed,
        grid_height=(16, 16),
        grid_width=(16, 16),
        n_objects=(2, 2),
        object_filter=tuple(_filter(c) for c in training_combinations(alpha)),
        connectivity=8,
        sequences=((rule,),),
        samples=counts,
        splits=SplitOverrides(val_ood=ood_split, test_ood=ood_split),
    )


def build_id(rule: str, value: str, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `alpha/<rule>/<value>` for any transformation and alpha in [0, 1]; else a one-line error."""
    TRANSFORMATIONS.check(rule)
    try:
        fraction = float(value)
    except ValueError:
        fraction = -1.0
    if not 0.0 <= fraction <= 1.0:
        raise UnknownNameError(f"study '{STUDY_PREFIX}{rule}/{value}': alpha must be a number from 0 to 1, "
                               f"got {value!r}")
    return build(rule, fraction, counts, seed)


def _register_studies() -> None:
    """Register alpha/RULE/ALPHA for the listed rules and alphas (`build_id` builds any other alpha)."""
    for rule in RULES:
        for alpha in ALPHAS:
            STUDIES.add(f"{STUDY_PREFIX}{rule}/{alpha}", partial(build, rule, alpha),
                        f"alpha {alpha}: COGITAO's {rule} on SVIB-style combination splits (not SVIB's rules)")
    ALPHA_STUDIES[STUDY_PREFIX] = build_id


_register_studies()
