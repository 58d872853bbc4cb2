"""gCOG's splits hold their invariants: distractor counts, unseen pairings with every part seen, depths."""

from __future__ import annotations

import subprocess
import sys
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.formats import read_tasks
from vision_bench.tasks.grid import extract_objects
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.selectors import select, selector_name
from vision_bench.tasks.studies import gcog
from vision_bench.tasks.studies.builder import STUDIES
from vision_bench.tasks.studies.describe import describe_study
from vision_bench.tasks.studies.registry import get_study

PRESETS = ("gcog/distractor/10", "gcog/distractor/20", "gcog/distractor/30", "gcog/distractor/40",
           "gcog/systematic/depth1", "gcog/systematic/depth3", "gcog/productive/5", "gcog/productive/7")
ID_SPLITS = ("train", "val_id", "test_id")
OOD_SPLITS = ("val_ood", "test_ood")


def pairings(config: TaskConfig) -> set[tuple[str, tuple[str, ...]]]:
    return {(selector_name(rule.selector), sequence)
            for rule in config.rules or () for sequence in rule.sequences or ()}


def test_the_presets_are_registered_and_described() -> None:
    assert [name for name in STUDIES.names() if name.startswith("gcog/")] == list(PRESETS)
    text = describe_study("gcog/systematic/depth1")
    assert "all_of(color=2, shape=plus3) -> translate_down" in text and "val_ood, test_ood:" in text
    assert "1 selected by the rule and 40 distractors" in describe_study("gcog/distractor/40")


@pytest.mark.parametrize("level", gcog.DISTRACTOR_LEVELS)
def test_distractor_counts(level: int) -> None:
    config = get_study(f"gcog/distractor/{level}", n_train=4, n_val=2, n_test=2)
    for split in SPLITS:
        low, high = (level, level) if split in OOD_SPLITS else gcog.TRAIN_DISTRACTORS
        assert config.for_split(split).n_distractors == (low, high)
    for split, index in (("train", 0), ("train", 1), ("test_id", 0), ("test_ood", 0)):
        sample = generate_sample(config, split, index)
        objects = extract_objects(sample.input)
        selector = next(rule.selector for rule in config.rules or ()
                        if sample.task_key.startswith(selector_name(rule.selector) + ":"))
        picked = select(selector, objects)
        assert list(picked) == [record["selected"] for record in sample.objects]
        distractors = len(objects) - sum(picked)
        assert sum(picked) == 1
        assert (distractors == level) if split in OOD_SPLITS else (1 <= distractors <= 5)


def test_distractor_levels_share_their_training_data() -> None:
    configs = [get_study(f"gcog/distractor/{level}", n_train=4, n_val=2, n_test=2) for level in gcog.DISTRACTOR_LEVELS]
    for split in ID_SPLITS:
        assert len({config.for_split(split).model_dump_json(exclude={"description"}) for config in configs}) == 1
    assert generate_sample(configs[0], "train", 3) == generate_sample(configs[-1], "train", 3)


def test_systematic_pairings_are_unseen_but_every_part_is_seen() -> None:
    config = get_study("gcog/systematic/depth1", n_train=8, n_val=2, n_test=4)
    seen = pairings(config.for_split("train"))
    unseen = pairings(config.for_split("test_ood"))
    assert len(seen) == 12 and len(unseen) == 4 and not seen & unseen
    assert {selector for selector, _ in unseen} == {selector for selector, _ in seen}
    assert {sequence for _, sequence in unseen} == {sequence for _, sequence in seen}
    for split in ("val_id", "test_id"):
        assert pairings(config.for_split(split)) == seen
    assert pairings(config.for_split("val_ood")) == unseen
    for split, allowed in (("train", seen), ("test_id", seen), ("test_ood", unseen)):
        for index in range(2):
            sample = generate_sample(config, split, index)
            selector, sequence = sample.task_key.rsplit(":", 1)
            assert (selector, tuple(sequence.split("-"))) in allowed


def test_systematic_depth3_trees_are_unseen_but_every_step_and_pair_is_seen() -> None:
    """Fig. 4d: the held-out three-step sequences appear in no training rule and no training sample; the OOD
    splits hold only them; every operator is trained alone and at every position of a triple, and every ordered
    pair of neighbouring steps is trained."""
    config = get_study("gcog/systematic/depth3", n_train=30, n_val=2, n_test=12)
    seen = pairings(config.for_split("train"))
    unseen = pairings(config.for_split("test_ood"))
    assert len(seen) == 4 * (7 + 294) and len(unseen) == 4 * 49 and not seen & unseen
    for split in ("val_id", "test_id"):
        assert pairings(config.for_split(split)) == seen
    assert pairings(config.for_split("val_ood")) == unseen
    triples = {sequence for _, sequence in seen if len(sequence) == 3}
    held = {sequence for _, sequence in unseen}
    assert not triples & held and len(triples | held) == 7 ** 3
    for position in range(3):
        assert {triple[position] for triple in triples} == set(gcog.PRODUCTIVE_OPERATORS)
    for first in range(2):
        assert {triple[first:first + 2] for triple in triples} == set(product(gcog.PRODUCTIVE_OPERATORS, repeat=2))
    assert {sequence for _, sequence in seen if len(sequence) == 1} == {(op,) for op in gcog.PRODUCTIVE_OPERATORS}
    trained = [generate_sample(config, "train", index).sequence for index in range(30)]
    assert {len(sequence) for sequence in trained} == {1, 3}
    assert not {tuple(sequence) for sequence in trained} & held
    for index in range(12):
        sample = generate_sample(config, "test_ood", index)
        assert tuple(sample.sequence) in held and len(sample.task_code) == config.task_code_length == 6


@pytest.mark.parametrize("depth", gcog.PRODUCTIVE_TEST_DEPTHS)
def test_productive_depths(depth: int) -> None:
    config = get_study(f"gcog/productive/{depth}", n_train=8, n_val=2, n_test=2)
    for split in SPLITS:
        depths = {rule.depth for rule in config.for_split(split).rules or ()}
        assert depths == ({(depth, depth)} if split in OOD_SPLITS else {(1, 1), (3, 3)})
    train_depths = {len(generate_sample(config, "train", index).sequence) for index in range(8)}
    assert train_depths == {1, 3}
    for index in range(2):
        sample = generate_sample(config, "test_ood", index)
        assert len(sample.sequence) == depth
        assert set(sample.sequence) <= set(gcog.PRODUCTIVE_OPERATORS)
        assert len(sample.task_code) == config.task_code_length >= 3 + depth


@pytest.mark.slow
def test_generate_writes_a_gcog_study(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "vision_bench", "generate", "--study", "gcog/distractor/10", "--out",
               str(tmp_path), "--n-train", "4", "--n-val", "1", "--n-test", "1", "--quiet"]
    subprocess.run(command, check=True, capture_output=True, text=True)
    samples = read_tasks(tmp_path / "test_ood.parquet")
    assert len(samples) == 1 and sum(not record["selected"] for record in samples[0].objects) == 10


def test_bench_configs_condition_on_the_whole_vocabulary() -> None:
    import yaml

    from vision_bench.tasks.task_code import FULL_VOCAB_SIZE

    configs = Path(__file__).resolve().parents[1] / "configs"
    files = sorted(configs.glob("*/gcog_*.yaml"))
    assert len(files) == 9  # four splits at both scales, and gCOG's own models at paper scale
    for path in files:
        for model in yaml.safe_load(path.read_text(encoding="utf-8"))["models"]:
            conditioning = model.get("options", {}).get("task_conditioning")
            assert conditioning == FULL_VOCAB_SIZE, path.name


@pytest.mark.parametrize("study", ["gcog/productive/5", "gcog/productive/7", "gcog/distractor/10"])
def test_every_rule_sample_changes_its_grid(study: str) -> None:
    """Steps that cancel out (up then down) or a mirror of a symmetric object would let copy_input score."""
    from vision_bench.tasks.sampling import generate_split
    from vision_bench.tasks.studies import get_study

    config = get_study(study, n_train=60, n_val=1, n_test=30)
    for split in ("train", "test_ood"):
        for sample in generate_split(config, split):
            assert not np.array_equal(sample.input, sample.output), (split, sample.index, sample.sequence)
