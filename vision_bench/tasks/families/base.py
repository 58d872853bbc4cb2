"""`TaskFamily`, one kind of task, and `FAMILIES`, the registry every family adds itself to.

A family is one module with one entry point, `sample(config, split, index) -> TaskSample`, registered
beside it with `FAMILIES.add(name, TaskFamily(...), description)`. The entry also carries what the
rest of the pipeline asks about a kind of task, so that no code outside `vision_bench.tasks` tests a
config's fields or a study id's prefix: the reports that apply (`reports`), the metrics that do not
(`unavailable_metrics`), whether a sample is an episode canvas (`episodes`), which study ids are its
(`study_prefix`), and which configs it claims when they name no `family` (`claims`).
`vision_bench.tasks.families.registry` imports the built-in families and resolves configs and study ids.
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


def _never(config: TaskConfig) -> bool:
    """A family that only configs naming it (`family: NAME`) use."""
    return False


@dataclass(frozen=True)
class TaskFamily:
    """One kind of task and what the pipeline needs to know about it.

    `sample` makes what datasets serve; `sequence_sample` the whole sequence where a served sample is
    part of one (world models serve one step; rollouts and fingerprints read the whole sequence),
    else `sample` itself. `prepare(config, split)`, when given, does a split's shared work up front
    (and fails early on an infeasible config) before samples are made, possibly by forked workers.
    `label` names the family's studies in messages ("rule studies"). `one_step`: datasets hold one
    step of each sequence, so training sees single actions.
    """

    sample: Sampler
    label: str
    claims: Callable[[TaskConfig], bool] = _never
    sequence_sample: Sampler | None = None
    prepare: Callable[[TaskConfig, str], object] | None = None
    study_prefix: str | None = None
    episodes: bool = False
    one_step: bool = False
    reports: frozenset[str] = frozenset()
    unavailable_metrics: frozenset[str] = frozenset()

    @property
    def whole_sample(self) -> Sampler:
        """`sequence_sample` when set, else `sample`."""
        return self.sequence_sample or self.sample


FAMILIES: Registry[TaskFamily] = Registry("task family")
"""Task families by name (`family:` in a task config), in the order a config without `family` is tried."""
