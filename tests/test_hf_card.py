"""The `parquet` export's dataset card: Hugging Face `datasets` loads exactly the five splits, the
card is recorded in the manifest, `verify` checks it and a re-run repairs it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from render.spec import RenderSpec
from vision_bench.data.datasets import ParquetImageDataset
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.hf_card import CARD_NAME
from vision_bench.data.manifest import MANIFEST_NAME, read_manifest, write_manifest
from vision_bench.data.verify import verify_export
from vision_bench.tasks.config import SPLITS, TaskConfig

datasets = pytest.importorskip("datasets")

SPEC = RenderSpec(size=(16, 16), background="random")
COUNTS = {"train": 5, "val_id": 2, "val_ood": 3, "test_id": 1, "test_ood": 2}
CONFIG = {
    "description": "Tiny card test: translate_up",
    "transformations": ["translate_up"], "depth": [1, 1],
    "grid_height": [4, 6], "grid_width": [4, 6], "n_objects": [1, 2], "seed": 5,
    "samples": COUNTS,
}
OPTIONS = ExportOptions(format="parquet", shard_size=2, masks=True)  # several files per split


@pytest.fixture(scope="module")
def config() -> TaskConfig:
    return TaskConfig.from_dict(CONFIG)


@pytest.fixture(scope="module")
def export(config: TaskConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("card") / "export"
    export_dataset(config, SPEC, root, OPTIONS)
    return root


def front_matter(root: Path) -> dict:
    text = (root / CARD_NAME).read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def file_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_load_dataset_gives_the_five_splits_with_the_exports_pixels(export: Path, tmp_path: Path) -> None:
    loaded = datasets.load_dataset(str(export), cache_dir=str(tmp_path / "cache"))
    assert list(loaded) == list(SPLITS)  # val_id and val_ood apart, test_id and test_ood apart
    assert {split: len(loaded[split]) for split in SPLITS} == COUNTS
    for split in SPLITS:
        reader = ParquetImageDataset(export, split)
        assert type(loaded[split].features["input"]).__name__ == "Image"
        assert type(loaded[split].features["target_mask"]).__name__ == "Image"
        for row in range(COUNTS[split]):
            record, item = loaded[split][row], reader[row]
            assert record["split"] == split and record["index"] == row
            assert record["input"].size == (16, 16) and record["input"].mode == "RGB"
            for column in ("input", "target"):
                pixels = np.asarray(record[column], dtype=np.float32) / 255.0
                assert np.array_equal(pixels, item[column].permute(1, 2, 0).numpy()), (split, row, column)
            assert record["input_grid"] == item["input_grid"].tolist()


def test_card_names_every_split_and_declares_the_features(export: Path) -> None:
    front = front_matter(export)
    [default] = front["configs"]
    assert default["config_name"] == "default"
    assert default["data_files"] == [{"split": s, "path": f"{s}/part-*.parquet"} for s in SPLITS]
    features = {entry["name"]: entry for entry in front["dataset_info"]["features"]}
    assert {name for name, entry in features.items() if entry.get("dtype") == "image"} == {
        "input", "target", "input_mask", "target_mask"}
    assert features["index"] == {"name": "index", "dtype": "int64"}
    assert features["input_grid"] == {"name": "input_grid", "sequence": {"sequence": "int8"}}
    assert "| val_ood | 3 | 2 |" in (export / CARD_NAME).read_text(encoding="utf-8")
    # nothing else in the folder that the Hub would read as data
    top_level = {p.name for p in export.iterdir()}
    assert top_level == {CARD_NAME, MANIFEST_NAME, *SPLITS}


def test_card_is_recorded_and_verified(export: Path, tmp_path: Path) -> None:
    manifest = read_manifest(export)
    record = manifest["documents"][CARD_NAME]
    assert record["sha256"] == hashlib.sha256((export / CARD_NAME).read_bytes()).hexdigest()
    assert verify_export(export).ok
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)
    with (copy / CARD_NAME).open("a", encoding="utf-8") as handle:
        handle.write("edited\n")
    problems = [str(problem) for problem in verify_export(copy).problems]
    assert problems == [f"{CARD_NAME}: {record['size'] + 7} bytes, the manifest says {record['size']} "
                        "(truncated or replaced)"]


def test_rerun_repairs_a_lost_or_damaged_card_and_adds_one_to_an_old_export(
        config: TaskConfig, export: Path, tmp_path: Path) -> None:
    expected = file_hashes(export)
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)
    (copy / CARD_NAME).write_text("a damaged card", encoding="utf-8")
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == expected
    (copy / CARD_NAME).unlink()
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == expected
    # an export written before cards existed: no README.md, no `documents` in its manifest
    manifest = read_manifest(copy)
    del manifest["documents"]
    write_manifest(copy, manifest)
    (copy / CARD_NAME).unlink()
    export_dataset(config, SPEC, copy, OPTIONS)
    assert file_hashes(copy) == expected and verify_export(copy).ok


def test_sharded_runs_write_the_same_card_and_manifest(config: TaskConfig, export: Path, tmp_path: Path) -> None:
    for index in range(3):
        export_dataset(config, SPEC, tmp_path, OPTIONS, num_shards=3, shard_index=index)
    assert file_hashes(tmp_path) == file_hashes(export)


def test_empty_splits_are_left_out_and_other_formats_get_no_card(tmp_path: Path) -> None:
    counts = {"train": 2, "val_id": 1, "val_ood": 0, "test_id": 0, "test_ood": 1}
    config = TaskConfig.from_dict({**CONFIG, "samples": counts})
    export_dataset(config, SPEC, tmp_path / "parquet", ExportOptions(format="parquet"))
    loaded = datasets.load_dataset(str(tmp_path / "parquet"), cache_dir=str(tmp_path / "cache"))
    assert {split: len(rows) for split, rows in loaded.items()} == {"train": 2, "val_id": 1, "test_ood": 1}
    export_dataset(config, SPEC, tmp_path / "folder", ExportOptions(format="folder"))
    assert not (tmp_path / "folder" / CARD_NAME).exists()
    assert "documents" not in json.loads((tmp_path / "folder" / MANIFEST_NAME).read_text(encoding="utf-8"))
