"""The `rules` family: gCOG-style selector rules (`rules` in a task config, study ids `gcog/...`).

A sample draws one rule; its selector picks the targets, which its sequence transforms, and
distractors stay as they are. Its sampler is `vision_bench.tasks.generator.generate`, the same as the
`sequences` family's: the generator has one attempt path, and decides rules or not by
`config.rules is None`; this entry differs in what it claims, its study ids and its metrics.
Stubbornness (COGITAO G.4) applies one sequence to every object, so it is not defined here.
"""

from __future__ import annotations

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import FAMILIES, TaskFamily
from vision_bench.tasks.generator import generate, prepare

STUDY_PREFIX = "gcog/"


def _has_rules(config: TaskConfig) -> bool:
    return config.rules is not None and config.episode is None and config.scene is None


FAMILIES.add("rules", TaskFamily(generate, "rule studies", claims=_has_rules, prepare=prepare, fields="a `rules` list",
                                 study_prefix=STUDY_PREFIX, unavailable_metrics=frozenset({"stubbornness"})),
             "gCOG: a selector rule picks the objects its sequence transforms; distractors stay")
