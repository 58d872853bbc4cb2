"""`SceneSpec`: the part of a task config that makes its samples SVIB scenes (`scene:` in a task config).

It imports only the config base and the scene modules, so `tasks.config` can hold it without an import
cycle. The grid must hold two objects of the largest size with room for any motion and the separation
`placement.separation(motion)` asks: `min_grid_size(motion)` cells a side.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from render.grid import MAX_SIDE
from vision_bench.config_base import StrictConfig
from vision_bench.errors import UserError
from vision_bench.tasks.scenes.factors import Combination
from vision_bench.tasks.scenes.placement import min_grid_size
from vision_bench.tasks.scenes.rules import check_rule_name
from vision_bench.tasks.scenes.splits import ALPHA_MAX, combination_splits

DEFAULT_GRID_SIZE = 32
DEFAULT_MOTION = 4
OOD_SPLITS = ("val_ood", "test_ood")
"""The splits whose objects take the testing combinations; the others take the training ones."""


class SceneSpec(StrictConfig):
    """SVIB scenes: the rule (a code name of `rules.RULES`), alpha (training combinations), the square grid's side,
    the motion in cells and the seed of the combination splits (`splits.combination_splits`)."""

    config_name = "scene"
    rule: str
    alpha: float = Field(ge=0.0, le=ALPHA_MAX)
    grid_size: int = Field(DEFAULT_GRID_SIZE, ge=1, le=MAX_SIDE)
    motion: int = Field(DEFAULT_MOTION, ge=1, le=MAX_SIDE)
    split_seed: int = Field(0, ge=0, le=2**32 - 1)

    @field_validator("rule")
    @classmethod
    def _known_rule(cls, value: str) -> str:
        try:
            return check_rule_name(value)
        except UserError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _room(self) -> SceneSpec:
        smallest = min_grid_size(self.motion)
        if self.grid_size < smallest:
            raise ValueError(f"grid_size {self.grid_size} is too small for two objects of up to 6 cells moving "
                             f"{self.motion} cells; use grid_size {smallest} or more (or a smaller motion)")
        return self

    def combinations(self, split: str) -> tuple[Combination, ...]:
        """The combinations the objects of `split` draw from: the testing ones out of distribution, else training."""
        splits = combination_splits(self.split_seed)
        return splits.testing if split in OOD_SPLITS else splits.training(self.alpha)


__all__ = ["DEFAULT_GRID_SIZE", "DEFAULT_MOTION", "OOD_SPLITS", "SceneSpec"]
