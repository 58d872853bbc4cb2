"""Every Dataset yields items with exactly the keys its type declares, and `collate` gives a `Batch`."""

from __future__ import annotations

import os
import shutil
import typing
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from render.codec import encode
from render.spec import RenderSpec
from vision_bench.data.batch import Batch, GridItem, PairItem
from vision_bench.data.collate import collate
from vision_bench.data.device import to_device_batch
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions, open_export
from vision_bench.data.imports import open_pair_folder
from vision_bench.data.onthefly import OnTheFlyDataset
from vision_bench.data.opening import open_dataset
from vision_bench.data.streaming import ShardStreamDataset
from vision_bench.tasks.config import TaskConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

SPEC = RenderSpec(size=(16, 16))
CONFIG = {
    "transformations": ["translate_up", "mirror_vertical"], "depth": [1, 2],
    "grid_height": [3, 6], "grid_width": [3, 7], "n_objects": [1, 2], "seed": 5,
    "samples": {"train": 3, "val_id": 0, "val_ood": 0, "test_id": 0, "test_ood": 0},
}
FORMATS = ("grids", "folder", "parquet", "webdataset")

GRID_KEYS = GridItem.__required_keys__
RENDERED_KEYS = GridItem.__required_keys__ | GridItem.__optional_keys__
PAIR_KEYS = PairItem.__required_keys__ | PairItem.__optional_keys__
SHAPE_KEYS = frozenset({"grid_shape", "target_grid_shape"})


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    config = TaskConfig.from_dict(CONFIG)
    for name in FORMATS:
        export_dataset(config, SPEC, root / name, ExportOptions(format=name, shard_size=2))
    return {name: root / name for name in FORMATS}


def _write_pair(path: Path, value: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(np.full((16, 16, 3), value, dtype=np.uint8)))


def _matches(value: object, annotation: object) -> bool:
    """Does `value` have the (shallow) type a TypedDict field declares?"""
    origin = typing.get_origin(annotation) or annotation
    if origin is tuple:
        return isinstance(value, tuple) and all(isinstance(part, str) for part in value)
    if origin is list:
        return isinstance(value, list)
    return isinstance(value, origin)  # type: ignore[arg-type]


def assert_typed(item: typing.Mapping[str, object], declared: type, keys: frozenset[str]) -> None:
    assert set(item) == keys
    hints = typing.get_type_hints(declared)
    for key, value in item.items():
        assert _matches(value, hints[key]), (key, type(value), hints[key])


def assert_batch(items: Sequence[typing.Mapping[str, object]], keys: frozenset[str]) -> Batch:
    batch = collate(items)
    assert_typed(batch, Batch, keys)
    return batch


def _datasets(exports: dict[str, Path], render_on: str) -> list[typing.Any]:
    """The on-the-fly dataset and every export format's, all over the same train split."""
    on_the_fly = OnTheFlyDataset(TaskConfig.from_dict(CONFIG), "train", SPEC, render_on=render_on)
    return [on_the_fly, *(open_export(exports[name], "train", render_on=render_on) for name in FORMATS)]


@pytest.mark.parametrize("render_on", ["cpu", "device"])
def test_grid_items_have_the_grid_item_keys(exports: dict[str, Path], render_on: str) -> None:
    keys = RENDERED_KEYS if render_on == "cpu" else GRID_KEYS
    for dataset in _datasets(exports, render_on):
        items = [dataset[index] for index in range(len(dataset))]
        for item in items:
            assert_typed(item, GridItem, keys)
        batch = assert_batch(items, keys | SHAPE_KEYS)
        assert_typed(to_device_batch(batch, SPEC), Batch, RENDERED_KEYS | SHAPE_KEYS)


def test_streamed_shards_yield_grid_items(exports: dict[str, Path]) -> None:
    stream = open_dataset(str(exports["webdataset"] / "{split}/part-{00000..00001}.tar"), "train")
    assert isinstance(stream, ShardStreamDataset)
    items = list(stream)
    for item in items:
        assert_typed(item, GridItem, RENDERED_KEYS)
    assert_batch(items, RENDERED_KEYS | SHAPE_KEYS)


def test_image_pairs_yield_pair_items(tmp_path: Path) -> None:
    for stem, value in (("a", 10), ("b", 20)):
        _write_pair(tmp_path / f"{stem}_input.png", value)
        _write_pair(tmp_path / f"{stem}_target.png", value + 1)
    dataset = open_pair_folder(tmp_path, "test")
    items = [dataset[0], dataset[1]]
    for item in items:
        assert_typed(item, PairItem, PAIR_KEYS)
    assert_batch(items, PAIR_KEYS)


def test_hugging_face_folders_yield_grid_or_pair_items(exports: dict[str, Path], tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "hub-copy"  # a parquet export without its manifest reads as a Hugging Face folder
    shutil.copytree(exports["parquet"], folder, ignore=shutil.ignore_patterns("manifest.json"))
    with_grids = open_dataset(folder, "train")
    assert_typed(with_grids[0], GridItem, RENDERED_KEYS)

    pictures = [np.full((16, 16, 3), 40 * i, np.uint8) for i in range(2)]
    from PIL import Image

    features = datasets.Features({"input": datasets.Image(), "target": datasets.Image()})
    rows = {"input": [Image.fromarray(p) for p in pictures], "target": [Image.fromarray(p) for p in pictures]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features=features)}).save_to_disk(
        str(tmp_path / "saved")
    )
    pairs = open_dataset(tmp_path / "saved", "train")
    items = [pairs[0], pairs[1]]
    for item in items:
        assert_typed(item, PairItem, PAIR_KEYS)
    assert_batch(items, PAIR_KEYS)


def test_collate_output_fields_are_declared_by_the_batch_type() -> None:
    item: GridItem = {
        "input_grid": torch.zeros((2, 3), dtype=torch.long), "target_grid": torch.ones((3, 2), dtype=torch.long),
        "task_code": torch.zeros(4, dtype=torch.long), "sequence": ("translate_up",), "split": "train",
        "index": 0, "task_key": "k", "render_seed": 7,
    }
    batch = assert_batch([item, item], GRID_KEYS | SHAPE_KEYS)
    assert set(batch) <= Batch.__optional_keys__
    assert batch["target_grid_shape"].tolist() == [[3, 2], [3, 2]]
