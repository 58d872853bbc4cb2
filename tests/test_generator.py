"""The generator: determinism across workers, valid placement and frames, metadata, config errors, CLI."""

from __future__ import annotations

import gc
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from vision_bench.cli import main
from vision_bench.errors import ConfigError, InfeasibleConfigError
from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.formats import read_tasks, table_of, write_parquet, write_tables
from vision_bench.tasks.generator import owning_split
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.objects import object_properties
from vision_bench.tasks.sample import CHUNK, TaskSample, sample_rng
from vision_bench.tasks.sampling import generate_sample, generate_split, map_split
from vision_bench.tasks.task_code import encode_task_code
from vision_bench.tasks.transformations import apply_sequence, apply_step, transform_objects

MIXED = {
    "seed": 7,
    "grid_height": [10, 14],
    "grid_width": [10, 14],
    "n_objects": [1, 3],
    "object_filter": {"max_height": 4, "max_width": 4},
    "transformations": ["translate_up", "rot90", "crop_top_side", "fill_holes_different_color", "pad_left",
                        "double_right", "extend_contours_same_color", "change_shape_color"],
    "depth": [1, 3],
    "samples": {"train": CHUNK + 40, "val_id": 6, "val_ood": 6, "test_id": 6, "test_ood": 6},
}


@pytest.fixture(scope="module")
def config() -> TaskConfig:
    return TaskConfig.from_dict(MIXED)


@pytest.fixture(scope="module")
def train(config: TaskConfig) -> list[TaskSample]:
    return generate_split(config, "train")


def test_samples_are_a_function_of_seed_split_and_index(config: TaskConfig, train: list[TaskSample]) -> None:
    assert [s.index for s in train] == list(range(len(train)))
    for index in (0, 5, CHUNK + 3):
        assert generate_sample(config, "train", index) == train[index]
    assert generate_split(config, "train", start=20, stop=25) == train[20:25]
    reseeded = TaskConfig.from_dict({**MIXED, "seed": 8})
    assert generate_sample(reseeded, "train", 0) != train[0]
    assert (sample_rng(7, "train", 3).random() == sample_rng(7, "train", 3).random()
            != sample_rng(7, "val_id", 3).random())


def test_two_workers_write_byte_identical_parquet(config: TaskConfig, train: list[TaskSample], tmp_path: Path) -> None:
    assert len(train) > CHUNK
    write_parquet(train, tmp_path / "one.parquet")
    write_parquet(generate_split(config, "train", workers=2), tmp_path / "two.parquet")
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()


def test_three_workers_and_this_process_share_chunks_in_order(config: TaskConfig) -> None:
    alone = generate_split(config, "train", 0, 5 * CHUNK + 7)
    done: list[int] = []
    shared = generate_split(config, "train", 0, 5 * CHUNK + 7, workers=3, progress=done.append)
    assert shared == alone and sum(done) == len(alone) and len(done) == 6
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_an_empty_split_is_empty_even_when_its_overrides_could_not_be_met() -> None:
    config = TaskConfig.from_dict({**MIXED, "samples": {"train": 3, "val_ood": 0},
                                   "splits": {"val_ood": {"object_filter": {"min_cells": 5000}}}})
    assert generate_split(config, "val_ood") == [] and generate_split(config, "train", 2, 2) == []
    with pytest.raises(InfeasibleConfigError):
        generate_split(config, "val_ood", 0, 1)


def test_tables_built_in_two_workers_write_the_same_file(config: TaskConfig, train: list[TaskSample],
                                                        tmp_path: Path) -> None:
    """The `generate` command's path: workers turn their chunks into Arrow tables."""
    write_parquet(train, tmp_path / "samples.parquet")
    write_tables(map_split(config, "train", table_of, workers=2), tmp_path / "tables.parquet")
    assert (tmp_path / "samples.parquet").read_bytes() == (tmp_path / "tables.parquet").read_bytes()


def test_input_objects_never_touch_and_match_the_metadata(train: list[TaskSample]) -> None:
    for sample in train:
        found = extract_objects(sample.input, connectivity=8)
        assert len(found) == len(sample.objects)
        for obj, meta in zip(found, sample.objects):
            assert list(obj.bbox) == meta["bbox"]
            assert obj.colors == meta["colors"]
            assert object_properties(obj.pixels).to_dict() == meta["properties"]
        cells = [draw_objects(sample.input.shape, [obj]) != 0 for obj in found]
        for a, b in itertools.combinations(cells, 2):
            assert not (ndimage.binary_dilation(a, structure=np.ones((3, 3))) & b).any()


def test_frames_follow_the_transformations_step_by_step(train: list[TaskSample]) -> None:
    for sample in train:
        assert len(sample.frames) == len(sample.sequence) + 1
        assert sample.frames[0] is sample.input and sample.frames[-1] is sample.output
        objects = extract_objects(sample.input, connectivity=8)
        for step, name in enumerate(sample.sequence, start=1):
            objects = apply_step(objects, name, sample.input.shape)
            assert np.array_equal(draw_objects(sample.input.shape, objects), sample.frames[step])
        assert np.array_equal(apply_sequence(sample.input, sample.sequence), sample.output)
        bottoms = [meta["output_bbox"] for meta in sample.objects]
        assert [list(o.bbox) for o in objects] == bottoms


def test_metadata_sequence_code_and_ownership(config: TaskConfig, train: list[TaskSample]) -> None:
    lengths = {len(s.sequence) for s in train}
    assert lengths == {1, 2, 3}
    assert {n for s in train for n in s.sequence} <= set(config.transformations)
    for sample in train:
        assert sample.task_code == tuple(encode_task_code(sample.sequence))
        assert sample.task_key == "-".join(sample.sequence)
        assert (sample.seed, sample.split) == (7, "train")
        assert 10 <= sample.input.shape[0] <= 14 and 10 <= sample.input.shape[1] <= 14
        assert 1 <= len(sample.objects) <= 3
        assert all(m["properties"]["height"] <= 4 and m["properties"]["width"] <= 4 for m in sample.objects)
        assert owning_split(sample.input) == "train"


def test_splits_never_share_an_input(config: TaskConfig, train: list[TaskSample]) -> None:
    seen: dict[bytes, str] = {}
    for split in SPLITS:
        samples = train if split == "train" else generate_split(config, split)
        for sample in samples:
            key = bytes(sample.input.shape) + sample.input.tobytes()
            assert seen.setdefault(key, split) == split
            assert owning_split(sample.input) == split


def test_owning_split_follows_the_weights() -> None:
    rng = np.random.default_rng(0)
    owners = [owning_split(rng.integers(0, 10, (6, 6)).astype(np.uint8)) for _ in range(4000)]
    assert 0.87 < owners.count("train") / len(owners) < 0.93
    assert set(owners) == set(SPLITS)


def test_explicit_sequences_square_grids_and_colors() -> None:
    config = TaskConfig.from_dict({
        "grid_height": [8, 12], "grid_width": [8, 12], "square_grid": True, "n_objects": 2,
        "object_filter": {"max_height": 3, "max_width": 3, "colors": [2, 5], "n_colors": 1},
        "sequences": [["mirror_vertical"], ["translate_left", "pad_right"]],
        "samples": {"train": 20},
    })
    for sample in generate_split(config, "train"):
        assert sample.input.shape[0] == sample.input.shape[1]
        assert sample.sequence in {("mirror_vertical",), ("translate_left", "pad_right")}
        assert set(np.unique(sample.input)) <= {0, 2, 5}


def test_a_filter_that_no_template_of_a_sequence_survives_is_skipped_for_that_sequence() -> None:
    """Filter 0 only has objects too small to crop, so crop_top_side draws from filter 1 alone."""
    config = TaskConfig.from_dict({
        "grid_height": 14, "grid_width": 14, "n_objects": 2,
        "object_filter": [{"max_height": 2, "max_width": 2}, {"min_height": 4, "max_height": 5, "max_width": 5}],
        "sequences": [["crop_top_side"], ["translate_up"]], "samples": {"train": 40},
    })
    heights = {sequence: set() for sequence in (("crop_top_side",), ("translate_up",))}
    for sample in generate_split(config, "train"):
        heights[sample.sequence] |= {meta["bbox"][2] - meta["bbox"][0] for meta in sample.objects}
    assert heights[("crop_top_side",)] and min(heights[("crop_top_side",)]) >= 4
    assert min(heights[("translate_up",)]) <= 2 and max(heights[("translate_up",)]) >= 4


def test_constraints_are_met_by_the_input_objects_and_no_object_is_cropped_away() -> None:
    """COGITAO's timing: crop_contours twice needs 4 rows and columns in the input object only, and the
    templates that the second crop would leave with no cell are never drawn."""
    config = TaskConfig.from_dict({
        "grid_height": 14, "grid_width": 14, "n_objects": 2, "object_filter": {"max_height": 5, "max_width": 5},
        "sequences": [["crop_contours", "crop_contours"]], "samples": {"train": 20},
    })
    for sample in generate_split(config, "train"):
        assert all(m["bbox"][2] - m["bbox"][0] == m["bbox"][3] - m["bbox"][1] == 5 for m in sample.objects)
        steps = transform_objects(extract_objects(sample.input), sample.sequence, sample.input.shape)
        assert all(obj.n_cells for obj in steps[-1])
        assert np.array_equal(draw_objects(sample.input.shape, steps[-1]), sample.output)


def test_distance_objects_are_placed_whole() -> None:
    config = TaskConfig.from_dict({
        "grid_height": 12, "grid_width": 12, "n_objects": 2, "object_filter": {"connectivity": "distance"},
        "transformations": ["translate_down"], "samples": {"train": 5},
    })
    for sample in generate_split(config, "train"):
        assert all(meta["properties"]["connectivity"] == "distance" for meta in sample.objects)
        objects = [GridObject(sample.input[top:bottom, left:right], top, left)
                   for top, left, bottom, right in (m["bbox"] for m in sample.objects)]
        assert np.array_equal(draw_objects(sample.input.shape, apply_step(objects, "translate_down", (12, 12))),
                              sample.output)


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"grid_height": 5, "grid_width": 5, "n_objects": 10}, "10 objects cannot fit without touching in a 5x5 grid"),
        ({"object_filter": {"min_height": 9}, "grid_height": 8}, "no library object passes object filter 0"),
        # constraints are checked on the input object (COGITAO): no object has a hole and none
        ({"transformations": None, "depth": None, "sequences": [["fill_holes_same_color", "empty_inside_pixels"]]},
         "no library object passing the object filter survives"),
        ({"grid_height": 6, "grid_width": 6, "n_objects": 2, "object_filter": {"min_height": 3, "min_width": 3},
          "transformations": ["quadruple_shape"]}, "fits 1/2 of a 6x6 grid"),
    ],
)
def test_infeasible_configs_fail_fast_naming_the_cause(update: dict, message: str) -> None:
    data = {**MIXED, **update}
    config = TaskConfig.from_dict({k: v for k, v in data.items() if v is not None})
    with pytest.raises(InfeasibleConfigError, match=message):
        generate_sample(config, "train", 0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"transformations": ["rot9"]}, "transformations: unknown transformation 'rot9'; did you mean 'rot90'"),
        ({"sequences": [["rot90"]], "transformations": ["rot90"]}, "set exactly one of"),
        ({"transformations": ["rot90"], "samples": {"tran": 3}}, "samples.tran: unknown key; did you mean 'train'"),
        ({"transformations": ["rot90"], "splits": {"test_ood": {"grid_hieght": 3}}},
         "splits.test_ood.grid_hieght: unknown key; did you mean 'grid_height'"),
        ({"transformations": ["rot90"], "grid_height": [12, 4]}, "grid_height: the range \\[12, 4\\] is empty"),
        ({"transformations": ["rot90"], "depth": 5}, "depth"),
        ({"sequences": [["rot90"] * 5]}, "use 1 to 4"),
        ({"transformations": ["rot90"], "grid_height": 101}, "grid_height"),
        ({"transformations": ["rot90"], "square_grid": True, "grid_width": 9}, "square_grid needs"),
        ({"transformations": ["rot90"], "splits": {"val_ood": {"grid_width": [3, 9]}}, "square_grid": True},
         "splits.val_ood: square_grid needs"),
        ([1, 2], "expected a mapping"),
    ],
)
def test_bad_configs_raise_config_errors_naming_the_key(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TaskConfig.from_dict(data)


def test_config_yaml_round_trip_and_split_overrides(tmp_path: Path) -> None:
    data = {**MIXED, "splits": {"test_ood": {"grid_height": 20, "sequences": [["rot90", "rot90"]]}}}
    config = TaskConfig.from_dict(data)
    (tmp_path / "task.yaml").write_text(config.to_yaml())
    assert TaskConfig.from_yaml(tmp_path / "task.yaml") == config
    ood = config.for_split("test_ood")
    assert (ood.grid_height, ood.transformations, ood.sequences) == ((20, 20), None, (("rot90", "rot90"),))
    assert config.for_split("val_id").transformations == config.transformations
    (tmp_path / "broken.yaml").write_text("seed: [1\n")
    with pytest.raises(ConfigError, match="broken.yaml: not valid YAML"):
        TaskConfig.from_yaml(tmp_path / "broken.yaml")
    with pytest.raises(ConfigError, match="unknown split 'testing'"):
        config.for_split("testing")


def test_reference_config_matches_its_description() -> None:
    config = TaskConfig.from_yaml(Path(__file__).parents[1] / "configs" / "reference_generation.yaml")
    assert (config.grid_height, config.grid_width, config.n_objects, config.depth) == (
        (20, 20), (20, 20), (4, 4), (2, 2)
    )
    assert len(config.transformations) == 28 and config.object_filter[0].max_height == 5
    sample = generate_sample(config, "train", 0)
    assert len(sample.objects) == 4 and len(sample.sequence) == 2


def test_cli_generate_writes_every_split_and_the_manifest_last(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "data"
    args = ["generate", "--study", "compgen/C1/2", "--out", str(out), "--n-train", "12", "--n-val", "3",
            "--n-test", "2", "--seed", "4"]
    assert main(args) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*(f"{s}.parquet" for s in SPLITS), "manifest.json"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == {"train": 12, "val_id": 3, "val_ood": 3, "test_id": 2, "test_ood": 2}
    assert manifest["seed"] == 4 and manifest["study"] == "compgen/C1/2"
    assert TaskConfig.from_dict(manifest["config"]).seed == 4
    ood = read_tasks(out / "test_ood.parquet")
    assert {s.sequence for s in ood} <= {("change_shape_color", "pad_right"), ("pad_right", "change_shape_color")}
    paired = read_tasks(out / "test_id.parquet")  # the release pairs the evaluation splits: same inputs
    assert all(np.array_equal(a.input, b.input) for a, b in zip(paired, ood, strict=True))
    assert len(read_tasks(out)) == 22
    assert main(args) == 2
    assert "already holds a dataset" in capsys.readouterr().err
    assert main([*args, "--force", "--workers", "2"]) == 0
    config_file = tmp_path / "task.yaml"
    config_file.write_text(TaskConfig.from_dict({**MIXED, "samples": {"train": 3, "val_id": 1, "val_ood": 1,
                                                                      "test_id": 1, "test_ood": 0}}).to_yaml())
    assert main(["generate", "--config", str(config_file), "--out", str(tmp_path / "cfg")]) == 0
    assert len(read_tasks(tmp_path / "cfg" / "train.parquet")) == 3
    assert read_tasks(tmp_path / "cfg" / "test_ood.parquet") == []


def test_cli_generate_reports_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("transformations: [rot90]\nobject_filter: {max_heigth: 3}\n")
    assert main(["generate", "--config", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert "object_filter.max_heigth: unknown key; did you mean 'max_height'?" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    infeasible = tmp_path / "infeasible.yaml"
    infeasible.write_text("transformations: [rot90]\ngrid_height: 5\ngrid_width: 5\nn_objects: 10\n")
    assert main(["generate", "--config", str(infeasible), "--out", str(tmp_path / "y")]) == 2
    assert "cannot fit" in capsys.readouterr().err
    assert list((tmp_path / "y").iterdir()) == []
    assert main(["generate", "--config", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "z")]) == 2
    assert "missing.yaml does not exist; pass the path of a YAML file" in capsys.readouterr().err
    assert not (tmp_path / "z").exists()


def test_plans_are_shared_by_content_and_every_planning_cache_is_bounded() -> None:
    from vision_bench.tasks import caches, planning

    config = TaskConfig.from_dict(MIXED)
    plan = planning.plan_for(config, "val_id")
    assert planning.plan_for(TaskConfig.from_dict(MIXED), "val_id") is plan  # an equal config, another object
    assert planning.plan_for(config, "val_ood") is not plan
    assert planning.plan_for(TaskConfig.from_dict({**MIXED, "seed": 8}), "val_id") is not plan
    for cache in (caches.placement_shape, caches.after, caches.span, planning._plan):
        assert cache.cache_info().maxsize is not None
