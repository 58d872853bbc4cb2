"""The built-in task families, registered by importing their modules, and the lookups by config and study id.

A config names its family with `family: NAME`; without it, the first family (in the order below)
whose `claims` accepts the config is its family: `episode` set -> episodes, `scene` set -> scenes,
`kind: world_model` -> world_model, `rules` set -> rules, else sequences. A named family must be that family too (a
`family: sequences` config with `rules`, or with `kind: world_model`, is refused). A study id
belongs to the family with the longest `study_prefix` it starts with (sequences' is empty, so it
takes the rest).
"""

from __future__ import annotations

from vision_bench.errors import ConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import ERROR_TAXONOMY, FAMILIES, ROLLOUTS, TaskFamily, underneath

# isort: off
# Importing a family's module registers it; the order of these imports is the order configs are tried in.
from vision_bench.tasks.families import episodes, scenes, world_model, rules, sequences  # noqa: F401
# isort: on


def family_of(config: TaskConfig) -> TaskFamily:
    """The family that makes `config`'s samples: the one it names (which must claim it, if it claims any
    config), else the first that claims it; its `check` passed; a family with `over` is built over the
    family underneath it."""
    family = _named(config) if config.family is not None else _claiming(config)
    if family.check is not None:
        family.check(config)
    return family if family.over is None else family.over(underneath(config))


def _named(config: TaskConfig) -> TaskFamily:
    """The family `config.family` names, which must be the one its fields make it (when it claims configs)."""
    name = str(config.family)
    family = FAMILIES[name]
    if family.claims is None:
        return family
    fitting = _claiming(config)
    if fitting is not family:
        other = next(key for key, entry in FAMILIES.items() if entry is fitting)
        raise ConfigError(f"family {name!r} does not fit this task config: {name} needs {family.fields}, and these "
                          f"fields make it a {other!r} config ({fitting.label}); change the fields, set "
                          f"family: {other}, or leave 'family' out")
    return family


def _claiming(config: TaskConfig) -> TaskFamily:
    """The first family that claims `config`."""
    return next(family for _, family in FAMILIES.items() if family.claims is not None and family.claims(config))


def study_family(study_id: str) -> TaskFamily:
    """The family of a study id (or a bench experiment, named by its study id): the longest matching prefix."""
    matching = [family for _, family in FAMILIES.items()
                if family.study_prefix is not None and study_id.startswith(family.study_prefix)]
    return max(matching, key=lambda family: len(family.study_prefix or ""))


def family_metrics() -> dict[str, list[str]]:
    """Metric -> the labels of the families that list it in `metrics`: the metrics that only some families'
    samples support (factor accuracy on SVIB's scenes), which evaluation reports unavailable elsewhere."""
    owners: dict[str, list[str]] = {}
    for _, family in FAMILIES.items():
        for name in sorted(family.metrics):
            owners.setdefault(name, []).append(family.label)
    return owners


__all__ = ["ERROR_TAXONOMY", "FAMILIES", "ROLLOUTS", "TaskFamily", "family_metrics", "family_of", "study_family"]
