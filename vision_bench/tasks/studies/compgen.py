"""CompGen (COGITAO paper 000, appendix F): compositional generalization over transformation sequences.

Five transformation triples; in each, some depth-2 compositions are held out for OOD testing.
C1 trains on the three atomic transformations and their depth-2 compositions, C2 on the
compositions only (both test OOD on the held-out compositions), and C3 trains on atomics and all
depth-2 compositions and tests OOD on every depth-3 composition. "Compositions" of a triple are
ordered sequences of distinct members (six of depth 2, six of depth 3). The paper's rotate90 /
rotate_90 is `rot90` and its change_object_color is `change_shape_color`.

Environment: 2 objects, a 20x20 grid, objects at most 6x6, every object one 8-connected piece.
"""

from __future__ import annotations

from itertools import permutations

from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig
from vision_bench.tasks.objects import ObjectFilter

Sequence = tuple[str, ...]

TRIPLES: dict[int, tuple[tuple[str, str, str], tuple[Sequence, ...]]] = {
    1: (("translate_up", "rot90", "mirror_horizontal"), (("translate_up", "rot90"), ("rot90", "translate_up"))),
    2: (("change_shape_color", "pad_right", "fill_holes_different_color"), (("change_shape_color", "pad_right"),)),
    3: (("crop_bottom_side", "rot90", "pad_top"), (("rot90", "crop_bottom_side"),)),
    4: (("double_right", "crop_contours", "change_shape_color"), (("double_right", "crop_contours"),)),
    5: (("extend_contours_same_color", "mirror_vertical", "pad_left"), (("pad_left", "extend_contours_same_color"),)),
}
"""Experiment number -> (the three transformations, the held-out depth-2 compositions)."""

SETTINGS = {
    "C1": "atomic transformations and depth-2 compositions -> held-out depth-2 compositions",
    "C2": "depth-2 compositions only -> held-out depth-2 compositions",
    "C3": "atomic transformations and all depth-2 compositions -> all depth-3 compositions",
}


def sequences(setting: str, experiment: int) -> tuple[tuple[Sequence, ...], tuple[Sequence, ...]]:
    """(training sequences, OOD sequences) of one CompGen experiment."""
    triple, held_out = TRIPLES[experiment]
    atomic = tuple((name,) for name in triple)
    pairs = tuple(permutations(triple, 2))
    if setting == "C3":
        return atomic + pairs, tuple(permutations(triple, 3))
    kept = tuple(pair for pair in pairs if pair not in held_out)
    return (atomic + kept if setting == "C1" else kept), held_out


def build(setting: str, experiment: int, counts: SampleCounts, seed: int) -> TaskConfig:
    train, ood = sequences(setting, experiment)
    ood_split = SplitConfig(sequences=ood)
    return TaskConfig(
        description=f"CompGen {setting}-{experiment}: {', '.join(TRIPLES[experiment][0])}; {SETTINGS[setting]}",
        seed=seed,
        grid_height=(20, 20),
        grid_width=(20, 20),
        n_objects=(2, 2),
        object_filter=(ObjectFilter(max_height=6, max_width=6, connectivity=8),),
        connectivity=8,
        sequences=train,
        samples=counts,
        splits=SplitOverrides(val_ood=ood_split, test_ood=ood_split),
    )


def entries() -> list[tuple[str, str, tuple[str, int]]]:
    """(study id, one-line description, build arguments) for C1-1 .. C3-5."""
    return [
        (f"compgen/{setting}/{experiment}", f"CompGen {setting}-{experiment}: {', '.join(TRIPLES[experiment][0])}; "
         f"{SETTINGS[setting]}", (setting, experiment))
        for setting in SETTINGS
        for experiment in TRIPLES
    ]
