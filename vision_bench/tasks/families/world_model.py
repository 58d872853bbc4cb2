"""The `world_model` family: sequence studies served as one-step transitions (`kind: world_model`, study ids
`worldmodel/...`, presets in `vision_bench.tasks.studies.worldmodel`).

Item i of a split is one step of sequence sample i, (frames[k], action k, frames[k + 1]), whose task
code is the one-token code of the action; the step k is drawn from (seed, split, i) alone
(`transition_step`). Every dataset path (`vision-bench generate` and `export`, the on-the-fly
datasets) serves the transition; `sequence_sample` still makes the whole sequence, which the
rollout report scores closed loop. The samples are those of the family underneath (`over`: the
family that claims the config without `kind: world_model`, sequences or rules), whose unavailable
metrics stay unavailable (a world model of a rule study has no stubbornness either).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import FAMILIES, ROLLOUTS, TaskFamily, underneath
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.task_code import encode_task_code

STUDY_PREFIX = "worldmodel/"


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


def over(family: TaskFamily) -> TaskFamily:
    """The world-model entry over `family`: transition `index` of `split` is one step of `family`'s whole sample
    `index` (see `transition_step`); its label, unavailable metrics and own metrics are `family`'s, plus the rollout
    report."""
    whole_sample = family.whole_sample

    def sample(config: TaskConfig, split: str, index: int) -> TaskSample:
        return _served(whole_sample(config, split, index), config, split, index)

    return replace(WORLD_MODEL, sample=sample, sequence_sample=whole_sample, label=family.label,
                   prepare=family.prepare, reports=family.reports | WORLD_MODEL.reports,
                   unavailable_metrics=family.unavailable_metrics, metrics=family.metrics, over=None)


def _served(whole: TaskSample, config: TaskConfig, split: str, index: int) -> TaskSample:
    """Transition `index` of `split` from its whole sample."""
    return transition(whole, transition_step(config.seed, split, index, len(whole.sequence)))


def _sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    return _served(_whole_sample(config, split, index), config, split, index)


def _whole_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    return underneath(config).whole_sample(config, split, index)


def _is_world_model(config: TaskConfig) -> bool:
    return config.kind == "world_model" and config.episode is None and config.scene is None


GROUND_TRUTH_NOTE = (
    "ground_truth here re-applies each step's action to the input frame's grid: where objects touch, the frame "
    "alone no longer tells them apart, so it can differ from the generator's next frame and score below 100% "
    "(`evaluate --rollout` scores the true next frame instead, perfect at every step)"
)
"""Why the one-step `ground_truth` is not a perfect ceiling on world-model data (`evaluation.rollout`'s docstring
has the counts)."""

WORLD_MODEL = TaskFamily(_sample, "world-model studies", claims=_is_world_model, sequence_sample=_whole_sample,
                         fields="kind: world_model", study_prefix=STUDY_PREFIX, one_step=True,
                         reports=frozenset({ROLLOUTS}), over=over, evaluation_note=GROUND_TRUTH_NOTE)
"""The registered entry; `family_of` gives a config's entry over its family (`over`)."""

FAMILIES.add("world_model", WORLD_MODEL,
             "world models: one step of each sequence (frame t, action t -> frame t+1); rollouts score whole sequences")
