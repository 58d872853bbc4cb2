"""SVIB's combination splits (paper 003, section 2.2; `create_data.py`, `utils.py`): core, training and testing.

A combination is a (colour, shape, size) triple of factor indices: 64 in all. Every draw comes from one
`numpy.random.RandomState(split_seed)`, in this order:

1. the cores, as SVIB's `generate_binds` draws them (three `choice(4, (4, 1), replace=False)`, one per factor):
   four combinations that show every value of every factor exactly once, paired at random (not the diagonal,
   under which M-A's colour = shape would leave every core object unchanged); seed 0 gives SVIB's
   `[[2, 0, 3], [3, 2, 0], [1, 1, 2], [0, 3, 1]]`;
2. the 12 testing combinations (20% of the 60 non-core ones), drawn one by one from the 60 in sorted order,
   as `generate_unseen_binds` draws them;
3. one order of the remaining 48, drawn the same way; training with alpha takes the cores and the first
   floor(60 alpha) of that order (4, 16, 28, 40, 52 combinations for alpha 0.0 ... 0.8), so training sets
   grow nested with alpha.

The testing combinations are set aside first, as the paper says; SVIB's code draws them after its largest
training set, so its test set depends on the alphas generated. Here one test split per rule and split seed
serves every alpha (docs/fidelity.md).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from vision_bench.tasks.scenes.factors import COLOUR_NAMES, FACTORS, SHAPES, SIZES, VOCABULARY, Combination

ALPHA_MAX = 0.8
"""The largest alpha: all 48 combinations left after the cores and the testing ones (SVIB's cap, too)."""
TEST_RATIO = 0.2
"""SVIB's `test_ratio`: the share of the non-core combinations set aside for testing."""
N_COMBINATIONS = VOCABULARY ** len(FACTORS)
N_CORES = VOCABULARY
N_NON_CORE = N_COMBINATIONS - N_CORES
N_TESTING = N_NON_CORE - math.floor(N_NON_CORE * (1 - TEST_RATIO))


def n_training(alpha: float) -> int:
    """Non-core training combinations for `alpha` in [0, `ALPHA_MAX`]: floor(60 alpha), as SVIB's code counts
    (a product within 1e-9 of an integer counts as that integer, so 0.6 gives 36 however it was written)."""
    if not 0.0 <= alpha <= ALPHA_MAX:
        raise ValueError(f"alpha must be from 0 to {ALPHA_MAX}, got {alpha}")
    return math.floor(round(N_NON_CORE * alpha, 9))


@dataclass(frozen=True)
class CombinationSplits:
    """The cores, the testing combinations (sorted) and the order in which the rest join training."""

    cores: tuple[Combination, ...]
    testing: tuple[Combination, ...]
    order: tuple[Combination, ...]

    def training(self, alpha: float) -> tuple[Combination, ...]:
        """The cores and the first floor(60 alpha) combinations of the order."""
        return self.cores + self.order[:n_training(alpha)]


def _draw_one_by_one(rng: np.random.RandomState, pool: list[Combination], count: int) -> list[Combination]:
    """`count` combinations taken from `pool` one at a time, each a uniform `choice` of what is left (SVIB's loop)."""
    pool = list(pool)
    return [pool.pop(int(rng.choice(np.arange(len(pool))))) for _ in range(count)]


@cache
def combination_splits(split_seed: int) -> CombinationSplits:
    """The splits of `split_seed` (every draw from `numpy.random.RandomState(split_seed)`, in the module's order)."""
    rng = np.random.RandomState(split_seed)
    values = np.arange(VOCABULARY)
    columns = [rng.choice(values, (VOCABULARY, 1), replace=False) for _ in FACTORS]
    cores = tuple((int(colour), int(shape), int(size)) for colour, shape, size in np.concatenate(columns, axis=-1))
    every = [(colour, shape, size) for colour, shape, size in itertools.product(range(VOCABULARY), repeat=3)]
    rest = [combination for combination in every if combination not in cores]
    testing = _draw_one_by_one(rng, rest, N_TESTING)
    remaining = [c for c in rest if c not in testing]
    order = _draw_one_by_one(rng, remaining, len(remaining))
    return CombinationSplits(cores, tuple(sorted(testing)), tuple(order))


def combination_name(combination: Combination) -> str:
    """'green circle 5': colour, shape and size in cells."""
    colour, shape, size = combination
    return f"{COLOUR_NAMES[colour]} {SHAPES[shape]} {SIZES[size]}"


__all__ = ["ALPHA_MAX", "N_TESTING", "CombinationSplits", "combination_name", "combination_splits", "n_training"]
