"""Loaders: every export format, on-the-fly and device rendering yield the same sample for an index."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from render.codec import encode, load
from render.errors import UserError
from render.spec import RenderSpec
from vision_bench.data.collate import collate
from vision_bench.data.datasets import (
    FolderDataset,
    GridsDataset,
    ParquetImageDataset,
    WebDatasetDataset,
)
from vision_bench.data.device import GridBatchRenderer, to_device_batch
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions, open_export
from vision_bench.data.imports import ImagePairDataset
from vision_bench.data.masks import label_grids, mask_image
from vision_bench.data.onthefly import OnTheFlyDataset
from vision_bench.data.opening import open_dataset
from vision_bench.errors import CorruptFileError, DataError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.sampling import generate_sample

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

SPEC = RenderSpec(size=(20, 24), background="random", layout="fit")
CONFIG = {
    "transformations": ["translate_down", "mirror_vertical", "change_shape_color"], "depth": [1, 3],
    "grid_height": [4, 7], "grid_width": [4, 9], "n_objects": [1, 3], "seed": 11,
    "samples": {"train": 6, "val_id": 1, "val_ood": 0, "test_id": 0, "test_ood": 3},
}
IMAGE_FORMATS = ("folder", "parquet", "webdataset")
FORMATS = ("grids", *IMAGE_FORMATS)


@pytest.fixture(scope="module")
def config() -> TaskConfig:
    return TaskConfig.from_dict(CONFIG)


@pytest.fixture(scope="module")
def exports(config: TaskConfig, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    for name in FORMATS:
        export_dataset(config, SPEC, root / name, ExportOptions(format=name, shard_size=4, masks=name != "grids"))
    return {name: root / name for name in FORMATS}


def assert_same_item(got: dict, expected: dict) -> None:
    assert set(got) == set(expected)
    for key, value in expected.items():
        if isinstance(value, torch.Tensor):
            assert got[key].dtype == value.dtype and torch.equal(got[key], value), key
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("split", ["train", "test_ood"])
def test_every_export_format_yields_the_on_the_fly_item(config: TaskConfig, exports: dict[str, Path],
                                                        name: str, split: str) -> None:
    reference = OnTheFlyDataset(config, split, SPEC)
    dataset = open_export(exports[name], split)
    assert len(dataset) == len(reference) == config.count(split)
    for index in range(len(dataset)):
        assert_same_item(dataset[index], reference[index])


def test_items_match_the_generator_and_the_contract(config: TaskConfig) -> None:
    item = OnTheFlyDataset(config, "train", SPEC)[4]
    sample = generate_sample(config, "train", 4)
    assert np.array_equal(item["input_grid"].numpy(), sample.input) and item["input_grid"].dtype == torch.long
    assert np.array_equal(item["target_grid"].numpy(), sample.output)
    assert item["task_code"].shape == (4,) and item["task_code"].dtype == torch.long
    assert item["sequence"] == sample.sequence and (item["split"], item["index"]) == ("train", 4)
    assert item["input"].shape == (3, 20, 24) and item["input"].dtype == torch.float32
    assert 0.0 <= float(item["input"].min()) and float(item["target"].max()) <= 1.0


def test_on_the_fly_is_deterministic_beyond_the_config_count(config: TaskConfig) -> None:
    endless = OnTheFlyDataset(config, "train", SPEC, length=50)
    assert len(endless) == 50
    assert_same_item(endless[40], OnTheFlyDataset(config, "train", SPEC, length=41)[-1])
    assert not torch.equal(endless[40]["input_grid"], endless[41]["input_grid"])
    with pytest.raises(IndexError):
        endless[50]
    with pytest.raises(DataError, match="unknown split 'dev'"):
        OnTheFlyDataset(config, "dev", SPEC)


@pytest.mark.parametrize("source", ["onthefly", "grids", "folder"])
def test_device_rendering_equals_cpu_rendering(config: TaskConfig, exports: dict[str, Path], source: str) -> None:
    def dataset(render_on: str) -> torch.utils.data.Dataset:
        if source == "onthefly":
            return OnTheFlyDataset(config, "train", SPEC, render_on=render_on)
        return open_export(exports[source], "train", render_on=render_on)

    cpu = next(iter(DataLoader(dataset("cpu"), batch_size=5, collate_fn=collate)))
    grids_only = next(iter(DataLoader(dataset("device"), batch_size=5, collate_fn=collate)))
    assert "input" not in grids_only and grids_only["input_grid"].min() == -1
    rendered = to_device_batch(grids_only, SPEC, "cpu")
    assert torch.equal(rendered["input"], cpu["input"]) and torch.equal(rendered["target"], cpu["target"])
    with_torch = GridBatchRenderer(SPEC, "cpu", backend="torch")(grids_only)
    assert torch.equal(with_torch["input"], cpu["input"]) and torch.equal(with_torch["target"], cpu["target"])
    assert GridBatchRenderer(SPEC)(cpu)["input"] is cpu["input"]
    with pytest.raises(DataError, match="unknown render backend 'cuda'"):
        GridBatchRenderer(SPEC, backend="cuda")


def test_exported_images_cannot_be_redrawn_with_another_spec(exports: dict[str, Path]) -> None:
    with pytest.raises(DataError, match="drawn with the render spec in its manifest"):
        open_export(exports["folder"], "train", RenderSpec(size=(32, 32)))
    other = open_export(exports["folder"], "train", RenderSpec(size=(32, 32)), render_on="device")
    assert "input" not in other[0]
    with pytest.raises(DataError, match="has no split 'dev'"):
        open_export(exports["folder"], "dev")


def test_grids_exports_render_with_any_spec(config: TaskConfig, exports: dict[str, Path]) -> None:
    other = RenderSpec(size=(16, 16), palette="arc")
    assert_same_item(open_export(exports["grids"], "train", other)[5], OnTheFlyDataset(config, "train", other)[5])


def test_open_dataset_picks_the_loader(config: TaskConfig, exports: dict[str, Path], tmp_path: Path) -> None:
    assert isinstance(open_dataset(exports["grids"], "train"), GridsDataset)
    assert isinstance(open_dataset(exports["folder"], "train"), FolderDataset)
    assert isinstance(open_dataset(exports["parquet"], "val_id"), ParquetImageDataset)
    assert isinstance(open_dataset(exports["webdataset"], "test_ood"), WebDatasetDataset)
    on_the_fly = open_dataset(config, "train", SPEC, n_train=3)
    assert isinstance(on_the_fly, OnTheFlyDataset) and len(on_the_fly) == 3
    study = open_dataset("envgen/G1/1", "val_ood", SPEC, n_val=4, render_on="device")
    assert isinstance(study, OnTheFlyDataset) and len(study) == 4 and "input" not in study[0]
    yaml_file = tmp_path / "tiny.yaml"
    yaml_file.write_text(config.to_yaml())
    assert_same_item(open_dataset(yaml_file, "train", SPEC)[2], on_the_fly[2])
    with pytest.raises(DataError, match="not an export"):
        open_dataset(tmp_path, "train")


def test_masks_label_every_object_in_every_frame(config: TaskConfig) -> None:
    for index in range(6):
        sample = generate_sample(config, "train", index)
        labels = label_grids(sample)
        assert len(labels) == len(sample.frames)
        for frame, grid in zip(sample.frames, labels):
            assert np.array_equal(grid > 0, frame != 0)
        assert set(np.unique(labels[0])) == set(range(len(sample.objects) + 1))


def test_mask_image_follows_the_cell_layout() -> None:
    labels = np.array([[1, 0], [0, 2]], dtype=np.uint8)
    expected = np.kron(labels, np.ones((4, 5), dtype=np.uint8))
    assert np.array_equal(mask_image(labels, RenderSpec(size=(8, 10)), 0), expected)
    fitted = mask_image(labels, RenderSpec(size=(10, 8), layout="fit"), 0)
    assert np.array_equal(fitted[1:9], np.kron(labels, np.ones((4, 4), dtype=np.uint8)))
    assert not fitted[0].any() and not fitted[9].any()


def test_exported_masks_are_single_channel_labels(config: TaskConfig, exports: dict[str, Path]) -> None:
    from PIL import Image

    sample = generate_sample(config, "train", 1)
    with Image.open(exports["folder"] / "train/00000001_target_mask.png") as picture:
        assert picture.mode == "L"
        mask = np.asarray(picture)
    image = load(exports["folder"] / "train/00000001_target.png")
    background = OnTheFlyDataset(config, "train", SPEC)[1]["target"][:, 0, 0].mul(255).round().byte().numpy()
    assert mask.max() == len(sample.objects)
    assert (image[mask > 0] != background).any(axis=1).all()


def test_parquet_export_loads_with_hugging_face_datasets(config: TaskConfig, exports: dict[str, Path],
                                                         tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    files = sorted(str(p) for p in (exports["parquet"] / "train").glob("*.parquet"))
    loaded = datasets.load_dataset("parquet", data_files={"train": files}, cache_dir=str(tmp_path))["train"]
    assert type(loaded.features["input"]).__name__ == "Image"
    assert len(loaded) == 6 and loaded[3]["index"] == 3 and loaded[3]["split"] == "train"
    reference = OnTheFlyDataset(config, "train", SPEC)[3]
    picture = np.asarray(loaded[3]["target"].convert("RGB"))
    assert np.array_equal(picture, reference["target"].mul(255).round().byte().permute(1, 2, 0).numpy())
    assert loaded[3]["input_grid"] == reference["input_grid"].tolist()


CORRUPTIONS = {
    # format: (file in the export, its bytes -> the corrupt bytes, split opened, whether the error comes
    # when item 2 is read rather than when the export opens, the error, what it must say)
    "folder": ("train/00000002_input.png", lambda data: data[:40], "train", True, UserError,
               "00000002_input.png: cannot decode"),
    "parquet": ("train/part-00001.parquet", lambda data: data[:100], "train", False, CorruptFileError,
                "part-00001.parquet: not a readable Parquet file"),
    "webdataset": ("train/part-00000.tar", lambda data: data[:700], "train", False, CorruptFileError,
                   "part-00000.tar"),
    "grids": ("test_ood/part-00000.parquet", lambda data: b"PAR1 not really", "test_ood", False, UserError,
              "part-00000.parquet: not a readable Parquet file"),
}


@pytest.mark.parametrize("name", FORMATS)
def test_corrupt_files_raise_errors_naming_them(name: str, exports: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    relative, corrupt, split, on_item, error, message = CORRUPTIONS[name]
    root = tmp_path / name
    shutil.copytree(exports[name], root)
    (root / relative).write_bytes(corrupt((root / relative).read_bytes()))
    if on_item:
        dataset = open_export(root, split)
        with pytest.raises(error, match=message):
            dataset[2]
    else:
        with pytest.raises(error, match=message):
            open_export(root, split)


def test_missing_image_is_named(exports: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    shutil.copytree(exports["folder"], tmp_path / "folder")
    (tmp_path / "folder/val_id/00000000_target.png").unlink()
    with pytest.raises(FileNotFoundError, match="00000000_target.png"):
        open_export(tmp_path / "folder", "val_id")[0]


def _write_pair(path: Path, value: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(np.full((8, 8, 3), value, dtype=np.uint8)))


def test_svib_and_pair_folders_load_without_grids(tmp_path: Path) -> None:
    for episode, value in (("00001", 10), ("00000", 20)):
        _write_pair(tmp_path / "svib/test" / episode / "source.png", value)
        _write_pair(tmp_path / "svib/test" / episode / "target.png", value + 1)
    svib = open_dataset(tmp_path / "svib", "test")
    assert isinstance(svib, ImagePairDataset) and len(svib) == 2
    first = svib[0]
    assert first["key"] == "00000" and "input_grid" not in first
    assert torch.allclose(first["input"], torch.full((3, 8, 8), 20 / 255))
    assert torch.allclose(first["target"], torch.full((3, 8, 8), 21 / 255))
    assert collate([svib[0], svib[1]])["input"].shape == (2, 3, 8, 8)

    _write_pair(tmp_path / "pairs/b_input.png", 5)
    _write_pair(tmp_path / "pairs/b_target.png", 6)
    _write_pair(tmp_path / "pairs/a_input.jpg", 7)
    _write_pair(tmp_path / "pairs/a_target.jpg", 8)
    pairs = open_dataset(tmp_path / "pairs", "test")
    assert [pairs[i]["key"] for i in range(2)] == ["a", "b"]
    (tmp_path / "pairs/b_target.png").unlink()
    with pytest.raises(DataError, match="b_input.png: has no matching b_target"):
        open_dataset(tmp_path / "pairs", "test")
    (tmp_path / "svib/test/00001/target.png").unlink()
    with pytest.raises(DataError, match="00001/target.png: missing"):
        open_dataset(tmp_path / "svib", "test")
