"""The `scenes` family: SVIB's scenes (paper 003; `scene` in a task config, study ids `svib/...`).

Sample `index` of a split draws from its own RNG (`sample_rng`): two combinations, uniformly with replacement
from the split's (`SceneSpec.combinations`: the training combinations for train, val_id and test_id, the
testing ones for val_ood and test_ood), and two anchors (`scenes.placement.place`), again until the input
grid is one the split owns (`generator.owning_split`, the hash partition that keeps every split's inputs
apart). The target is the scene's rule applied (`scenes.rules`). Each object's record holds its input box
(`bbox`), its target box (`output_bbox`), its input colour and, under `properties`, its `input` and `target`
factors (colour, shape, size indices, quadrant, position [x, y] with y up), SVIB's scene description.

The task code is all identity: one model is trained per rule, as SVIB does; `task_key` is the rule's name.
A sample has no transformation sequence, so exported masks label each object by its boxes. Stubbornness
(a training sequence applied to every object) is not defined; factor accuracy is this family's own metric.
"""

from __future__ import annotations

from vision_bench.errors import ConfigError, InfeasibleConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import FAMILIES, TaskFamily
from vision_bench.tasks.generator import owning_split
from vision_bench.tasks.sample import TaskSample, sample_rng
from vision_bench.tasks.scenes.factors import COLOURS, FACTOR_METRICS, SceneObject, draw
from vision_bench.tasks.scenes.placement import place
from vision_bench.tasks.scenes.rules import RULES
from vision_bench.tasks.scenes.spec import SceneSpec
from vision_bench.tasks.task_code import IDENTITY_TOKEN

STUDY_PREFIX = "svib/"
MAX_ATTEMPTS = 10_000
"""Attempts at an input the split owns; an evaluation split owns 2.5% of inputs, so 10,000 fail with odds 1e-110."""


def sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split`: the input scene and the scene the rule makes of it."""
    spec = _spec(config)
    rng = sample_rng(config.seed, split, index)
    combinations = spec.combinations(split)
    for _ in range(MAX_ATTEMPTS):
        objects = place(rng, combinations, spec.grid_size, spec.motion)
        grid_in = draw(objects, spec.grid_size)
        if owning_split(grid_in) == split:
            break
    else:
        raise InfeasibleConfigError(f"no input scene of split {split} found in {MAX_ATTEMPTS} attempts")
    targets = RULES[spec.rule].apply(objects, spec.grid_size, spec.motion)
    grid_out = draw(targets, spec.grid_size)
    records = tuple(_record(before, after, spec.grid_size) for before, after in zip(objects, targets))
    return TaskSample(grid_in, grid_out, (), (grid_in, grid_out), records, (IDENTITY_TOKEN,) * config.task_code_length,
                      spec.rule, config.seed, split, index)


def _box(obj: SceneObject) -> list[int]:
    return [obj.top, obj.left, obj.top + obj.side, obj.left + obj.side]


def _factors(obj: SceneObject, grid_size: int) -> dict:
    return {"colour": obj.colour, "shape": obj.shape, "size": obj.size, "quadrant": obj.quadrant(grid_size),
            "position": list(obj.position(grid_size))}


def _record(before: SceneObject, after: SceneObject, grid_size: int) -> dict:
    """An object's record: its boxes in the input and the target, its input colour, and both scenes' factors."""
    return {"bbox": _box(before), "output_bbox": _box(after), "colors": [COLOURS[before.colour]],
            "properties": {"input": _factors(before, grid_size), "target": _factors(after, grid_size)}}


def _spec(config: TaskConfig) -> SceneSpec:
    if config.scene is None:
        raise ConfigError("the scenes family needs the task config's 'scene' settings")
    return config.scene


def _has_scene(config: TaskConfig) -> bool:
    return config.scene is not None


def _check(config: TaskConfig) -> None:
    """A scene config uses none of the COGITAO generator's ways to pick sequences, and serves whole scenes."""
    cogitao = [name for name in ("transformations", "sequences", "rules") if getattr(config, name) is not None]
    if cogitao:
        raise ConfigError(f"a scene's rule is scene.rule, so {', '.join(cogitao)} do not apply; remove them")
    if config.kind == "world_model":
        raise ConfigError("a scene has no sequence to serve one step at a time; remove kind: world_model")
    unused = [name for name in _UNUSED if getattr(config, name) != TaskConfig.model_fields[name].default]
    if config.n_objects not in ((2, 2), TaskConfig.model_fields["n_objects"].default):
        unused.insert(0, "n_objects")
    if unused:
        raise ConfigError(f"a scene always has two 8-connected objects on one grid for every split, so these "
                          f"settings do not apply: {', '.join(unused)}; remove them")


_UNUSED = ("object_filter", "connectivity", "depth", "n_distractors", "splits", "square_grid",
           "paired_ood")
"""The COGITAO generator's settings a scene config leaves at their defaults (the scene section decides);
`n_objects` may also say (2, 2), as the svib/ studies do."""


FAMILIES.add("scenes", TaskFamily(sample, "SVIB scenes", claims=_has_scene, check=_check, study_prefix=STUDY_PREFIX,
                                  fields="a `scene` section", metrics=frozenset(FACTOR_METRICS),
                                  unavailable_metrics=frozenset({"stubbornness"}), rule_in_batch=False),
             "SVIB: two objects whose colour, shape, size and position a relational rule over their factors sets")
