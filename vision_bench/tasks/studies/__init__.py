"""Study presets: CompGen C1-C3 and EnvGen G1-G5 (COGITAO), COGITAO transformations on SVIB-style alpha splits,
gCOG, C-ARC and SVIB's own tasks, as `TaskConfig`s."""

from vision_bench.tasks.studies.registry import STUDIES, get_study

__all__ = ["STUDIES", "get_study"]
