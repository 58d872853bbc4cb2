"""Shard planning, atomic writes, manifests, tar shards, HF image columns and collate."""

from __future__ import annotations

import errno
import io
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.data.collate import collate, grid_list
from vision_bench.data.manifest import (
    FORMAT_VERSION,
    MANIFEST_KIND,
    digest_bytes,
    digest_file,
    read_manifest,
    write_manifest,
)
from vision_bench.data.parquet_images import image_column, image_feature_columns, with_image_features
from vision_bench.data.shards import Shard, plan_shards, select_shards
from vision_bench.data.webdataset import TarIndex, sample_members, split_key, tar_bytes
from vision_bench.errors import DataError, ManifestError
from vision_bench.io import atomic


def test_plan_shards_fixed_ranges() -> None:
    shards = plan_shards({"train": 5, "val_id": 0, "test_id": 2}, shard_size=2)
    assert shards == [
        Shard("train", 0, 0, 2),
        Shard("train", 1, 2, 4),
        Shard("train", 2, 4, 5),
        Shard("test_id", 0, 0, 2),
    ]
    assert shards[2].name == "train-00002" and shards[2].size == 1


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(0, 40), min_size=1, max_size=5),
    shard_size=st.integers(1, 9),
    num_shards=st.integers(1, 7),
)
def test_selected_shards_partition_the_plan(counts: list[int], shard_size: int, num_shards: int) -> None:
    plan = plan_shards({f"s{i}": n for i, n in enumerate(counts)}, shard_size)
    picked = [select_shards(plan, num_shards, k) for k in range(num_shards)]
    flat = [shard for part in picked for shard in part]
    assert sorted(flat, key=plan.index) == plan and len(flat) == len(set(flat))
    covered = {split: sorted(i for s in plan if s.split == split for i in range(s.start, s.stop)) for split in
               {s.split for s in plan}}
    assert all(covered[f"s{i}"] == list(range(n)) for i, n in enumerate(counts) if n)


def test_bad_shard_options_are_user_errors() -> None:
    plan = plan_shards({"train": 3}, 1)
    with pytest.raises(DataError, match="--shard-index must be in 0..2"):
        select_shards(plan, 3, 3)
    with pytest.raises(DataError, match="--num-shards must be at least 1"):
        select_shards(plan, 0, 0)
    with pytest.raises(DataError, match="shard size"):
        plan_shards({"train": 3}, 0)


def test_atomic_write_on_full_disk_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "image.png"
    real_open = open

    class FullDisk:
        """A file that takes three bytes, then reports a full disk."""

        def __init__(self, path: Path, mode: str) -> None:
            self.handle = real_open(path, mode)

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: bytes) -> None:
            self.handle.write(data[:3])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "open", FullDisk, raising=False)
    with pytest.raises(OSError) as error:
        atomic.atomic_write_bytes(target, b"png bytes")
    assert error.value.errno == errno.ENOSPC and error.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    atomic.atomic_write_bytes(target, b"old")
    atomic.atomic_write_bytes(target, b"new contents")
    assert target.read_bytes() == b"new contents" and os.listdir(tmp_path) == ["a.bin"]
    assert atomic.is_temp_file(atomic.temp_path_for(target)) and not atomic.is_temp_file(target)


def test_digests_match_hashlib_known_value(tmp_path: Path) -> None:
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest_bytes(b"abc").sha256 == expected
    (tmp_path / "abc").write_bytes(b"abc")
    assert digest_file(tmp_path / "abc").sha256 == expected and digest_file(tmp_path / "abc").size == 3


def _manifest(**changes: object) -> dict:
    manifest = {
        "kind": MANIFEST_KIND, "format_version": FORMAT_VERSION, "format": "grids",
        "settings": {}, "splits": {}, "shards": {},
    }
    manifest.update(changes)
    return manifest


def test_manifest_round_trip_and_version_check(tmp_path: Path) -> None:
    write_manifest(tmp_path, _manifest())
    assert read_manifest(tmp_path)["format"] == "grids"
    write_manifest(tmp_path, _manifest(format_version=FORMAT_VERSION + 1))
    with pytest.raises(ManifestError, match="manifest.json: export format version 2"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ManifestError, match="not valid JSON"):
        read_manifest(tmp_path)
    with pytest.raises(ManifestError, match="no manifest"):
        read_manifest(tmp_path / "elsewhere")


def test_tar_bytes_are_deterministic_and_indexable(tmp_path: Path) -> None:
    members = sample_members("00000007", {"input.png": b"in", "target.png": b"out!", "json": b"{}"})
    data = tar_bytes(members)
    assert data == tar_bytes(members)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        infos = archive.getmembers()
    assert [i.name for i in infos] == ["00000007.input.png", "00000007.target.png", "00000007.json"]
    assert {(i.mtime, i.uid, i.uname, i.mode) for i in infos} == {(0, 0, "", 0o644)}
    (tmp_path / "shard.tar").write_bytes(data)
    index = TarIndex(tmp_path / "shard.tar")
    assert index.keys == ["00000007"] and index.read("00000007", "target.png") == b"out!"
    assert split_key("dir/abc.frame1.png") == ("dir/abc", "frame1.png")


def test_hf_image_columns_are_marked_in_the_schema() -> None:
    column = image_column([b"\x89PNG"], ["0_input.png"])
    table = with_image_features(pa.table({"input": column, "index": [0]}), ["input"])
    assert image_feature_columns(table.schema) == ["input"]
    assert column.type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    schema = pq.read_schema(io.BytesIO(buffer.getvalue()))
    assert json.loads(schema.metadata[b"huggingface"])["info"]["features"] == {"input": {"_type": "Image"}}


def _item(grid: list[list[int]], target: list[list[int]], index: int) -> dict:
    return {
        "input": torch.full((3, 4, 4), index / 10),
        "input_grid": torch.tensor(grid),
        "target_grid": torch.tensor(target),
        "task_code": torch.tensor([1, 2, 0, 0]),
        "sequence": ("rot90", "translate_up"),
        "split": "train",
        "index": index,
        "task_key": None,
    }


def test_collate_pads_grids_with_minus_one() -> None:
    batch = collate([_item([[1, 2]], [[3], [4]], 0), _item([[5], [6], [7]], [[8]], 1)])
    assert batch["input_grid"].tolist() == [[[1, 2], [-1, -1], [-1, -1]], [[5, -1], [6, -1], [7, -1]]]
    assert batch["target_grid"].tolist() == [[[3, -1], [4, -1], [-1, -1]], [[8, -1], [-1, -1], [-1, -1]]]
    assert batch["grid_shape"].tolist() == [[1, 2], [3, 1]]
    assert batch["target_grid_shape"].tolist() == [[2, 1], [1, 1]]
    assert batch["grid_shape"].dtype == torch.long and batch["input"].shape == (2, 3, 4, 4)
    assert batch["index"].tolist() == [0, 1] and batch["split"] == ["train", "train"]
    assert batch["sequence"] == [("rot90", "translate_up")] * 2 and batch["task_key"] == [None, None]
    assert [g.tolist() for g in grid_list(batch)] == [[[1, 2]], [[5], [6], [7]]]


def test_collate_rejects_mixed_image_sizes() -> None:
    other = _item([[1]], [[1]], 1)
    other["input"] = torch.zeros(3, 5, 5)
    with pytest.raises(DataError, match="cannot batch 'input'"):
        collate([_item([[1]], [[1]], 0), other])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=5))
def test_collate_padding_keeps_every_grid(shapes: list[tuple[int, int]]) -> None:
    rng = np.random.default_rng(len(shapes))
    grids = [rng.integers(0, 10, size=shape) for shape in shapes]
    items = [{"input_grid": torch.from_numpy(g), "target_grid": torch.from_numpy(g.T.copy())} for g in grids]
    batch = collate(items)
    for grid, padded in zip(grids, grid_list(batch)):
        assert np.array_equal(padded.numpy(), grid)
    assert int((batch["input_grid"] >= 0).sum()) == sum(h * w for h, w in shapes)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 7), st.integers(1, 7)), min_size=0, max_size=6))
def test_grid_columns_round_trip_through_arrow(shapes: list[tuple[int, int]]) -> None:
    from vision_bench.data.datasets import GridColumn
    from vision_bench.data.records import grid_array

    rng = np.random.default_rng(len(shapes))
    grids = [rng.integers(0, 10, size=shape).astype(np.uint8) for shape in shapes]
    array = grid_array(grids)
    assert array.to_pylist() == [grid.tolist() for grid in grids]
    column = GridColumn(pa.chunked_array([array], type=array.type))
    for i, grid in enumerate(grids):
        assert np.array_equal(column[i], grid)


def test_pool_runs_tasks_in_spawned_workers_and_reports_a_dead_one() -> None:
    from vision_bench.io.pool import run_tasks

    # builtins as tasks: spawned workers unpickle them without importing this test module
    assert sorted(run_tasks(abs, [-1, 2, -3, 4], workers=2)) == [1, 2, 3, 4]
    assert list(run_tasks(abs, [-5], workers=1)) == [5]
    with pytest.raises(DataError, match="a worker process died"):
        list(run_tasks(os._exit, [3, 3], workers=2))
    with pytest.raises(DataError, match="--workers must be at least 1"):
        list(run_tasks(abs, [1], workers=0))
