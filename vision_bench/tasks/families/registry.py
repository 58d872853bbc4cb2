"""The built-in task families, registered by importing their modules, and the lookups by config and study id.

A config names its family with `family: NAME`; without it, the first family (in the order below)
whose `claims` accepts the config is its family: `episode` set -> episodes, `kind: world_model` ->
world_model, `rules` set -> rules, else sequences. A study id belongs to the family with the longest
`study_prefix` it starts with (sequences' is empty, so it takes the rest).
"""

from __future__ import annotations

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import ERROR_TAXONOMY, FAMILIES, ROLLOUTS, TaskFamily

# isort: off
# Importing a family's module registers it; the order of these imports is the order configs are tried in.
from vision_bench.tasks.families import episodes, world_model, rules, sequences  # noqa: F401
# isort: on


def family_of(config: TaskConfig) -> TaskFamily:
    """The family that makes `config`'s samples: the one it names, else the first that claims it."""
    if config.family is not None:
        return FAMILIES[config.family]
    return next(family for _, family in FAMILIES.items() if family.claims(config))


def study_family(study_id: str) -> TaskFamily:
    """The family of a study id (or a bench experiment, named by its study id): the longest matching prefix."""
    matching = [family for _, family in FAMILIES.items()
                if family.study_prefix is not None and study_id.startswith(family.study_prefix)]
    return max(matching, key=lambda family: len(family.study_prefix or ""))


__all__ = ["ERROR_TAXONOMY", "FAMILIES", "ROLLOUTS", "TaskFamily", "family_of", "study_family"]
