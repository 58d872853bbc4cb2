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
study. `generate_sample` still makes the whole sequence (what rollouts score); every dataset path
(`generator.served_sample`, `generate_split` / `map_split`, hence `vision-bench generate` and
`export`, and the on-the-fly datasets) serves the one-step transition.
"""

from __future__ import annotations

import hashlib
from functools import partial
from itertools import product

from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig, WorldModelConfig
from vision_bench.tasks.generator import TaskSample, generate_sample
from vision_bench.tasks.studies import compgen, envgen
from vision_bench.tasks.studies.builder import STUDIES
from vision_bench.tasks.task_code import encode_task_code

PREFIX = "worldmodel/"
DEPTH4_GRID = 15
DEPTH4_STEPS = 4


def as_world_model(config: TaskConfig) -> WorldModelConfig:
    """`config` marked as a world-model study: the same sequences, served one step at a time."""
    data = config.to_dict()
    data["description"] = f"World model, served as one-step transitions (frame t, action t -> frame t+1). " \
                          f"{config.description}"
    data["kind"] = "world_model"
    return WorldModelConfig.from_dict(data)


def transition_step(seed: int | None, split: str, index: int, depth: int) -> int:
    """The step (0 .. depth - 1) that transition `index` of `split` takes from its sequence."""
    digest = hashlib.blake2b(f"transition/{seed}/{split}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % depth


def transition(sample: TaskSample, step: int) -> TaskSample:
    """Step `step` of a sequence sample as its own sample: frames[step] -> frames[step + 1] under one action.

    Object metadata describes the sequence's input and is left out.
    """
    action = sample.sequence[step]
    return TaskSample(
        input=sample.frames[step],
        output=sample.frames[step + 1],
        sequence=(action,),
        frames=(sample.frames[step], sample.frames[step + 1]),
        task_code=tuple(encode_task_code((action,), len(sample.task_code))),
        task_key=action,
        seed=sample.seed,
        split=sample.split,
        index=sample.index,
    )


def transition_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Transition `index` of `split`: one step of sequence sample `index` (see `transition_step`)."""
    sample = generate_sample(config, split, index)
    return transition(sample, transition_step(config.seed, split, index, len(sample.sequence)))


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
        STUDIES.add(PREFIX + name, partial(_world_model, build), f"World model (one-step transitions) of {description}")


_register_studies()
