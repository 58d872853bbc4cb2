"""EnvGen (COGITAO paper 000, appendix F): one fixed transformation, a changed environment out of distribution.

G1 varies the number of objects, G2 the grid size, G3 the object size, G4 the object complexity
(symmetric single-colored in training, asymmetric multi-colored OOD) and G5 all of them at once.
Experiment k of each uses the k-th of translate_up, rot90, mirror_horizontal, crop_top_side,
extend_contours_same_color. Grids are square. Where the paper leaves a setting open, this module
fixes it: objects at most 5x5 (the paper's "smaller than 6x6") in G1, G2 and G4, and a 20x20 grid
with 2 objects in G3.
"""

from __future__ import annotations

from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig
from vision_bench.tasks.objects import ObjectFilter

RULES = ("translate_up", "rot90", "mirror_horizontal", "crop_top_side", "extend_contours_same_color")

SMALL = ObjectFilter(max_height=5, max_width=5)
LARGE = ObjectFilter(min_height=6, max_height=10, min_width=6, max_width=10)
SIMPLE_SMALL = ObjectFilter(max_height=5, max_width=5, symmetric=True, n_colors=1)
COMPLEX_SMALL = ObjectFilter(max_height=5, max_width=5, symmetric=False, min_colors=2)
COMPLEX_LARGE = ObjectFilter(min_height=6, max_height=10, min_width=6, max_width=10, symmetric=False, min_colors=2)

Environment = dict[str, object]

SETTINGS: dict[str, tuple[str, Environment, Environment]] = {
    "G1": ("number of objects: 1-2 -> 3-4 objects in a 15x15 grid",
           {"grid": (15, 15), "n_objects": (1, 2), "object_filter": SMALL},
           {"n_objects": (3, 4)}),
    "G2": ("grid size: 10x10-15x15 -> 16x16-20x20, 2 objects",
           {"grid": (10, 15), "n_objects": (2, 2), "object_filter": SMALL},
           {"grid": (16, 20)}),
    "G3": ("object size: 1x1-5x5 -> 6x6-10x10, 2 objects in a 20x20 grid",
           {"grid": (20, 20), "n_objects": (2, 2), "object_filter": SMALL},
           {"object_filter": LARGE}),
    "G4": ("object complexity: symmetric single-colored -> asymmetric multi-colored, 2 objects, 15x15",
           {"grid": (15, 15), "n_objects": (2, 2), "object_filter": SIMPLE_SMALL},
           {"object_filter": COMPLEX_SMALL}),
    "G5": ("all combined: simple 1x1-5x5, 1-2 objects, 10-15 grid -> complex 6x6-10x10, 3-4 objects, 16-20 grid",
           {"grid": (10, 15), "n_objects": (1, 2), "object_filter": SIMPLE_SMALL},
           {"grid": (16, 20), "n_objects": (3, 4), "object_filter": COMPLEX_LARGE}),
}
"""Setting -> (description, in-distribution environment, what changes out of distribution)."""


def build(setting: str, experiment: int, counts: SampleCounts, seed: int) -> TaskConfig:
    description, base, ood = SETTINGS[setting]
    grid = base["grid"]
    override: dict[str, object] = {}
    if "grid" in ood:
        override.update(grid_height=ood["grid"], grid_width=ood["grid"])
    if "n_objects" in ood:
        override["n_objects"] = ood["n_objects"]
    if "object_filter" in ood:
        override["object_filter"] = (ood["object_filter"],)
    ood_split = SplitConfig(**override)
    rule = RULES[experiment - 1]
    return TaskConfig(
        description=f"EnvGen {setting}-{experiment} ({rule}): {description}",
        seed=seed,
        grid_height=grid,
        grid_width=grid,
        square_grid=True,
        n_objects=base["n_objects"],
        object_filter=(base["object_filter"],),
        connectivity=8,
        sequences=((rule,),),
        samples=counts,
        splits=SplitOverrides(val_ood=ood_split, test_ood=ood_split),
    )


def entries() -> list[tuple[str, str, tuple[str, int]]]:
    """(study id, one-line description, build arguments) for G1-1 .. G5-5."""
    return [
        (f"envgen/{setting}/{experiment}", f"EnvGen {setting}-{experiment} ({RULES[experiment - 1]}): {description}",
         (setting, experiment))
        for setting, (description, _, _) in SETTINGS.items()
        for experiment in range(1, len(RULES) + 1)
    ]
