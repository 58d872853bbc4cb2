"""The `sequences` family: COGITAO's tasks, every object transformed by one drawn sequence
(`vision_bench.tasks.generator`). It takes every config no other family claims, and every study id
no other family's prefix names (compgen/, envgen/, alpha/, ...)."""

from __future__ import annotations

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import FAMILIES, TaskFamily
from vision_bench.tasks.generator import generate, prepare


def _always(config: TaskConfig) -> bool:
    return True


FAMILIES.add("sequences", TaskFamily(generate, "sequence studies", claims=_always, prepare=prepare, study_prefix=""),
             "COGITAO: objects from the library, each transformed by the sample's sequence")
