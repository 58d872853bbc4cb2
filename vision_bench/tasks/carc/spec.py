"""`EpisodeSpec`: the part of a task config that makes its samples Compositional-ARC episodes.

It imports only the config base and the C-ARC transformation kinds, so `tasks.config` can hold
it without an import cycle. A composition is named by its three kinds in `KINDS` order
(e.g. `("translation", "rotation", "extension")`); `eval_compositions` are the level-2
compositions kept for the OOD splits (the paper's Table 7: 2 of the 10 as test-only).
"""

from __future__ import annotations

import itertools
from typing import Literal

from pydantic import Field, field_validator

from vision_bench.config_base import StrictConfig
from vision_bench.tasks.transformations.carc import KINDS

Composition = tuple[str, str, str]

COMPOSITIONS: tuple[Composition, ...] = tuple(itertools.combinations(KINDS, 3))
"""The ten level-2 compositions (sets of three kinds), in `KINDS` order."""

PAPER_EVAL_COMPOSITIONS: tuple[Composition, ...] = (
    ("translation", "rotation", "extension"),
    ("translation", "reflection", "extension"),
)
"""The evaluation-only compositions of the paper's split 'seed 1860' (Table 7)."""

OOD_SPLITS = ("val_ood", "test_ood")
"""The splits whose episodes use `eval_compositions`; the others use the remaining compositions."""

SETUPS = ("3shot", "systematicity")


class EpisodeSpec(StrictConfig):
    """Compositional-ARC episodes: the setup, queries per episode and the evaluation compositions."""

    config_name = "episode"
    kind: Literal["carc"] = "carc"
    setup: Literal["3shot", "systematicity"]
    queries_per_episode: int = Field(10, ge=1, le=50)
    eval_compositions: tuple[Composition, ...] = PAPER_EVAL_COMPOSITIONS

    @field_validator("eval_compositions", mode="before")
    @classmethod
    def _canonical(cls, value: object) -> object:
        if not isinstance(value, (list, tuple)):
            return value
        order = list(KINDS)
        canonical = []
        for composition in value:
            kinds = tuple(composition) if isinstance(composition, (list, tuple)) else (composition,)
            unknown = [kind for kind in kinds if kind not in KINDS]
            if unknown or len(set(kinds)) != 3 or len(kinds) != 3:
                raise ValueError(
                    f"{list(kinds)} is not a composition: give three different kinds of {', '.join(KINDS)}"
                )
            canonical.append(tuple(sorted(kinds, key=order.index)))
        if not canonical or len(set(canonical)) == len(COMPOSITIONS):
            raise ValueError(f"give 1 to {len(COMPOSITIONS) - 1} evaluation compositions, so both sides are non-empty")
        return tuple(sorted(set(canonical), key=COMPOSITIONS.index))

    def compositions(self, split: str) -> tuple[Composition, ...]:
        """The level-2 compositions the episodes of `split` draw from."""
        if split in OOD_SPLITS:
            return self.eval_compositions
        return tuple(c for c in COMPOSITIONS if c not in self.eval_compositions)
