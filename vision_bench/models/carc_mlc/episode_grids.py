"""An episode's grids read from the project's C-ARC canvas, and a predicted query output written back into it.

The `episodes` family gives a sample as one canvas (`vision_bench.tasks.carc.canvas`): the study pairs and the query
pair at fixed slots, the query's output slot empty in the input. C-ARC's MLC model reads the episode's grids instead
(its study examples and query input as one token sequence, `tokens.episode_sequence`), so the model cuts the canvas
back into them and pastes its predicted output into the query's output slot: its predicted canvas equals the target
canvas exactly when the predicted output grid equals the query's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vision_bench.errors import ConfigError
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.carc.episodes import STUDY_PLAN
from vision_bench.tasks.carc.grammar import GRID_SIDE

STUDY_DROPS = {"none": (), "primitives": (0,), "level-1": (1,)}
"""Table 2's study-example ablations: the levels of the study examples an episode is read without ("- no
primitives", "- no level-1 compositions")."""


def study_levels(setup: str) -> list[int]:
    """The level (0 primitive, 1 level-1, 2 level-2 composition) of each study example of a `setup` episode."""
    return [len(indicators) - 1 for indicators, count in STUDY_PLAN[setup] for _ in range(count)]


@dataclass(frozen=True)
class EpisodeGrids:
    """A batch of episodes: study inputs and outputs (B, n, 10, 10), query inputs (B, 10, 10), the setup."""

    study_inputs: torch.Tensor
    study_outputs: torch.Tensor
    query: torch.Tensor
    setup: str


def _cell(grids: torch.Tensor, corner: tuple[int, int]) -> torch.Tensor:
    top, left = corner
    return grids[:, top:top + GRID_SIDE, left:left + GRID_SIDE]


def canvas_setup(grids: torch.Tensor, model_name: str) -> str:
    """The setup whose canvas the (B, H, W) grids are, or a one-line `ConfigError`."""
    setup = canvas.setup_of_canvas((grids.shape[-2], grids.shape[-1]))
    if setup is None or bool((grids < 0).any()):
        shapes = {name: canvas.canvas_shape(name) for name in canvas.PAIRS_PER_ROW}
        raise ConfigError(f"{model_name} reads C-ARC episode canvases ({shapes}), got grids of "
                          f"{tuple(grids.shape[-2:])} cells; train it on a carc/... study")
    return setup


def episode_grids(grids: torch.Tensor, model_name: str) -> EpisodeGrids:
    """(B, H, W) input canvases -> their study pairs and query input."""
    setup = canvas_setup(grids, model_name)
    pairs = range(canvas.STUDY_PAIRS[setup])
    inputs = torch.stack([_cell(grids, canvas.slot(setup, pair, 0)) for pair in pairs], dim=1)
    outputs = torch.stack([_cell(grids, canvas.slot(setup, pair, 1)) for pair in pairs], dim=1)
    query_in, _ = canvas.query_slots(setup)
    return EpisodeGrids(inputs, outputs, _cell(grids, query_in), setup)


def kept_pairs(setup: str, drop: str, model_name: str) -> list[int]:
    """The study pairs of a `setup` episode left after `drop` (`STUDY_DROPS`), in order; a one-line `ConfigError`
    when the setup has no study examples of the dropped level."""
    levels = study_levels(setup)
    kept = [index for index, level in enumerate(levels) if level not in STUDY_DROPS[drop]]
    if len(kept) == len(levels) and drop != "none":
        raise ConfigError(f"{model_name} with drop_study={drop} reads Systematicity episodes; a {setup} "
                          "episode's study examples are all level-2 compositions; use drop_study=none")
    return kept


def without_study_levels(episodes: EpisodeGrids, drop: str, model_name: str) -> EpisodeGrids:
    """`episodes` without their study examples of the levels `STUDY_DROPS[drop]` names (the others keep their order),
    or a one-line `ConfigError` when the setup has none of them."""
    if drop == "none":
        return episodes
    keep = kept_pairs(episodes.setup, drop, model_name)
    return EpisodeGrids(episodes.study_inputs[:, keep], episodes.study_outputs[:, keep], episodes.query,
                        episodes.setup)


def query_outputs(grids: torch.Tensor, setup: str) -> torch.Tensor:
    """(B, 10, 10): the query output slot of (B, H, W) canvases (the target's holds the query's output)."""
    return _cell(grids, canvas.query_slots(setup)[1])


def with_query_outputs(grids: torch.Tensor, outputs: torch.Tensor, setup: str) -> torch.Tensor:
    """A copy of the (B, H, W) canvases with (B, 10, 10) `outputs` in the query's output slot."""
    top, left = canvas.query_slots(setup)[1]
    filled = grids.clone()
    filled[:, top:top + GRID_SIDE, left:left + GRID_SIDE] = outputs
    return filled


__all__ = ["STUDY_DROPS", "EpisodeGrids", "canvas_setup", "episode_grids", "kept_pairs", "query_outputs",
           "study_levels", "with_query_outputs", "without_study_levels"]
