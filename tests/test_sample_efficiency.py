"""The Sample-Efficiency and Experiment 0 presets against COGITAO's released configs (ktroyan/COGITAO at
8c4ca621edc9, `experiment_configs/sample_efficiency.py` and `c0.py`), whose lists are copied below."""

from __future__ import annotations

import itertools

import pytest

from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.studies import STUDIES, get_study

RELEASE_OBJECTS = ObjectFilter(max_height=5, max_width=5, connectivity=8)
"""is_shape_less_than_6_rows, is_shape_less_than_6_cols, is_shape_fully_connected."""
SAMPLE_EFFICIENCY = ["translate_up", "rot90", "mirror_horizontal", "extend_contours_different_color",
                     "empty_inside_pixels", "crop_top_side", "fill_holes_different_color", "double_up",
                     "change_shape_color", "pad_shape"]
"""`sample_efficiency_configs`: experiments 1-10 of setting 1, one `allowed_combinations` entry each."""
SIZES = {"S1": 100, "S2": 1_000, "S3": 10_000, "S4": 100_000}
"""Appendix E / Table 2 of paper 000: training samples per setting."""
SINGLE = [["translate_up"], ["translate_down"], ["translate_left"], ["translate_right"]]
DOUBLE = [
    ["translate_up", "translate_up"], ["translate_up", "translate_down"], ["translate_up", "translate_left"],
    ["translate_down", "translate_up"], ["translate_down", "translate_down"], ["translate_down", "translate_left"],
    ["translate_down", "translate_right"], ["translate_left", "translate_up"], ["translate_left", "translate_down"],
    ["translate_left", "translate_left"], ["translate_left", "translate_right"], ["translate_right", "translate_down"],
    ["translate_right", "translate_left"], ["translate_right", "translate_right"],
]
HELD_OUT = [["translate_up", "translate_right"], ["translate_right", "translate_up"]]
TRIPLES = [[a[0], b[0], c[0]] for a in SINGLE for b in SINGLE for c in SINGLE]
EXPERIMENT0 = {"C1": (SINGLE + DOUBLE, HELD_OUT), "C2": (DOUBLE, HELD_OUT), "C3": (SINGLE + DOUBLE + HELD_OUT, TRIPLES)}
"""`c0_configs`: (train, test) `allowed_combinations` of settings 1-3, as released."""


@pytest.mark.parametrize("setting", list(SIZES))
def test_sample_efficiency_presets_have_the_documented_sizes(setting: str) -> None:
    ids = [f"sample-efficiency/{setting}/{experiment}" for experiment in range(1, 11)]
    assert [name for name in STUDIES.names() if name.startswith(f"sample-efficiency/{setting}/")] == ids
    for experiment, rule in enumerate(SAMPLE_EFFICIENCY, start=1):
        config = get_study(f"sample-efficiency/{setting}/{experiment}")  # the paper's defaults: 100k asked
        assert config.count("train") == SIZES[setting]
        assert (config.count("test_id"), config.count("val_id")) == (1_000, 1_000)
        assert config.count("test_ood") == config.count("val_ood") == 0
        assert config.sequences == ((rule,),)
        assert config.grid_height == config.grid_width == (15, 15) and config.n_objects == (2, 2)
        assert config.object_filter == (RELEASE_OBJECTS,)


def test_sample_efficiency_takes_fewer_samples_when_asked_and_never_more() -> None:
    assert get_study("sample-efficiency/S3/2", n_train=32).count("train") == 32
    assert get_study("sample-efficiency/S1/2", n_train=5_000).count("train") == 100


def test_sample_efficiency_samples_apply_their_one_transformation() -> None:
    config = get_study("sample-efficiency/S1/8", n_train=100, n_val=2, n_test=2)
    for split, index in (("train", 0), ("train", 99), ("test_id", 1)):
        sample = generate_sample(config, split, index)
        assert sample.sequence == ("double_up",) and len(sample.objects) == 2


@pytest.mark.parametrize("setting", list(EXPERIMENT0))
def test_experiment0_matches_the_release(setting: str) -> None:
    train, test = EXPERIMENT0[setting]
    config = get_study(f"experiment0/{setting}/0", n_train=10, n_val=2, n_test=2)
    assert [list(sequence) for sequence in config.sequences] == train
    for split in ("val_ood", "test_ood"):
        assert [list(sequence) for sequence in config.for_split(split).sequences] == test
    assert config.for_split("test_id").sequences == config.sequences
    assert not config.paired_ood  # c0.py sets no paired_splits
    assert config.grid_height == config.grid_width == (15, 15) and config.n_objects == (2, 2)
    assert config.object_filter == (RELEASE_OBJECTS,)


@pytest.mark.parametrize("setting", list(EXPERIMENT0))
def test_experiment0_uses_translations_only_and_holds_its_ood_compositions_out(setting: str) -> None:
    config = get_study(f"experiment0/{setting}/0", n_train=12, n_val=3, n_test=3)
    translations = {"translate_up", "translate_down", "translate_left", "translate_right"}
    train = set(config.sequences)
    ood = set(config.for_split("test_ood").sequences)
    assert set(itertools.chain(*train, *ood)) <= translations
    assert not train & ood
    for index in range(12):
        assert generate_sample(config, "train", index).sequence in train
    for index in range(3):
        sample = generate_sample(config, "test_ood", index)
        assert sample.sequence in ood and sample.sequence not in train
