"""EnvGen (COGITAO paper 000, section 4 and appendix F): one fixed transformation, a changed environment OOD.

G1 varies the number of objects, G2 the grid size, G3 the object size, G4 the object complexity
(symmetric single-colored in training, asymmetric multi-colored OOD) and G5 all of them at once.
Experiment k of each uses the k-th of translate_up, rot90, mirror_horizontal, crop_top_side,
extend_contours_same_color.

Every setting follows COGITAO's released experiment configs (ktroyan/COGITAO at 8c4ca621edc9,
`experiment_configs/generalization.py`), which fill what the paper leaves open. Grid height and
width are drawn independently from the range, as COGITAO draws them, so G2 and G5 grids need not
be square. The object filters are COGITAO's conditionals: `is_shape_less_than_6_rows` is
`max_height=5`, `more_than_5_rows` is `min_height=6`, `is_shape_fully_connected` is one
8-connected piece, `is_shape_evenly_colored` one color and `is_shape_symmetric` COGITAO's own
symmetry (`cogitao_symmetric`). G4 sets no size limit; COGITAO's object library stops at 14x14,
and so does the preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.studies.builder import COGITAO_STUDIES, STUDIES

RULES = ("translate_up", "rot90", "mirror_horizontal", "crop_top_side", "extend_contours_same_color")
SOURCE = "COGITAO experiment_configs/generalization.py"
LIBRARY_SIDE = 14
"""The largest object side in COGITAO's object library (create_objects.py draws 1..14 rows and columns)."""

UP_TO_5 = ObjectFilter(max_height=5, max_width=5, connectivity=8)
UP_TO_4 = ObjectFilter(max_height=4, max_width=4, connectivity=8)
FROM_6_TO_8 = ObjectFilter(min_height=6, max_height=8, min_width=6, max_width=8, connectivity=8)
SIMPLE = ObjectFilter(max_height=LIBRARY_SIDE, max_width=LIBRARY_SIDE, connectivity=8, cogitao_symmetric=True,
                      n_colors=1)
COMPLEX = ObjectFilter(max_height=LIBRARY_SIDE, max_width=LIBRARY_SIDE, connectivity=8, cogitao_symmetric=False,
                       min_colors=2)
SIMPLE_UP_TO_4 = ObjectFilter(max_height=4, max_width=4, connectivity=8, cogitao_symmetric=True, n_colors=1)
COMPLEX_6_TO_8 = ObjectFilter(min_height=6, max_height=8, min_width=6, max_width=8, connectivity=8,
                              cogitao_symmetric=False, min_colors=2)


@dataclass(frozen=True)
class Environment:
    """Grid side range (height and width drawn independently), object count range and object filter."""

    grid: tuple[int, int]
    n_objects: tuple[int, int]
    objects: ObjectFilter

    def summary(self) -> str:
        low, high = self.grid
        grid = f"{low}x{low}" if low == high else f"{low}-{high} a side"
        count = f"{self.n_objects[0]}" if self.n_objects[0] == self.n_objects[1] else "{}-{}".format(*self.n_objects)
        return f"{count} objects, grid {grid}"


@dataclass(frozen=True)
class Setting:
    """One EnvGen setting: what it varies, and the training and OOD environments of each experiment."""

    varies: str
    train: Environment
    ood: Environment
    exceptions: tuple[tuple[int, Environment, Environment], ...] = ()
    """Experiments whose environments differ from the others', as (experiment, train, ood)."""

    def environments(self, experiment: int) -> tuple[Environment, Environment]:
        for number, train, ood in self.exceptions:
            if number == experiment:
                return train, ood
        return self.train, self.ood


SETTINGS: dict[str, Setting] = {
    "G1": Setting("number of objects: 1-2 -> 3-4",
                  Environment((15, 15), (1, 2), UP_TO_5), Environment((15, 15), (3, 4), UP_TO_5)),
    "G2": Setting("grid size: 10-15 -> 16-20 cells a side",
                  Environment((10, 15), (2, 2), UP_TO_5), Environment((16, 20), (2, 2), UP_TO_5)),
    "G3": Setting("object size: up to 4x4 -> 6x6 to 8x8",
                  Environment((15, 15), (2, 2), UP_TO_4), Environment((15, 15), (2, 2), FROM_6_TO_8),
                  exceptions=((5, Environment((15, 20), (2, 2), UP_TO_4),
                               Environment((15, 20), (2, 2), FROM_6_TO_8)),)),
    "G4": Setting("object complexity: symmetric single-colored -> asymmetric multi-colored",
                  Environment((15, 15), (2, 2), SIMPLE), Environment((15, 15), (2, 2), COMPLEX)),
    "G5": Setting("all combined: simple, up to 4x4, 1-2 objects, grid 10-15 -> complex, 6x6 to 8x8, "
                  "3-4 objects, grid 16-20",
                  Environment((10, 15), (1, 2), SIMPLE_UP_TO_4), Environment((16, 20), (3, 4), COMPLEX_6_TO_8),
                  exceptions=((5, Environment((10, 15), (1, 2), SIMPLE_UP_TO_4),
                               Environment((17, 20), (3, 3), COMPLEX_6_TO_8)),)),
}
"""Setting -> its environments, as COGITAO's release defines them."""


def build(setting: str, experiment: int, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `envgen/<setting>/<experiment>`."""
    train, ood = SETTINGS[setting].environments(experiment)
    override: dict[str, object] = {}
    if ood.grid != train.grid:
        override.update(grid_height=ood.grid, grid_width=ood.grid)
    if ood.n_objects != train.n_objects:
        override["n_objects"] = ood.n_objects
    if ood.objects != train.objects:
        override["object_filter"] = (ood.objects,)
    ood_split = SplitConfig(**override)
    rule = RULES[experiment - 1]
    return TaskConfig(
        description=f"EnvGen {setting}-{experiment} ({rule}): {SETTINGS[setting].varies}; "
                    f"train {train.summary()}, OOD {ood.summary()}. Source: {SOURCE}, setting {setting[1]}, "
                    f"experiment {experiment}",
        seed=seed,
        grid_height=train.grid,
        grid_width=train.grid,
        n_objects=train.n_objects,
        object_filter=(train.objects,),
        connectivity=8,
        sequences=((rule,),),
        samples=counts,
        splits=SplitOverrides(val_ood=ood_split, test_ood=ood_split),
    )


def _register_studies() -> None:
    """Register envgen/G1/1 .. G5/5."""
    COGITAO_STUDIES.append("envgen/")
    for setting, entry in SETTINGS.items():
        for experiment in range(1, len(RULES) + 1):
            STUDIES.add(f"envgen/{setting}/{experiment}", partial(build, setting, experiment),
                        f"EnvGen {setting}-{experiment} ({RULES[experiment - 1]}): {entry.varies}")


_register_studies()
