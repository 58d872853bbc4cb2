"""World-model presets (COGITAO paper 000, appendix A, Sequential COGITAO): predict frame t+1 from
frame t and the action, the transformation applied at step t.

`worldmodel/<study>` is the sequence study `<study>` (`compgen/C1/1`, `envgen/G2/3`, ...) served as
one-step transitions: item i of a split is one step of sequence sample i, (frames[k], action k,
frames[k + 1]), whose task code is the one-token code of the action. The step k is drawn from
(seed, split, i) alone, uniformly over the sequence's steps, so a split has one transition per
sequence and stays a pure function of (seed, split, i). The whole sequences stay available for
closed-loop rollouts (`vision_bench.evaluation.rollout`), which score the model step by step.

`worldmodel/depth4/1` adds sequences of four steps of CompGen experiment 1's transformations
(translate_up, rot90, mirror_horizontal: all 81 orders, repeats allowed, one drawn uniformly), so a
rollout has four steps; its OOD splits place three or four objects instead of two (EnvGen G1's
change of environment).

The marker is the config's field `kind: world_model` (its type, `WorldModelConfig`, from
`TaskConfig.from_dict`), which `to_dict` keeps, so an export's manifest reads back as a world-model
study, of the `world_model` task family (`vision_bench.tasks.families.world_model`, which makes the
transitions).
"""

from __future__ import annotations

from functools import partial
from itertools import product

from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig, WorldModelConfig
from vision_bench.tasks.families.world_model import STUDY_PREFIX
from vision_bench.tasks.studies import compgen, envgen
from vision_bench.tasks.studies.builder import STUDIES

DEPTH4_GRID = 15
DEPTH4_STEPS = 4


def as_world_model(config: TaskConfig) -> WorldModelConfig:
    """`config` marked as a world-model study: the same sequences, served one step at a time."""
    data = config.to_dict()
    data["description"] = f"World model, served as one-step transitions (frame t, action t -> frame t+1). " \
                          f"{config.description}"
    data["kind"] = "world_model"
    return WorldModelConfig.from_dict(data)


def depth4_config(counts: SampleCounts, seed: int) -> TaskConfig:
    """Four-step sequences of translate_up, rot90 and mirror_horizontal; OOD: three or four objects."""
    more_objects = SplitConfig(n_objects=(3, 4))
    return TaskConfig(
        description=f"Depth 4: {DEPTH4_STEPS} steps of {', '.join(compgen.TRANSFORMATIONS[1])} "
                    f"(repeats allowed), 2 objects up to 5x5 on a {DEPTH4_GRID}x{DEPTH4_GRID} grid; "
                    "OOD: 3-4 objects",
        seed=seed,
        grid_height=(DEPTH4_GRID, DEPTH4_GRID),
        grid_width=(DEPTH4_GRID, DEPTH4_GRID),
        n_objects=(2, 2),
        object_filter=(compgen.RELEASE_OBJECTS,),
        connectivity=8,
        sequences=tuple(product(compgen.TRANSFORMATIONS[1], repeat=DEPTH4_STEPS)),
        samples=counts,
        splits=SplitOverrides(val_ood=more_objects, test_ood=more_objects),
    )


def _world_model(build: partial[TaskConfig], counts: SampleCounts, seed: int) -> WorldModelConfig:
    return as_world_model(build(counts, seed))


def _register_studies() -> None:
    """Register worldmodel/compgen/..., worldmodel/envgen/... and worldmodel/depth4/1."""
    bases: list[tuple[str, partial[TaskConfig], str]] = []
    for setting in compgen.SETTINGS:
        for experiment in compgen.TRANSFORMATIONS:
            bases.append((f"compgen/{setting}/{experiment}", partial(compgen.release_config, setting, experiment),
                          STUDIES.description(f"compgen/{setting}/{experiment}")))
    for setting in envgen.SETTINGS:
        for experiment in range(1, len(envgen.RULES) + 1):
            bases.append((f"envgen/{setting}/{experiment}", partial(envgen.build, setting, experiment),
                          STUDIES.description(f"envgen/{setting}/{experiment}")))
    bases.append(("depth4/1", partial(depth4_config), "four-step sequences of translate_up, rot90, mirror_horizontal"))
    for name, build, description in bases:
        STUDIES.add(STUDY_PREFIX + name, partial(_world_model, build),
                    f"World model (one-step transitions) of {description}")


_register_studies()
