"""`TaskFamily`, one kind of task, and `FAMILIES`, the registry every family adds itself to.

A family is one module with one entry point, `sample(config, split, index) -> TaskSample`, registered
beside it with `FAMILIES.add(name, TaskFamily(...), description)`. The entry also carries what the
rest of the pipeline asks about a kind of task, so that no code outside `vision_bench.tasks` tests a
config's fields or a study id's prefix: the reports that apply (`reports`), the metrics that do not
(`unavailable_metrics`), whether a sample is an episode canvas and its setup (`episode_setup`,
`episodes`), which study ids are its
(`study_prefix`), which configs are its own (`claims`), and, for a family that serves another's
samples differently (`over`), how. `vision_bench.tasks.families.registry` imports the built-in
families, which fills `FAMILIES`, and resolves configs and study ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vision_bench.registry import Registry
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.sample import Sampler

ROLLOUTS = "rollouts"
"""The report that rolls a model out closed loop over whole sequences (`vision_bench.bench.rollout_report`)."""
ERROR_TAXONOMY = "error_taxonomy"
"""The bench report's table of error kinds (`vision_bench.metrics.error_taxonomy`, paper 001, section 5.2)."""


@dataclass(frozen=True)
class TaskFamily:
    """One kind of task and what the pipeline needs to know about it.

    `sample` makes what datasets serve; `sequence_sample` the whole sequence where a served sample is
    part of one (world models serve one step; rollouts and fingerprints read the whole sequence),
    else `sample` itself. `prepare(config, split)`, when given, does a split's shared work up front
    (and fails early on an infeasible config) before samples are made, possibly by forked workers.
    `label` names the family's studies in messages ("rule studies"). `one_step`: datasets hold one
    step of each sequence, so training sees single actions. `claims(config)`: the configs that are
    this family's, with or without `family: NAME` (None: only configs naming it). `over(underneath)`,
    when given, is the entry that makes a config's samples from the family underneath (the first
    family without `over` that claims the config): world models serve one step of its samples and
    keep its unavailable metrics. `episode_setup(config)`: the C-ARC setup of an episodes config,
    by which evaluation's error taxonomy finds the query on the canvas. `check(config)`: the family's
    own checks of a config, raising a one-line `ConfigError` (`family_of` runs it); the COGITAO
    generator's settings are checked when the config is (`tasks.config.SEQUENCE_FAMILIES`).
    `fields` says, for messages, which fields make a config this family's ("an `episode` section").
    `rule_in_batch`: whether the `ground_truth` baseline can apply a batch's sequence and task code to its
    input grids; when not (a C-ARC episode's grammar, an SVIB scene's rule), it draws the true targets.
    `metrics`: metrics that only this family's samples support (factor accuracy on SVIB's scenes);
    evaluation reports them unavailable for every other family. `evaluation_note`: what a reader of this
    family's evaluation must know to read its numbers, printed with them and kept in metrics.json's notes.
    """

    sample: Sampler
    label: str
    claims: Callable[[TaskConfig], bool] | None = None
    sequence_sample: Sampler | None = None
    prepare: Callable[[TaskConfig, str], object] | None = None
    study_prefix: str | None = None
    episode_setup: Callable[[TaskConfig], str] | None = None
    one_step: bool = False
    reports: frozenset[str] = frozenset()
    unavailable_metrics: frozenset[str] = frozenset()
    over: Callable[[TaskFamily], TaskFamily] | None = None
    check: Callable[[TaskConfig], None] | None = None
    fields: str = ""
    metrics: frozenset[str] = frozenset()
    rule_in_batch: bool = True
    evaluation_note: str | None = None

    @property
    def episodes(self) -> bool:
        """Whether a sample is an episode canvas (`episode_setup` is set): what export and generate ask."""
        return self.episode_setup is not None

    @property
    def whole_sample(self) -> Sampler:
        """`sequence_sample` when set, else `sample`."""
        return self.sequence_sample or self.sample


FAMILIES: Registry[TaskFamily] = Registry("task family")
"""Task families by name (`family:` in a task config), in the order a config without `family` is tried;
each family module adds its entry when imported (`vision_bench.tasks.families.registry` imports them)."""


def underneath(config: TaskConfig) -> TaskFamily:
    """The first family without `over` that claims `config`: the one a family with `over` serves."""
    return next(family for _, family in FAMILIES.items()
                if family.over is None and family.claims is not None and family.claims(config))
