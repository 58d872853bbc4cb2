"""Experiment 0 (COGITAO paper 000, appendix H, Table 3): CompGen's settings with translations only.

`experiment0/C<s>/0` follows COGITAO's released config (ktroyan/COGITAO at 8c4ca621edc9,
`experiment_configs/c0.py`): a 15x15 grid, two objects smaller than 6x6 in one 8-connected piece,
and compositions of translate_up / down / left / right. The held-out pair is (translate_up,
translate_right) and its reverse:

- C1 trains on the four translations and the 14 other ordered pairs, and tests on the held-out pair;
- C2 trains on the 14 pairs only, and tests on the held-out pair;
- C3 trains on the four translations, the 14 pairs and then the held-out two (all 16 pairs; the
  release's `single_ops + double_ops + held_out`), and tests on the 64 ordered triples.

The paper reports C1 and C3 (Table 3); the release also defines C2, so it is here too. As for the
CompGen presets, the sequences of each list are the release's, in its order.
"""

from __future__ import annotations

from functools import partial

from vision_bench.tasks.config import SampleCounts, TaskConfig
from vision_bench.tasks.studies.builder import COGITAO_STUDIES, STUDIES
from vision_bench.tasks.studies.compgen import RELEASE_OBJECTS, two_object_config

Sequence = tuple[str, ...]

SOURCE = "COGITAO experiment_configs/c0.py"
GRID = 15
TRANSLATIONS = ("translate_up", "translate_down", "translate_left", "translate_right")
HELD_OUT: tuple[Sequence, ...] = (("translate_up", "translate_right"), ("translate_right", "translate_up"))
SINGLES: tuple[Sequence, ...] = tuple((name,) for name in TRANSLATIONS)
PAIRS: tuple[Sequence, ...] = tuple((a, b) for a in TRANSLATIONS for b in TRANSLATIONS if (a, b) not in HELD_OUT)
"""The release's 14 `double_ops`: every ordered pair but the held-out two, in its order."""
TRIPLES: tuple[Sequence, ...] = tuple((a, b, c) for a in TRANSLATIONS for b in TRANSLATIONS for c in TRANSLATIONS)

SETTINGS: dict[str, tuple[str, tuple[Sequence, ...], tuple[Sequence, ...]]] = {
    "C1": ("translations and depth-2 compositions -> the held-out depth-2 compositions", SINGLES + PAIRS, HELD_OUT),
    "C2": ("depth-2 compositions only -> the held-out depth-2 compositions", PAIRS, HELD_OUT),
    "C3": ("translations and every depth-2 composition -> depth-3 compositions", SINGLES + PAIRS + HELD_OUT,
           TRIPLES),
}
"""Setting -> (what it tests, training sequences, OOD sequences), as the release lists them."""


def build(setting: str, counts: SampleCounts, seed: int) -> TaskConfig:
    """The config of `experiment0/<setting>/0`."""
    condition, train, ood = SETTINGS[setting]
    return two_object_config(
        f"Experiment 0, CompGen {setting} with translations only: {condition}. Source: {SOURCE}, setting {setting[1]}",
        seed, GRID, RELEASE_OBJECTS, train, counts, ood=ood,
    )


def _register_studies() -> None:
    """Register experiment0/C1/0, C2/0 and C3/0."""
    COGITAO_STUDIES.append("experiment0/")
    for setting, (condition, _, _) in SETTINGS.items():
        STUDIES.add(f"experiment0/{setting}/0", partial(build, setting), f"Experiment 0, {setting}: {condition}")


_register_studies()
