"""Sample-Efficiency (COGITAO paper 000, appendix E, Table 2): how many samples a model needs to learn one
atomic transformation.

`sample-efficiency/S<x>/<i>` follows COGITAO's released config (ktroyan/COGITAO at 8c4ca621edc9,
`experiment_configs/sample_efficiency.py`): one transformation per experiment, the proxy of its
family (experiment i = the i-th of `FAMILIES`), a 15x15 grid, two objects smaller than 6x6 and in
one 8-connected piece. The setting fixes the number of distinct training samples: S1 100, S2 1,000,
S3 10,000, S4 100,000. The study is in distribution only: the release and the paper test on 1,000
unseen samples of the same transformation and environment, so the OOD splits are empty.
"""

from __future__ import annotations

from functools import partial

from vision_bench.tasks.config import SampleCounts, TaskConfig
from vision_bench.tasks.studies.builder import COGITAO_STUDIES, STUDIES
from vision_bench.tasks.studies.compgen import RELEASE_OBJECTS, two_object_config

SOURCE = "COGITAO experiment_configs/sample_efficiency.py"
GRID = 15
SIZES = {"S1": 100, "S2": 1_000, "S3": 10_000, "S4": 100_000}
"""Setting -> its number of training samples (appendix E)."""
FAMILIES = (
    ("translate", "translate_up"),
    ("rotate", "rot90"),
    ("mirror", "mirror_horizontal"),
    ("extend", "extend_contours_different_color"),
    ("empty", "empty_inside_pixels"),
    ("crop", "crop_top_side"),
    ("fill", "fill_holes_different_color"),
    ("duplicate", "double_up"),
    ("change_color", "change_shape_color"),
    ("pad", "pad_shape"),
)
"""(family, its proxy transformation) for experiments 1-10, in the release's order."""


def build(setting: str, experiment: int, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `sample-efficiency/<setting>/<experiment>`.

    Training takes the setting's size, or fewer samples when `counts.train` asks for fewer (a smoke
    run); the validation and test counts are the caller's; the OOD splits are empty.
    """
    family, rule = FAMILIES[experiment - 1]
    size = SIZES[setting]
    samples = SampleCounts(train=min(size, counts.train), val_id=counts.val_id, val_ood=0, test_id=counts.test_id,
                           test_ood=0)
    return two_object_config(
        f"Sample-Efficiency {setting}-{experiment} ({family}: {rule}): {size:,} training samples, "
        f"tested in distribution. Source: {SOURCE}, experiment {experiment}",
        seed, GRID, RELEASE_OBJECTS, ((rule,),), samples,
    )


def _register_studies() -> None:
    """Register sample-efficiency/S1/1 .. S4/10."""
    COGITAO_STUDIES.append("sample-efficiency/")
    for setting, size in SIZES.items():
        for experiment, (family, rule) in enumerate(FAMILIES, start=1):
            description = f"Sample-Efficiency {setting}-{experiment} ({family}: {rule}): {size:,} training samples"
            STUDIES.add(f"sample-efficiency/{setting}/{experiment}", partial(build, setting, experiment),
                        description + ", ID only")


_register_studies()
