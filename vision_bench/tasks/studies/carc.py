"""Compositional-ARC (paper 001, sections 3-4, appendix B): `carc/<setup>/<split>` presets.

Setups: `3shot` (3 study examples of the query's own level-2 composition) and `systematicity`
(12 study examples: 2 primitive per indicator, 2 level-1 per pair of indicators; level-2
queries). Splits: the paper's four data splits of Table 7, named by their seed; each keeps two of
the ten level-2 compositions for evaluation (val_ood, test_ood); train, val_id and test_id draw
episodes from the other eight. One sample is one query of an episode, drawn as one canvas grid
(`vision_bench.tasks.carc.canvas`), 10 queries per episode as in the paper.

Render these with the C-ARC palette: `palette: c-arc` in a bench or train config's `spec`, or
`--palette c-arc` on the command line (the render spec has no per-study default).
"""

from __future__ import annotations

from functools import partial

from vision_bench.tasks.carc.canvas import canvas_shape
from vision_bench.tasks.carc.spec import SETUPS, Composition, EpisodeSpec
from vision_bench.tasks.config import SampleCounts, TaskConfig
from vision_bench.tasks.families.episodes import STUDY_PREFIX
from vision_bench.tasks.studies.builder import STUDIES

SOURCE = "Compositional-ARC (paper 001), Table 7; released code mainlp/C-ARC"

PAPER_SPLITS: dict[str, tuple[Composition, ...]] = {
    "1860": (("translation", "rotation", "extension"), ("translation", "reflection", "extension")),
    "1870": (("rotation", "coloring", "extension"), ("rotation", "reflection", "coloring")),
    "1880": (("rotation", "reflection", "coloring"), ("reflection", "coloring", "extension")),
    "1890": (("translation", "rotation", "coloring"), ("translation", "rotation", "extension")),
}
"""The evaluation-only level-2 compositions of the paper's four data splits (Table 7), by seed."""

SETUP_WORDS = {
    "3shot": "3-Shot: 3 study examples of the query's level-2 composition",
    "systematicity": "Systematicity: 6 primitive + 6 level-1 study examples, level-2 queries",
}


def build(setup: str, split: str, counts: SampleCounts, seed: int) -> TaskConfig:
    """The task config of `carc/<setup>/<split>`."""
    episode = EpisodeSpec.model_validate({"setup": setup, "eval_compositions": PAPER_SPLITS[split]})
    height, width = canvas_shape(setup)
    evaluated = ", ".join("+".join(c) for c in episode.eval_compositions)
    return TaskConfig(
        description=f"C-ARC {SETUP_WORDS[setup]}; paper split {split}, evaluation compositions {evaluated}",
        seed=seed,
        grid_height=(height, height),
        grid_width=(width, width),
        n_objects=(1, 2),
        episode=episode,
        samples=counts,
    )


for _setup in SETUPS:
    for _split in PAPER_SPLITS:
        STUDIES.add(f"{STUDY_PREFIX}{_setup}/{_split}", partial(build, _setup, _split),
                    f"Compositional-ARC {SETUP_WORDS[_setup]}; Table 7 split {_split}")
