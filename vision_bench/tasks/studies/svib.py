"""SVIB's tasks in the grid world (paper 003, section 2; released code systematic-visual-imagination/svib):
`svib/<task>/<alpha>`.

A task is one of the paper's four (S-A, S-NA, M-A, M-NA: `scenes.rules.TASKS`, each the code rule that does
what Fig. 2 says) or any rule of SVIB's dSprites `rule.py` by its code name (CP, ShAC, ...; `scenes.rules.RULES`).
Alpha, any number from 0 to 0.8, is the share of the 60 non-core combinations in training
(`scenes.splits`); the paper's 0.0, 0.2, 0.4 and 0.6 are registered for each paper task, and every other
task and alpha is built on request. train, val_id and test_id draw each object's combination from the
training combinations, val_ood and test_ood from the 12 testing ones. Paper scale (`--scale paper`):
64,000 training and 8,000 evaluation episodes per split, SVIB's `--num_train` and `--num_test`.
"""

from __future__ import annotations

import math
from functools import partial

from pydantic import ValidationError

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.tasks.config import SampleCounts, TaskConfig, describe_validation_error
from vision_bench.tasks.families.scenes import STUDY_PREFIX
from vision_bench.tasks.scenes.rules import RULES, TASKS, task_name, task_rule
from vision_bench.tasks.scenes.spec import SceneSpec
from vision_bench.tasks.scenes.splits import ALPHA_MAX, N_TESTING, n_training
from vision_bench.tasks.studies.builder import ALPHA_STUDIES, PAPER_COUNTS, STUDIES

SOURCE = "SVIB (paper 003), section 2 and Fig. 2; released code data_creation/dsprites/{rule,create_data,utils}.py"
ALPHAS = (0.0, 0.2, 0.4, 0.6)
"""The paper's alphas (Fig. 4: 0.0, and Hard, Medium, Easy)."""
PAPER_TRAIN = 64_000
PAPER_EVAL = 8_000


def build(task: str, alpha: float, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `svib/<task>/<alpha>`: the task's rule on SVIB scenes at this alpha."""
    rule = task_rule(task)
    try:
        scene = SceneSpec(rule=rule, alpha=alpha)
    except ValidationError as error:
        raise ConfigError(f"study '{STUDY_PREFIX}{task}/{alpha}': {describe_validation_error(error, SceneSpec)}"
                          ) from None
    side = (scene.grid_size, scene.grid_size)
    return TaskConfig(
        description=f"SVIB {task_name(rule)}: {RULES.description(rule)}; alpha {alpha}: "
                    f"{4 + n_training(alpha)} of 64 colour x shape x size combinations in training, {N_TESTING} "
                    f"others out of distribution. Source: {SOURCE}",
        seed=seed,
        grid_height=side,
        grid_width=side,
        n_objects=(2, 2),
        connectivity=8,
        scene=scene,
        samples=counts,
    )


def build_id(task: str, value: str, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `svib/<task>/<value>` for any task and alpha in [0, 0.8]; else a one-line error."""
    try:
        task_rule(task)
    except UnknownNameError as error:
        raise UnknownNameError(f"study '{STUDY_PREFIX}{task}/{value}': {error}") from None
    try:
        alpha = float(value)
    except ValueError:
        alpha = math.nan
    if not 0.0 <= alpha <= ALPHA_MAX:
        raise UnknownNameError(f"study '{STUDY_PREFIX}{task}/{value}': alpha must be a number from 0 to {ALPHA_MAX} "
                               f"(the share of non-core combinations in training), got {value!r}")
    if value != str(alpha):  # one id per experiment: 0.20 and 2e-1 would name the same data twice
        raise UnknownNameError(f"study '{STUDY_PREFIX}{task}/{value}': write the alpha as {alpha} "
                               f"('{STUDY_PREFIX}{task}/{alpha}'), the one spelling of each study id")
    return build(task, alpha, counts, seed)


def _register_studies() -> None:
    """Register svib/TASK/ALPHA for the paper's tasks and alphas (`build_id` builds any other)."""
    for task, rule in TASKS.items():
        for alpha in ALPHAS:
            STUDIES.add(f"{STUDY_PREFIX}{task}/{alpha}", partial(build, task, alpha),
                        f"SVIB {task} ({rule}: {RULES.description(rule)}) at alpha {alpha}: "
                        f"{4 + n_training(alpha)} training combinations")
    ALPHA_STUDIES[STUDY_PREFIX] = build_id
    PAPER_COUNTS[STUDY_PREFIX] = (PAPER_TRAIN, PAPER_EVAL, PAPER_EVAL)


_register_studies()
