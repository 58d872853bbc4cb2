"""CompGen (COGITAO paper 000, section 4 and appendix F): compositional generalization over transformation sequences.

`compgen/C<s>/<e>` follows COGITAO's released experiment configs (ktroyan/COGITAO at 8c4ca621edc9,
`experiment_configs/compositionality.py`): their grid sizes, object limits and exact training and
OOD sequence lists, self-repeats such as (rot90, rot90) included. Two deliberate departures, both
in docs/fidelity.md:

- C1-2, C1-3, C1-5, C2-2, C2-3 and C2-5 list one of their own held-out compositions among the
  training sequences. That composition is dropped from training here (`leaked`).
- The release pairs the evaluation splits (`paired_splits=True`): val_ood and test_ood reuse the
  input grids of val_id and test_id, and each input is scored under both sequences. The presets
  do the same (`paired_ood`).

`compgen-paper/C<s>/<e>` is the reading of the paper's text instead: the three atomic
transformations and the ordered pairs of distinct members, a 20x20 grid and objects up to 6x6.
The paper's rotate90 is `rot90` and its change_object_color is `change_shape_color`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from itertools import permutations

from vision_bench.tasks.config import SampleCounts, SplitConfig, SplitOverrides, TaskConfig
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.studies.builder import COGITAO_STUDIES, STUDIES

Sequence = tuple[str, ...]

SOURCE = "COGITAO experiment_configs/compositionality.py"
RELEASE_OBJECTS = ObjectFilter(max_height=5, max_width=5, connectivity=8)
"""is_shape_less_than_6_rows, is_shape_less_than_6_cols, is_shape_fully_connected (8-neighbour)."""
PAPER_OBJECTS = ObjectFilter(max_height=6, max_width=6, connectivity=8)


def _sequences(*written: str) -> tuple[Sequence, ...]:
    """Sequences written one per string, steps separated by spaces."""
    return tuple(tuple(text.split()) for text in written)


@dataclass(frozen=True)
class Experiment:
    """One released CompGen experiment: square grid side, training and OOD sequences as released."""

    grid: int
    released_train: tuple[Sequence, ...]
    ood: tuple[Sequence, ...]

    @property
    def leaked(self) -> tuple[Sequence, ...]:
        """Released training sequences that are also OOD sequences (a contradiction in the release)."""
        return tuple(sequence for sequence in self.released_train if sequence in self.ood)

    @property
    def train(self) -> tuple[Sequence, ...]:
        return tuple(sequence for sequence in self.released_train if sequence not in self.ood)


_OOD = {
    1: _sequences("translate_up rot90", "rot90 translate_up"),
    2: _sequences("pad_right change_shape_color", "change_shape_color pad_right"),
    3: _sequences("rot90 crop_bottom_side", "crop_bottom_side rot90"),
    4: _sequences("double_right crop_contours", "crop_contours double_right"),
    5: _sequences("pad_left extend_contours_same_color", "extend_contours_same_color pad_left"),
}
_C2_TRAIN = {
    1: _sequences("translate_up translate_up", "rot90 rot90", "mirror_horizontal mirror_horizontal",
                  "translate_up mirror_horizontal", "rot90 mirror_horizontal", "mirror_horizontal rot90"),
    2: _sequences("pad_right pad_right", "fill_holes_different_color fill_holes_different_color",
                  "change_shape_color change_shape_color", "pad_right fill_holes_different_color",
                  "fill_holes_different_color change_shape_color", "change_shape_color fill_holes_different_color",
                  "change_shape_color pad_right"),
    3: _sequences("rot90 rot90", "pad_top pad_top", "crop_bottom_side crop_bottom_side", "rot90 pad_top",
                  "pad_top crop_bottom_side", "crop_bottom_side rot90"),
    4: _sequences("double_right double_right", "crop_contours crop_contours",
                  "change_shape_color change_shape_color", "double_right change_shape_color",
                  "crop_contours change_shape_color", "change_shape_color double_right"),
    5: _sequences("extend_contours_same_color extend_contours_same_color", "pad_left pad_left",
                  "mirror_vertical mirror_vertical", "mirror_vertical pad_left", "extend_contours_same_color pad_left",
                  "extend_contours_same_color mirror_vertical"),
}
_ATOMIC = {
    1: _sequences("translate_up", "rot90", "mirror_horizontal"),
    2: _sequences("pad_right", "fill_holes_different_color", "change_shape_color"),
    3: _sequences("rot90", "pad_top", "crop_bottom_side"),
    4: _sequences("double_right", "crop_contours", "change_shape_color"),
    5: _sequences("extend_contours_same_color", "pad_left", "mirror_vertical"),
}
_C3_TRAIN = {
    1: _sequences("translate_up translate_up", "mirror_horizontal mirror_horizontal", "rot90 rot90",
                  "translate_up mirror_horizontal", "translate_up rot90", "mirror_horizontal rot90"),
    2: _sequences("pad_right pad_right", "fill_holes_different_color fill_holes_different_color",
                  "change_shape_color change_shape_color", "pad_right fill_holes_different_color",
                  "pad_right change_shape_color", "fill_holes_different_color change_shape_color"),
    3: _sequences("rot90 rot90", "pad_top pad_top", "crop_bottom_side crop_bottom_side", "rot90 pad_top",
                  "rot90 crop_bottom_side", "pad_top crop_bottom_side"),
    4: _sequences("double_right double_right", "crop_contours crop_contours", "change_shape_color change_shape_color",
                  "double_right crop_contours", "double_right change_shape_color", "crop_contours change_shape_color"),
    5: _sequences("extend_contours_same_color extend_contours_same_color", "pad_left pad_left",
                  "mirror_vertical mirror_vertical", "extend_contours_same_color pad_left",
                  "extend_contours_same_color mirror_vertical", "pad_left mirror_vertical"),
}
_C3_ATOMIC = {
    1: _sequences("translate_up", "mirror_horizontal", "rot90"),
    2: _ATOMIC[2],
    3: _ATOMIC[3],
    4: _ATOMIC[4],
    5: _sequences("extend_contours_same_color", "pad_left", "mirror_vertical"),
}
_C3_OOD = {
    1: _sequences(
        "translate_up translate_up translate_up", "translate_up translate_up mirror_horizontal",
        "translate_up translate_up rot90", "translate_up mirror_horizontal mirror_horizontal",
        "translate_up mirror_horizontal rot90", "translate_up rot90 rot90",
        "mirror_horizontal mirror_horizontal mirror_horizontal", "mirror_horizontal mirror_horizontal rot90",
        "mirror_horizontal rot90 rot90", "rot90 rot90 rot90", "translate_up mirror_horizontal translate_up",
        "translate_up rot90 translate_up", "mirror_horizontal rot90 translate_up",
        "mirror_horizontal translate_up rot90", "rot90 translate_up mirror_horizontal",
        "rot90 mirror_horizontal translate_up"),
    2: _sequences(
        "pad_right pad_right pad_right", "pad_right pad_right fill_holes_different_color",
        "pad_right pad_right change_shape_color", "pad_right fill_holes_different_color fill_holes_different_color",
        "pad_right fill_holes_different_color change_shape_color", "pad_right change_shape_color change_shape_color",
        "fill_holes_different_color fill_holes_different_color fill_holes_different_color",
        "fill_holes_different_color fill_holes_different_color change_shape_color",
        "fill_holes_different_color change_shape_color change_shape_color",
        "change_shape_color change_shape_color change_shape_color", "pad_right fill_holes_different_color pad_right",
        "pad_right change_shape_color pad_right", "fill_holes_different_color change_shape_color pad_right",
        "fill_holes_different_color pad_right change_shape_color",
        "change_shape_color pad_right fill_holes_different_color",
        "change_shape_color fill_holes_different_color pad_right"),
    3: _sequences(
        "rot90 rot90 rot90", "rot90 rot90 pad_top", "rot90 rot90 crop_bottom_side", "rot90 pad_top pad_top",
        "rot90 pad_top crop_bottom_side", "rot90 crop_bottom_side crop_bottom_side", "pad_top pad_top pad_top",
        "pad_top pad_top crop_bottom_side", "pad_top crop_bottom_side crop_bottom_side",
        "crop_bottom_side crop_bottom_side crop_bottom_side", "rot90 pad_top rot90", "rot90 crop_bottom_side rot90",
        "pad_top crop_bottom_side rot90", "pad_top rot90 crop_bottom_side", "crop_bottom_side rot90 pad_top",
        "crop_bottom_side pad_top rot90"),
    4: _sequences(
        "double_right double_right crop_contours", "double_right double_right change_shape_color",
        "double_right crop_contours crop_contours", "double_right crop_contours change_shape_color",
        "double_right change_shape_color change_shape_color", "crop_contours crop_contours change_shape_color",
        "crop_contours change_shape_color change_shape_color",
        "change_shape_color change_shape_color change_shape_color",
        "double_right crop_contours double_right", "double_right change_shape_color double_right",
        "crop_contours change_shape_color double_right", "crop_contours double_right change_shape_color",
        "change_shape_color double_right crop_contours", "change_shape_color crop_contours double_right"),
    5: _sequences(
        "extend_contours_same_color extend_contours_same_color extend_contours_same_color",
        "extend_contours_same_color extend_contours_same_color pad_left",
        "extend_contours_same_color extend_contours_same_color mirror_vertical",
        "extend_contours_same_color pad_left pad_left", "extend_contours_same_color pad_left mirror_vertical",
        "extend_contours_same_color mirror_vertical mirror_vertical", "pad_left pad_left pad_left",
        "pad_left pad_left mirror_vertical", "pad_left mirror_vertical mirror_vertical",
        "mirror_vertical mirror_vertical mirror_vertical",
        "extend_contours_same_color pad_left extend_contours_same_color",
        "extend_contours_same_color mirror_vertical extend_contours_same_color",
        "pad_left mirror_vertical extend_contours_same_color", "pad_left extend_contours_same_color mirror_vertical",
        "mirror_vertical extend_contours_same_color pad_left", "mirror_vertical pad_left extend_contours_same_color"),
}

_C1_PAIRS = {
    1: _sequences("translate_up mirror_horizontal", "rot90 mirror_horizontal", "mirror_horizontal rot90"),
    2: _sequences("pad_right fill_holes_different_color", "fill_holes_different_color change_shape_color",
                  "change_shape_color fill_holes_different_color", "change_shape_color pad_right"),
    3: _sequences("rot90 pad_top", "pad_top crop_bottom_side", "crop_bottom_side rot90"),
    4: _sequences("double_right change_shape_color", "crop_contours change_shape_color",
                  "change_shape_color double_right"),
    5: _sequences("mirror_vertical pad_left", "extend_contours_same_color pad_left",
                  "extend_contours_same_color mirror_vertical"),
}
"""C1's mixed depth-2 sequences; C1 also trains on the atomics and the first three of C2's list (the self-repeats)."""

RELEASE: dict[tuple[str, int], Experiment] = {
    **{("C1", e): Experiment(15, _ATOMIC[e] + _C2_TRAIN[e][:3] + _C1_PAIRS[e], _OOD[e]) for e in _OOD},
    **{("C2", e): Experiment(15, _C2_TRAIN[e], _OOD[e]) for e in _OOD},
    **{("C3", e): Experiment(20, _C3_ATOMIC[e] + _C3_TRAIN[e], _C3_OOD[e]) for e in _C3_OOD},
}
"""(setting, experiment) -> the released experiment, sequence lists in the release's order."""

TRANSFORMATIONS = {e: tuple(name for (name,) in _ATOMIC[e]) for e in _ATOMIC}
"""Experiment number -> its three transformations."""

SETTINGS = {
    "C1": "atomic transformations and depth-2 compositions -> held-out depth-2 compositions",
    "C2": "depth-2 compositions only -> held-out depth-2 compositions",
    "C3": "atomic transformations and depth-2 compositions -> depth-3 compositions",
}


def two_object_config(description: str, seed: int, grid: int, objects: ObjectFilter,
                      sequences: tuple[Sequence, ...], counts: SampleCounts, *, ood: tuple[Sequence, ...] = (),
                      paired_ood: bool = False) -> TaskConfig:
    """The shape of COGITAO's CompGen-style configs: two 8-connected objects on a `grid` x `grid` grid, the
    training `sequences`, and `ood` sequences for val_ood and test_ood (none: an ID-only study)."""
    ood_split = SplitConfig(sequences=ood) if ood else None
    return TaskConfig(
        description=description,
        seed=seed,
        grid_height=(grid, grid),
        grid_width=(grid, grid),
        n_objects=(2, 2),
        object_filter=(objects,),
        connectivity=8,
        sequences=sequences,
        samples=counts,
        splits=SplitOverrides(val_ood=ood_split, test_ood=ood_split),
        paired_ood=paired_ood,
    )


def release_config(setting: str, experiment: int, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `compgen/<setting>/<experiment>`, as COGITAO's release defines it."""
    released = RELEASE[setting, experiment]
    notes = [f"Source: {SOURCE}, setting {setting[1]}, experiment {experiment}"]
    if released.leaked:
        dropped = "; ".join(" -> ".join(sequence) for sequence in released.leaked)
        notes.append(f"Dropped from training because the release also holds it out for OOD: {dropped}")
    notes.append("Evaluation splits paired as in the release (paired_splits)")
    return two_object_config(
        f"CompGen {setting}-{experiment}: {', '.join(TRANSFORMATIONS[experiment])}; {SETTINGS[setting]}. "
        + ". ".join(notes),
        seed, released.grid, RELEASE_OBJECTS, released.train, counts, ood=released.ood, paired_ood=True,
    )


PAPER_HELD_OUT: dict[int, tuple[Sequence, ...]] = {
    1: _OOD[1],
    2: _sequences("change_shape_color pad_right"),
    3: _sequences("rot90 crop_bottom_side"),
    4: _sequences("double_right crop_contours"),
    5: _sequences("pad_left extend_contours_same_color"),
}
"""The paper's held-out depth-2 compositions (its appendix F)."""


def paper_sequences(setting: str, experiment: int) -> tuple[tuple[Sequence, ...], tuple[Sequence, ...]]:
    """(training, OOD) sequences of the paper-text reading: ordered sequences of distinct members only."""
    triple = TRANSFORMATIONS[experiment]
    atomic = tuple((name,) for name in triple)
    pairs = tuple(permutations(triple, 2))
    if setting == "C3":
        return atomic + pairs, tuple(permutations(triple, 3))
    kept = tuple(pair for pair in pairs if pair not in PAPER_HELD_OUT[experiment])
    return (atomic + kept if setting == "C1" else kept), PAPER_HELD_OUT[experiment]


def paper_config(setting: str, experiment: int, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `compgen-paper/<setting>/<experiment>`: the paper's wording, 20x20 grids, objects up to 6x6."""
    train, ood = paper_sequences(setting, experiment)
    return two_object_config(
        f"CompGen {setting}-{experiment}, paper-text reading: {', '.join(TRANSFORMATIONS[experiment])}; "
        f"{SETTINGS[setting]} (ordered pairs and triples of distinct transformations)",
        seed, 20, PAPER_OBJECTS, train, counts, ood=ood,
    )


def _register_studies() -> None:
    """Register compgen/C1/1 .. C3/5 and their paper-text variants compgen-paper/..."""
    COGITAO_STUDIES.extend(("compgen/", "compgen-paper/"))
    for prefix, build, label in (("compgen", release_config, ""), ("compgen-paper", paper_config, ", paper text")):
        for setting, condition in SETTINGS.items():
            for experiment, sequence in TRANSFORMATIONS.items():
                description = f"CompGen {setting}-{experiment}{label}: {', '.join(sequence)}; {condition}"
                STUDIES.add(f"{prefix}/{setting}/{experiment}", partial(build, setting, experiment), description)


_register_studies()
