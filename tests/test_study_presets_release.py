"""The CompGen and EnvGen presets against COGITAO's released experiment configs (a dump, see
tests/fixtures_cogitao/dump_experiment_configs.py): grids, object counts, object filters, exact
sequence lists and pairing; the only differences are the documented leaks dropped from training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vision_bench.cli import main
from vision_bench.errors import ConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.properties import cogitao_symmetric, object_properties
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.studies import get_study
from vision_bench.tasks.studies.compgen import RELEASE
from vision_bench.tasks.studies.envgen import LIBRARY_SIDE
from vision_bench.tasks.transformations import apply_sequence

RELEASE_DUMP = json.loads((Path(__file__).parent / "data" / "cogitao_experiment_configs.json").read_text())
CONDITIONALS = {
    "is_shape_less_than_6_rows": {"max_height": 5},
    "is_shape_less_than_6_cols": {"max_width": 5},
    "is_shape_less_than_5_rows": {"max_height": 4},
    "is_shape_less_than_5_cols": {"max_width": 4},
    "is_shape_less_than_9_rows": {"max_height": 8},
    "is_shape_less_than_9_cols": {"max_width": 8},
    "is_shape_more_than_5_rows": {"min_height": 6},
    "is_shape_more_than_5_cols": {"min_width": 6},
    "is_shape_fully_connected": {"connectivity": 8},
    "is_shape_symmetric": {"cogitao_symmetric": True},
    "is_shape_not_symmetric": {"cogitao_symmetric": False},
    "is_shape_evenly_colored": {"n_colors": 1},
    "is_shape_not_evenly_colored": {"min_colors": 2},
}
"""COGITAO's conditionals (arcworld/conditionals/single_shape_conditionals.py) as object filter settings."""
LEAKS = {("compgen", setting, experiment) for setting in (1, 2) for experiment in (2, 3, 5)}
"""Experiments whose released training list holds one of their own OOD compositions."""


def _entries() -> list[tuple[str, dict, dict]]:
    """(study family, train entry, test entry) for every released experiment."""
    pairs = []
    for family, rows in RELEASE_DUMP.items():
        tests = {(row["setting"], row["experiment"]): row for row in rows if row["split"] == "test"}
        pairs += [(family, row, tests[row["setting"], row["experiment"]]) for row in rows if row["split"] == "train"]
    return pairs


def _study_id(family: str, entry: dict) -> str:
    setting = ("C" if family == "compgen" else "G") + str(entry["setting"])
    return f"{family}/{setting}/{entry['experiment']}"


def _expected_filter(conditionals: list[str]) -> ObjectFilter:
    settings: dict[str, object] = {"max_height": LIBRARY_SIDE, "max_width": LIBRARY_SIDE}
    for name in conditionals:
        settings.update(CONDITIONALS[name])
    return ObjectFilter(**settings)


@pytest.mark.parametrize(("family", "train", "test"), _entries(), ids=lambda value: value if isinstance(value, str)
                         else f"{value['setting']}-{value['experiment']}-{value['split']}")
def test_preset_matches_the_release(family: str, train: dict, test: dict) -> None:
    config = get_study(_study_id(family, train), n_train=10, n_val=2, n_test=2)
    leaked = [sequence for sequence in train["sequences"] if family == "compgen" and sequence in test["sequences"]]
    assert bool(leaked) == ((family, train["setting"], train["experiment"]) in LEAKS)
    for split, entry, sequences in (("train", train, [s for s in train["sequences"] if s not in leaked]),
                                    ("val_id", train, None), ("test_ood", test, test["sequences"])):
        resolved = config.for_split(split)
        assert resolved.grid_height == resolved.grid_width == tuple(entry["grid"])
        assert not resolved.square_grid
        assert resolved.n_objects == tuple(entry["n_objects"])
        assert resolved.object_filter == (_expected_filter(entry["conditionals"]),)
        assert resolved.connectivity == 8
        if sequences is not None:
            assert [list(sequence) for sequence in resolved.sequences] == sequences
    assert config.for_split("val_id").sequences == config.sequences
    assert config.for_split("val_ood").sequences == config.for_split("test_ood").sequences
    assert config.paired_ood == train["paired_splits"]


def test_every_released_experiment_has_a_preset() -> None:
    assert len(_entries()) == 15 + 25
    assert sorted(RELEASE) == sorted((f"C{row['setting']}", row["experiment"])
                                     for row in RELEASE_DUMP["compgen"] if row["split"] == "train")


def test_describe_shows_the_release_lists_without_the_leak(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studies", "--describe", "compgen/C1/2"]) == 0
    text = capsys.readouterr().out
    training = text.split("val_ood, test_ood:")[0]
    assert "sequences (9):" in training and "change_shape_color -> pad_right" not in training.split("sequences")[-1]
    assert "Dropped from training because the release also holds it out for OOD: change_shape_color -> pad_right" \
        in " ".join(text.split())
    assert "paired: val_ood and test_ood reuse the input grids of val_id and test_id" in text
    assert text.split("val_ood, test_ood:")[1].count("->") == 2


def test_describe_an_unknown_study_fails_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studies", "--describe", "compgen/C9/1"]) == 2
    assert "did you mean 'compgen/C3/1'" in capsys.readouterr().err


def test_describe_and_a_prefix_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studies", "compgen", "--describe", "compgen/C1/1"]) == 2
    assert "not both" in capsys.readouterr().err


@pytest.mark.parametrize("study_id", ["compgen/C1/3", "compgen/C3/4"])
def test_paired_splits_share_inputs_and_apply_an_ood_sequence(study_id: str) -> None:
    config = get_study(study_id, n_train=4, n_val=6, n_test=6)
    for id_split, ood_split in (("val_id", "val_ood"), ("test_id", "test_ood")):
        for index in range(6):
            id_sample, ood_sample = generate_sample(config, id_split, index), generate_sample(config, ood_split, index)
            assert np.array_equal(id_sample.input, ood_sample.input)
            assert id_sample.sequence in config.sequences
            assert ood_sample.sequence in config.for_split(ood_split).sequences
            assert (ood_sample.split, ood_sample.index) == (ood_split, index)
            assert np.array_equal(ood_sample.output, apply_sequence(ood_sample.input, ood_sample.sequence))
            assert [meta["bbox"] for meta in ood_sample.objects] == [meta["bbox"] for meta in id_sample.objects]
    # an ID sample that pairs at the first attempt is the unpaired one
    unpaired = config.model_copy(update={"paired_ood": False})
    assert sum(generate_sample(config, "val_id", i) == generate_sample(unpaired, "val_id", i) for i in range(6)) >= 1


def test_paired_splits_need_equal_counts() -> None:
    config = get_study("compgen/C1/1", n_train=10, n_val=2, n_test=2)
    with pytest.raises(ConfigError, match="paired_ood: sample i of val_ood reuses the input of sample i of val_id"):
        TaskConfig.from_dict({**config.to_dict(), "samples": {"train": 10, "val_id": 2, "val_ood": 3}})
    with pytest.raises(ConfigError, match="test_ood shares the input grids of test_id, so it may change only"):
        TaskConfig.from_dict({**config.to_dict(), "splits": {"test_ood": {"n_objects": 3}}})


def test_paper_text_variant_keeps_distinct_members_only() -> None:
    config = get_study("compgen-paper/C1/1", n_train=10, n_val=2, n_test=2)
    assert all(len(set(sequence)) == len(sequence) for sequence in config.sequences)
    assert config.grid_height == (20, 20) and config.object_filter[0].max_height == 6
    assert len(get_study("compgen-paper/C3/1", 10, 2, 2).for_split("test_ood").sequences) == 6


@pytest.mark.parametrize(("pixels", "expected"), [
    ([[1, 2, 3], [4, 5, 6]], True),     # full footprint mirrors onto itself, colors ignored
    ([[1, 1, 0], [0, 1, 1]], False),    # point symmetric only: COGITAO has no point symmetry
    ([[1, 0], [1, 1]], True),           # anti-diagonal: equal to its anti-transpose
    ([[1, 2], [2, 3]], True),           # full footprint: a mirror of the footprint
    ([[1, 0, 0], [2, 3, 0], [4, 5, 6]], False),  # footprint anti-diagonal, colors not: diagonals read colors
    ([[1, 0, 0], [1, 1, 0], [1, 1, 1]], True),   # the same footprint in one color
])
def test_cogitao_symmetry_by_hand(pixels: list[list[int]], expected: bool) -> None:
    array = np.array(pixels, dtype=np.uint8)
    assert cogitao_symmetric(array) is expected
    assert object_properties(array).cogitao_symmetric is expected
