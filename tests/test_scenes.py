"""SVIB's scenes (`vision_bench.tasks.scenes`, the `scenes` family, `svib/...` studies): every rule against the
outputs of SVIB's own `apply_rule`, the combination splits, the sampler's placement and records, configs, studies,
exports with masks, and bad input on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from cli_errors import cli_error

from render.codec import load
from render.spec import RenderSpec
from vision_bench.bench.config import resolve_experiments
from vision_bench.cli import main
from vision_bench.data import open_dataset
from vision_bench.data.export_formats import open_export
from vision_bench.data.masks import label_grids, mask_image
from vision_bench.data.sources import render_seed
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.families import FAMILIES, family_of, study_family
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.scenes.factors import COLOURS, FACTOR_METRICS, SceneObject, draw, read_objects, scene_objects
from vision_bench.tasks.scenes.placement import min_grid_size
from vision_bench.tasks.scenes.rules import RULES, TASKS, check_rule_name
from vision_bench.tasks.scenes.spec import SceneSpec
from vision_bench.tasks.scenes.splits import ALPHA_MAX, combination_splits, n_training
from vision_bench.tasks.studies import STUDIES, get_study
from vision_bench.tasks.studies.builder import alpha_of
from vision_bench.tasks.studies.describe import describe_study

GRID, MOTION = 32, 4

# SVIB's test scene (docs: svib spec section 2.3): object 0 = (colour 0, shape 1, size 2) at (x, y) = (0.3, 0.7),
# quadrant 2; object 1 = (colour 3, shape 2, size 1) at (0.8, 0.2), quadrant 4. In the grid: x >= 0.5 is the right
# half, y >= 0.5 the top half.
SCENE = (SceneObject(0, 1, 2, top=6, left=6), SceneObject(3, 2, 1, top=20, left=22))
RIGHT, UP, LEFT = (0, MOTION), (-MOTION, 0), (0, -MOTION)
STAY = (0, 0)
# SVIB's apply_rule on that scene, per object: (colour, shape, size) and the move (SVIB: CP +0.3 in x; NCP moves
# object 0 by object 1's size 1, up, and object 1 by object 0's size 2, left).
EXPECTED = {
    "None": [((0, 1, 2), STAY), ((3, 2, 1), STAY)],
    "CP": [((0, 1, 2), RIGHT), ((3, 2, 1), RIGHT)],
    "ShAC": [((1, 1, 2), STAY), ((2, 2, 1), STAY)],
    "ShAASh": [((0, 2, 2), STAY), ((3, 1, 1), STAY)],
    "CAASi": [((0, 1, 3), STAY), ((3, 2, 0), STAY)],
    "MIntra": [((1, 1, 2), RIGHT), ((2, 2, 1), RIGHT)],
    "MMix2": [((1, 1, 3), STAY), ((2, 2, 0), STAY)],
    "MMix1": [((0, 2, 2), RIGHT), ((3, 1, 1), RIGHT)],
    "MInter": [((0, 2, 3), STAY), ((3, 1, 0), STAY)],
    "NCP": [((0, 1, 2), UP), ((3, 2, 1), LEFT)],
    "NShAC": [((0, 3, 2), STAY), ((3, 3, 1), STAY)],
    "NCAASi": [((0, 1, 3), STAY), ((3, 2, 2), STAY)],
    "MNIntra": [((3, 1, 2), UP), ((2, 2, 1), LEFT)],
    "MNMix2": [((3, 1, 3), STAY), ((2, 2, 2), STAY)],
    "MNMix1": [((0, 3, 2), UP), ((3, 3, 1), LEFT)],
    "MNInter": [((0, 3, 3), STAY), ((3, 3, 2), STAY)],
}


# --- rules -----------------------------------------------------------------------------------------------------


def test_the_test_scene_is_svibs() -> None:
    assert [obj.quadrant(GRID) for obj in SCENE] == [2, 4]
    (x0, y0), (x1, y1) = (obj.position(GRID) for obj in SCENE)
    assert x0 < 0.5 <= y0 and y1 < 0.5 <= x1


@pytest.mark.parametrize("rule", list(EXPECTED))
def test_each_rule_gives_svibs_output(rule: str) -> None:
    after = RULES[rule].apply(SCENE, GRID, MOTION)
    for before, obj, (factors, (rows, cols)) in zip(SCENE, after, EXPECTED[rule]):
        assert obj.combination == factors
        assert (obj.top, obj.left) == (before.top + rows, before.left + cols)
    assert RULES[rule].moves == any(move != STAY for _, move in EXPECTED[rule])


def test_every_code_rule_is_registered_and_nshaash_is_refused_with_the_way_out() -> None:
    assert RULES.names() == list(EXPECTED)
    assert TASKS == {"S-A": "ShAASh", "S-NA": "NShAC", "M-A": "MMix2", "M-NA": "MNMix2"}
    with pytest.raises(UnknownNameError, match="NShAASh has no branch.*use NShAC.*or None"):
        check_rule_name("NShAASh")
    with pytest.raises(UnknownNameError, match="unknown scene rule 'MMix3'; did you mean 'MMix2', 'MMix1'"):
        check_rule_name("MMix3")


def test_updates_read_the_input_scene_and_directions_follow_the_other_size() -> None:
    """MMix2 writes colour and reads the other's colour: the INPUT colour (SVIB collects it before writing).
    NCP moves each object by the other's size: 0 down, 1 up, 2 left, 3 right."""
    pair = (SceneObject(2, 0, 0, 4, 4), SceneObject(1, 3, 0, 4, 20))
    assert [obj.combination for obj in RULES["MMix2"].apply(pair, GRID, MOTION)] == [(0, 0, 1), (3, 3, 2)]
    for size, (rows, cols) in enumerate([(MOTION, 0), (-MOTION, 0), (0, -MOTION), (0, MOTION)]):
        moved = RULES["NCP"].apply((SceneObject(0, 0, 1, 10, 5), SceneObject(0, 0, size, 10, 22)), GRID, MOTION)[0]
        assert (moved.top, moved.left) == (10 + rows, 5 + cols)


def test_a_centre_on_the_middle_lines_is_right_and_top_as_in_svib() -> None:
    """SVIB: x >= 0.5 is right, y >= 0.5 is top; a 4-cell object at row 14, column 14 is centred on both lines."""
    obj = SceneObject(0, 0, 1, 14, 14)
    assert obj.position(GRID) == (0.5, 0.5) and obj.quadrant(GRID) == 1
    assert SceneObject(0, 0, 1, 15, 13).quadrant(GRID) == 3


# --- splits -----------------------------------------------------------------------------------------------------


def test_seed_0_gives_svibs_cores() -> None:
    assert combination_splits(0).cores == ((2, 0, 3), (3, 2, 0), (1, 1, 2), (0, 3, 1))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_splits_cover_every_value_hold_testing_out_and_nest(seed: int) -> None:
    splits = combination_splits(seed)
    for factor in range(3):
        assert sorted(core[factor] for core in splits.cores) == [0, 1, 2, 3]
    assert len(splits.testing) == 12 and not set(splits.testing) & set(splits.cores)
    every = set(splits.cores) | set(splits.testing) | set(splits.order)
    assert len(every) == 64 and len(splits.order) == 48
    previous: tuple = ()
    for alpha, count in zip((0.0, 0.2, 0.4, 0.6, 0.8), (4, 16, 28, 40, 52)):
        training = splits.training(alpha)
        assert len(training) == len(set(training)) == count
        assert not set(training) & set(splits.testing)
        assert training[:len(previous)] == previous
        previous = training
    assert splits.testing == combination_splits(seed).testing  # one test split whatever the alpha


def test_alpha_counts_as_svib_counts_and_stops_at_0_8() -> None:
    assert [n_training(a) for a in (0.0, 0.1, 0.6000000000000001, 0.35, ALPHA_MAX)] == [0, 6, 36, 21, 48]
    with pytest.raises(ValueError, match="alpha must be from 0 to 0.8"):
        n_training(0.9)


# --- the sampler -------------------------------------------------------------------------------------------------


def scene_config(rule: str = "MNIntra", alpha: float = 0.2, **scene: int) -> TaskConfig:
    return TaskConfig.from_dict({"scene": {"rule": rule, "alpha": alpha, **scene},
                                 "samples": {"train": 40, "val_id": 4, "val_ood": 8, "test_id": 4, "test_ood": 8}})


def test_scenes_follow_the_split_combinations_placement_and_rule() -> None:
    config = scene_config()
    assert config.scene is not None and family_of(config) is FAMILIES["scenes"]
    rule = RULES["MNIntra"]
    for split in SPLITS:
        allowed = set(config.scene.combinations(split))
        for sample in generate_split(config, split):
            objects = scene_objects(sample.input)
            assert len(objects) == 2 and {obj.combination for obj in objects} <= allowed
            assert np.array_equal(sample.output, draw(rule.apply(objects, GRID, MOTION), GRID))
            targets = scene_objects(sample.output)  # both still whole, apart and in the grid after the motion
            assert len(targets) == 2
            assert objects[0].quadrant(GRID) != objects[1].quadrant(GRID)
            assert sample.task_key == "MNIntra" and sample.task_code == (0, 0, 0, 0) and sample.sequence == ()
            for obj, record in zip(objects, sample.objects):
                assert record["bbox"] == [obj.top, obj.left, obj.top + obj.side, obj.left + obj.side]
                assert record["colors"] == [COLOURS[obj.colour]]
                assert record["properties"]["input"] == {
                    "colour": obj.colour, "shape": obj.shape, "size": obj.size, "quadrant": obj.quadrant(GRID),
                    "position": list(obj.position(GRID))}
            moved = rule.apply(objects, GRID, MOTION)
            assert [r["properties"]["target"]["colour"] for r in sample.objects] == [obj.colour for obj in moved]
            assert [r["output_bbox"][:2] for r in sample.objects] == [[obj.top, obj.left] for obj in moved]
    assert generate_split(config, "test_ood", 3, 5) == generate_split(config, "test_ood")[3:5]


def test_no_rule_makes_objects_touch_or_leave_the_grid_even_at_the_smallest_grid() -> None:
    """At the smallest grid for the motion, every motion rule leaves two whole objects inside the grid."""
    side = min_grid_size(2)
    for rule in ("MNMix1", "MIntra"):
        config = scene_config(rule, 0.8, grid_size=side, motion=2)
        for sample in generate_split(config, "train"):
            assert sample.input.shape == (side, side)
            assert len(scene_objects(sample.output)) == 2
            assert sum(obj.cells for obj in read_objects(sample.output)) == np.count_nonzero(sample.output)


def test_masks_label_each_object_in_input_and_target() -> None:
    for sample in generate_split(scene_config("NCP"), "train", 0, 10):
        first, last = label_grids(sample)
        for number, record in enumerate(sample.objects, start=1):
            for labels, grid, box in ((first, sample.input, record["bbox"]), (last, sample.output,
                                                                               record["output_bbox"])):
                top, left, bottom, right = box
                inside = np.zeros_like(grid, dtype=bool)
                inside[top:bottom, left:right] = True
                assert np.array_equal(labels == number, inside & (grid > 0))


# --- configs ------------------------------------------------------------------------------------------------------


def test_a_scene_config_needs_only_its_section_and_round_trips() -> None:
    config = scene_config(grid_size=40)
    assert (config.grid_height, config.grid_width) == ((40, 40), (40, 40))
    data = config.to_dict()
    assert "grid_height" not in data and data["scene"]["grid_size"] == 40
    assert TaskConfig.from_dict(data) == config


@pytest.mark.parametrize(("change", "needle"), [
    ({"scene": {"rule": "ShAASh", "alpha": 0.2, "grid_size": 28}}, "grid_size 28 is too small for two objects of up "
                                                                     "to 6 cells moving 4 cells; use grid_size 29"),
    ({"scene": {"rule": "ShAASh", "alpha": 0.85}}, "scene.alpha: must be at most 0.8"),
    ({"scene": {"rule": "NShAASh", "alpha": 0.2}}, "use NShAC"),
    ({"grid_height": 20}, "leave them out (scene.grid_size sets both)"),
    ({"paired_ood": True}, "paired_ood is not available with 'scene'"),
])
def test_bad_scene_configs_are_one_line(change: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as error:
        TaskConfig.from_dict({"scene": {"rule": "ShAASh", "alpha": 0.2}, **change})
    assert needle in str(error.value) and "\n" not in str(error.value)


def test_the_family_refuses_cogitao_fields_and_fits_only_scene_configs() -> None:
    with pytest.raises(ConfigError, match="transformations do not apply; remove them"):
        family_of(TaskConfig.from_dict({"scene": {"rule": "CP", "alpha": 0}, "transformations": ["translate_up"]}))
    with pytest.raises(ConfigError, match="family 'sequences' does not fit.*a 'scenes' config"):
        family_of(TaskConfig.from_dict({"scene": {"rule": "CP", "alpha": 0}, "family": "sequences"}))
    entry = FAMILIES["scenes"]
    assert entry.metrics == frozenset(FACTOR_METRICS) and "stubbornness" in entry.unavailable_metrics


@pytest.mark.parametrize("change", [{"n_objects": [3, 3]}, {"connectivity": 4}, {"depth": 3},
                                    {"splits": {"test_ood": {"grid_height": [30, 30]}}},
                                    {"object_filter": [{"max_cells": 9}]}])
def test_the_cogitao_generators_settings_are_refused_not_ignored(change: dict, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    document = {**get_study("svib/S-A/0.2", n_train=2, n_val=1, n_test=1).to_dict(), **change}
    family_of(get_study("svib/S-A/0.2", n_train=2, n_val=1, n_test=1))  # the study itself passes
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(document))
    cli_error(["generate", "--config", str(path), "--out", str(tmp_path / "out"), "--no-progress"], capsys,
              f"these settings do not apply: {next(iter(change))}")
    assert not (tmp_path / "out").exists()


# --- studies ------------------------------------------------------------------------------------------------------


def test_studies_are_presets_of_the_paper_tasks_at_any_alpha() -> None:
    assert [s for s in STUDIES if s.startswith("svib/")] == [f"svib/{task}/{alpha}" for task in TASKS
                                                             for alpha in (0.0, 0.2, 0.4, 0.6)]
    config = get_study("svib/M-NA/0.6", n_train=2, n_val=1, n_test=1)
    assert config.scene == SceneSpec(rule="MNMix2", alpha=0.6) and config.grid_height == (GRID, GRID)
    assert get_study("svib/CP/0.35", n_train=2, n_val=1, n_test=1).scene == SceneSpec(rule="CP", alpha=0.35)
    assert study_family("svib/CP/0.35") is FAMILIES["scenes"] and alpha_of("svib/S-A/0.2") == 0.2
    assert resolve_experiments(("svib/S-A", "svib/CP/0.35"), STUDIES.names()) == [
        "svib/S-A/0.0", "svib/S-A/0.2", "svib/S-A/0.4", "svib/S-A/0.6", "svib/CP/0.35"]
    assert family_of(config) is FAMILIES["scenes"]
    paper = get_study("svib/S-A/0.2")
    assert (paper.count("train"), paper.count("val_id"), paper.count("test_ood")) == (64_000, 8_000, 8_000)
    assert get_study("alpha/translate_up/0.2").count("train") == 100_000


def test_describe_names_rule_core_training_and_testing_combinations() -> None:
    text = describe_study("svib/S-A/0.2")
    assert "rule: ShAASh (S-A): other[shape] -> self[shape]" in text
    assert "core (4):\n    azure circle 6, orange square 3, magenta triangle 5, green star_4 4" in text
    assert "training at alpha 0.2 (train, val_id, test_id; the 4 cores and 12 more)" in text
    assert "testing (val_ood, test_ood; the same for every alpha):\n    green circle 4, green triangle 5" in text


@pytest.mark.parametrize(("argv", "needle"), [
    (["studies", "--describe", "svib/S-X/0.2"], "unknown SVIB task or rule 'S-X'; did you mean 'S-A'"),
    (["studies", "--describe", "svib/NShAASh/0.2"], "use NShAC"),
    (["studies", "--describe", "svib/S-A/0.9"], "alpha must be a number from 0 to 0.8"),
    (["studies", "--describe", "svib/S-A/abc"], "alpha must be a number from 0 to 0.8"),
    (["studies", "--describe", "svib/S-A/0.20"], "write the alpha as 0.2 ('svib/S-A/0.2')"),
    (["studies", "--describe", "svib/S-A/2e-1"], "write the alpha as 0.2"),
    (["studies", "--describe", "svib/S-A/0"], "write the alpha as 0.0"),
    (["generate", "--study", "svib/S-A/0.2", "--set", "scene.grid_size=20", "--out", "unused"],
     "grid_size 20 is too small"),
])
def test_bad_study_input_is_one_line_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli_error(argv, capsys, needle)


# --- exports ------------------------------------------------------------------------------------------------------


def test_a_scene_study_exports_as_grids_and_as_folder_with_masks_and_serves_on_the_fly(tmp_path: Path) -> None:
    counts = ["--n-train", "4", "--n-val", "1", "--n-test", "2", "--no-progress"]
    study = ["--study", "svib/MMix1/0.4"]
    assert main(["export", *study, "--out", str(tmp_path / "grids"), "--format", "grids", *counts]) == 0
    assert main(["export", *study, "--out", str(tmp_path / "folder"), "--format", "folder", "--masks",
                 "--size", "64", "64", *counts]) == 0
    config = get_study("svib/MMix1/0.4", n_train=4, n_val=1, n_test=2)
    spec = RenderSpec(size=(64, 64))
    for split in ("train", "test_ood"):
        samples = generate_split(config, split)
        grids, folder = open_export(tmp_path / "grids", split, spec), open_export(tmp_path / "folder", split)
        live = open_dataset("svib/MMix1/0.4", split, spec, n_train=4, n_val=1, n_test=2)
        for sample, grid_item, folder_item, live_item in zip(samples, grids, folder, live, strict=True):
            assert np.array_equal(live_item["input"].numpy(), folder_item["input"].numpy())
            for item in (grid_item, folder_item, live_item):
                assert np.array_equal(item["input_grid"].numpy(), sample.input)
                assert np.array_equal(item["target_grid"].numpy(), sample.output)
                assert item["task_key"] == "MMix1"
            seed = render_seed(sample.seed, split, sample.index)
            for labels, field in zip(label_grids(sample), ("input", "target")):
                stored = load(tmp_path / "folder" / split / f"{sample.index:08d}_{field}_mask.png")[..., 0]
                assert np.array_equal(stored, mask_image(labels, spec, seed))
                assert set(np.unique(stored)) == {0, 1, 2}
        table = pq.read_table(tmp_path / "folder" / split / "metadata-00000.parquet")
        assert [json.loads(text) for text in table.column("objects").to_pylist()] == [
            json.loads(json.dumps(list(sample.objects))) for sample in samples]
