"""Task files: generated Parquet round trip and atomic writes, COGITAO Parquet and ARC JSON import, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vision_bench.errors import GridError
from vision_bench.tasks.formats import (
    PROJECT_COLUMNS,
    PUBLIC_COLUMNS,
    TaskFileError,
    read_tasks,
    table_of,
    write_parquet,
    write_tables,
)
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.studies import get_study


@pytest.fixture(scope="module")
def samples() -> list[TaskSample]:
    return generate_split(get_study("compgen/C3/1", n_train=25, n_val=1, n_test=1), "train")


def test_generated_parquet_round_trips_every_field(samples: list[TaskSample], tmp_path: Path) -> None:
    path = tmp_path / "nested" / "train.parquet"
    assert write_parquet(samples, path) == len(samples)
    assert read_tasks(path) == samples
    assert sorted(p.name for p in path.parent.iterdir()) == ["train.parquet"]
    table = pq.read_table(path)
    assert table.column_names == [*PUBLIC_COLUMNS, *PROJECT_COLUMNS]
    first = table.slice(0, 1).to_pylist()[0]
    assert first["input"] == samples[0].input.tolist() and first["output"] == samples[0].output.tolist()
    assert first["transformation_suite"] == list(samples[0].sequence)
    assert first["task_key"] == "-".join(samples[0].sequence)
    assert (first["height"], first["width"]) == samples[0].input.shape
    assert json.loads(first["objects"]) == list(samples[0].objects)
    assert [np.array(f).tolist() for f in first["frames"]] == [f.tolist() for f in samples[0].frames]


def test_small_row_groups_and_empty_files(
    samples: list[TaskSample], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("vision_bench.tasks.formats.ROW_GROUP", 4)
    write_parquet(iter(samples), tmp_path / "groups.parquet")
    assert pq.ParquetFile(tmp_path / "groups.parquet").num_row_groups == 7
    assert read_tasks(tmp_path / "groups.parquet") == samples
    write_parquet([], tmp_path / "empty.parquet")
    assert read_tasks(tmp_path / "empty.parquet") == []


def test_file_bytes_do_not_depend_on_how_rows_were_split_into_tables(
        samples: list[TaskSample], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("vision_bench.tasks.formats.ROW_GROUP", 10)
    splits = {"one": [samples], "fives": [samples[i:i + 5] for i in range(0, 25, 5)],
              "uneven": [samples[:3], samples[3:24], samples[24:]]}
    for name, parts in splits.items():
        assert write_tables((table_of(part) for part in parts), tmp_path / f"{name}.parquet") == len(samples)
    write_parquet(samples, tmp_path / "samples.parquet")
    assert pq.ParquetFile(tmp_path / "uneven.parquet").num_row_groups == 3
    contents = {path.read_bytes() for path in tmp_path.iterdir()}
    assert len(contents) == 1


def test_a_failed_write_leaves_nothing_behind(samples: list[TaskSample], tmp_path: Path) -> None:
    def broken():
        yield from samples[:3]
        raise RuntimeError("generation failed")

    with pytest.raises(RuntimeError):
        write_parquet(broken(), tmp_path / "train.parquet")
    assert list(tmp_path.iterdir()) == []
    write_parquet(samples[:2], tmp_path / "train.parquet")
    with pytest.raises(RuntimeError):
        write_parquet(broken(), tmp_path / "train.parquet")
    assert read_tasks(tmp_path / "train.parquet") == samples[:2]
    assert [p.name for p in tmp_path.iterdir()] == ["train.parquet"]


def test_cogitao_parquet_keeps_the_public_columns(tmp_path: Path) -> None:
    table = pa.table({
        "input": [[[0, 1], [0, 0]], [[2]]],
        "output": [[[1, 0], [0, 0]], [[3]]],
        "transformation_suite": [["translate_left"], ["change_shape_color", "rot90"]],
        "task_key": ["translate_left", "change_shape_color-rot90"],
        "extra": [1, 2],
    })
    pq.write_table(table, tmp_path / "test_ood.parquet")
    first, second = read_tasks(tmp_path / "test_ood.parquet")
    assert first.input.tolist() == [[0, 1], [0, 0]] and first.output.tolist() == [[1, 0], [0, 0]]
    assert first.input.dtype == np.uint8 and len(first.frames) == 2 and first.objects == ()
    assert first.sequence == ("translate_left",) and first.task_code == (3, 0, 0, 0)
    assert second.task_code == (13, 5, 0, 0) and second.task_key == "change_shape_color-rot90"
    assert (second.split, second.index, second.seed) == ("test_ood", 1, None)
    pq.write_table(table, tmp_path / "part-0.parquet")
    assert read_tasks(tmp_path / "part-0.parquet")[0].split == "train"


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"input": [[[0]]], "output": [[[0]]]}, "missing column\\(s\\) transformation_suite, task_key"),
        ({"input": [[[0, 1], [0]]], "output": [[[0]]], "transformation_suite": [[]], "task_key": [""]},
         "grid 0 is empty or not rectangular"),
        ({"input": [[[0, 11]]], "output": [[[0]]], "transformation_suite": [[]], "task_key": [""]},
         "cell \\(0, 1\\) is 11"),
        ({"input": [[[1]]], "output": [[[1]]], "transformation_suite": [["spin"]], "task_key": ["spin"]},
         "row 0: transformation_suite \\['spin'\\]"),
    ],
)
def test_malformed_parquet_names_the_file(columns: dict, message: str, tmp_path: Path) -> None:
    pq.write_table(pa.table(columns), tmp_path / "bad.parquet")
    with pytest.raises(TaskFileError, match=f"bad.parquet: .*{message}"):
        read_tasks(tmp_path / "bad.parquet")


def test_arc_json_files_and_folders(tmp_path: Path) -> None:
    task = {"train": [{"input": [[1, 0]], "output": [[0, 1]]}, {"input": [[2]], "output": [[2, 2]]}],
            "test": [{"input": [[3]], "output": [[4]]}]}
    (tmp_path / "abc123.json").write_text(json.dumps(task))
    (tmp_path / "def456.json").write_text(json.dumps({"train": [], "test": [{"input": [[5]], "output": [[6]]}]}))
    records = read_tasks(tmp_path / "abc123.json")
    assert [(r.task_key, r.split, r.index) for r in records] == [("abc123", "train", 0), ("abc123", "train", 1),
                                                                  ("abc123", "test", 0)]
    assert records[1].output.tolist() == [[2, 2]] and records[1].sequence == () and records[1].task_code == (0, 0, 0, 0)
    assert [r.task_key for r in read_tasks(tmp_path)] == ["abc123"] * 3 + ["def456"]


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("{not json", TaskFileError, "broken.json: not valid JSON"),
        ('{"train": []}', TaskFileError, "broken.json: an ARC task needs 'train' and 'test'"),
        ('{"train": [{"input": [[1]]}], "test": []}', TaskFileError, "train\\[0\\] must be an object"),
        ('{"train": [], "test": [{"input": [[1, 2], [3]], "output": [[1]]}]}', GridError,
         "broken.json: test\\[0\\].input: not rectangular"),
    ],
)
def test_malformed_arc_files_name_the_file(text: str, error: type, message: str, tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text(text)
    with pytest.raises(error, match=message):
        read_tasks(tmp_path / "broken.json")


def test_unreadable_inputs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_tasks(tmp_path / "missing.parquet")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(TaskFileError, match="unknown task file type"):
        read_tasks(tmp_path / "notes.txt")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(TaskFileError, match="junk.parquet: not a readable Parquet file"):
        read_tasks(tmp_path / "junk.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskFileError, match="no .json or .parquet task files"):
        read_tasks(tmp_path / "empty")


def test_reads_all_400_arc_training_tasks(arc_dir: Path) -> None:
    records = read_tasks(arc_dir)
    files = sorted(arc_dir.glob("*.json"))
    assert len(files) == 400 and len({r.task_key for r in records}) == 400
    expected = sum(len(json.loads(f.read_text())[split]) for f in files for split in ("train", "test"))
    assert len(records) == expected
    assert {r.split for r in records} == {"train", "test"}
    assert all(1 <= side <= 30 for r in records for side in (*r.input.shape, *r.output.shape))
    first = json.loads(files[0].read_text())
    assert records[0].input.tolist() == first["train"][0]["input"] and records[0].task_key == files[0].stem


# --- export formats (vision_bench.data.export_formats) --------------------------------------------


def test_export_format_entries_say_what_each_format_stores() -> None:
    from vision_bench.data.export_formats import FORMATS, formats_that_store

    assert FORMATS.names() == ["grids", "folder", "parquet", "webdataset"]
    assert formats_that_store(frames=True) == ["folder", "webdataset"]
    assert formats_that_store(masks=True) == ["folder", "parquet", "webdataset"]
    assert [name for name, entry in FORMATS.items() if not entry.images] == ["grids"]
    readers = {name: FORMATS[name].reader_class().__name__ for name in FORMATS}
    assert readers == {"grids": "GridsDataset", "folder": "FolderDataset", "parquet": "ParquetImageDataset",
                       "webdataset": "WebDatasetDataset"}
    for _, entry in FORMATS.items():
        writer = entry.module()
        assert callable(writer.write_shard) and callable(writer.count_samples)


@pytest.mark.parametrize(("format_name", "flags", "message"), [
    ("grids", {"frames": True, "masks": True},
     "--frames and --masks: need an image format that stores them (folder, webdataset), not grids"),
    ("parquet", {"frames": True}, "--frames: need an image format that stores them (folder, webdataset), not parquet"),
    ("parquet", {"frames": True, "masks": True},
     "--frames: need an image format that stores them (folder, webdataset), not parquet"),
])
def test_export_options_refuse_what_the_format_cannot_store(format_name: str, flags: dict[str, bool],
                                                           message: str) -> None:
    from vision_bench.data.export_formats import ExportOptions
    from vision_bench.errors import DataError

    with pytest.raises(DataError) as raised:
        ExportOptions(format=format_name, **flags)
    assert str(raised.value) == message
    assert ExportOptions(format="parquet", masks=True).masks
