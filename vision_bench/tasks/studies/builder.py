"""`Builder`: what every study preset registers, a function from sample counts and seed to its
`TaskConfig`; `STUDIES`: the registry of them; `ALPHA_STUDIES`: the families of `<prefix><task>/<alpha>`
ids built for any alpha, beyond the registered ones; `PAPER_COUNTS`: a family's paper-scale counts."""

from __future__ import annotations

import re
from collections.abc import Callable

from vision_bench.registry import Registry
from vision_bench.tasks.config import SampleCounts, TaskConfig

Builder = Callable[[SampleCounts, int], TaskConfig]
IdBuilder = Callable[[str, str, SampleCounts, int], TaskConfig]
"""A builder of any id `<prefix><task>/<alpha>` of one family: (task, alpha as written, counts, seed) -> its config,
or a one-line error naming what is wrong."""

STUDIES: Registry[Builder] = Registry("study")
"""Every preset by id; the study modules add theirs when imported (`studies.registry` imports them)."""

ALPHA_STUDIES: dict[str, IdBuilder] = {}
"""Id prefix (`alpha/`, `svib/`) -> the builder of any `<prefix><task>/<alpha>` id (`get_study` asks it for an id
that is not registered); each family's module adds its own."""

COGITAO_STUDIES: list[str] = []
"""Id prefixes of the studies of COGITAO's paper itself (paper 000: CompGen, EnvGen, Sample-Efficiency, Experiment 0),
as against the studies built here on its generator (`alpha/`, `worldmodel/`) and the other papers' (SVIB, gCOG,
C-ARC); each such module adds its own. The bench report names the paper's checkpoint choice for these alone."""

PAPER_COUNTS: dict[str, tuple[int, int, int]] = {}
"""Id prefix -> (train, per validation split, per test split) of its studies at paper scale, where they are not
COGITAO's (`studies.registry.PAPER_TRAIN`, `PAPER_EVAL`); each family's module adds its own."""

_ALPHA_ID = re.compile(r"^(?P<prefix>[^/]+/).+/(?P<alpha>\d+(?:\.\d+)?)$")


def alpha_of(study_id: str) -> float | None:
    """The alpha of an alpha study id (`alpha/translate_up/0.2`, `svib/S-A/0.2` -> 0.2), else None: how bench
    configs accept any alpha and reports read a sweep."""
    match = _ALPHA_ID.match(study_id)
    return float(match["alpha"]) if match and match["prefix"] in ALPHA_STUDIES else None
