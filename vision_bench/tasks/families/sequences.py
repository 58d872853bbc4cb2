"""The `sequences` family: COGITAO's tasks, every object transformed by one drawn sequence
(`vision_bench.tasks.generator.generate`, shared with the `rules` family). It claims every config
without `rules`, `episode` or `scene` (the last tried), and every study id no other family's prefix names
(compgen/, envgen/, alpha/, ...)."""

from __future__ import annotations

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import FAMILIES, TaskFamily
from vision_bench.tasks.generator import generate, prepare


def _plain(config: TaskConfig) -> bool:
    return config.rules is None and config.episode is None and config.scene is None


FAMILIES.add("sequences", TaskFamily(generate, "sequence studies", claims=_plain, prepare=prepare, study_prefix="",
                                     fields="no `rules`, `episode`, `scene` or `kind: world_model`"),
             "COGITAO: objects from the library, each transformed by the sample's sequence")
