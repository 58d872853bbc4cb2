"""Names from data files never become paths outside the output folder, and `verify` never reads
outside the export (the shared checks of `vision_bench.data.names`)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from render import RenderSpec
from vision_bench.cli import main
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.manifest import MANIFEST_NAME
from vision_bench.data.names import UnsafeNameError, check_component, check_relative_path, safe_name
from vision_bench.tasks.config import TaskConfig


def generated_parquet(tmp_path: Path, split_value: str) -> Path:
    tasks = tmp_path / "tasks"
    assert main(["generate", "--study", "envgen/G1/1", "--out", str(tasks), "--n-train", "2", "--n-val", "1",
                 "--n-test", "1"]) == 0
    table = pq.read_table(tasks / "train.parquet")
    column = table.schema.get_field_index("split")
    table = table.set_column(column, "split", pa.array([split_value] * table.num_rows, pa.string()))
    evil = tmp_path / "evil.parquet"
    pq.write_table(table, evil)
    return evil


@pytest.mark.parametrize("split", ["..", ".", "a/../..", "/etc", "x\\..\\.."])
def test_render_refuses_a_split_that_would_leave_the_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split: str
) -> None:
    evil = generated_parquet(tmp_path, split)
    out = tmp_path / "data" / "images"
    before = sorted(p.name for p in (tmp_path / "data").glob("*")) if (tmp_path / "data").exists() else []
    capsys.readouterr()
    assert main(["render", str(evil), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be used as a file or folder name" in err[0] and "Traceback" not in err[0]
    assert not out.exists()
    assert not list((tmp_path / "data").glob("*_input.png")) and not list(tmp_path.glob("*_output.png"))
    assert sorted(p.name for p in (tmp_path / "data").glob("*")) == before


def test_verify_refuses_a_manifest_entry_outside_the_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = TaskConfig.from_dict({"transformations": ["translate_up"], "grid_height": [8, 8], "grid_width": [8, 8],
                                   "n_objects": [1, 1], "samples": {"train": 2, "val_id": 1, "val_ood": 1,
                                                                    "test_id": 1, "test_ood": 1}})
    root = tmp_path / "export"
    export_dataset(config, RenderSpec(size=(16, 16)), root, ExportOptions(format="folder", shard_size=4))
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    manifest = json.loads((root / MANIFEST_NAME).read_text())
    shard = next(iter(manifest["shards"].values()))
    shard["files"]["../secret.txt"] = {"size": 9, "sha256": "0" * 64}
    (root / MANIFEST_NAME).write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["verify", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "'../secret.txt' is not a plain relative path inside the folder" in err
    assert "9 bytes" not in err and "secret.txt: " not in err.split("file name")[-1]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "x\x00"])
def test_unsafe_components_are_refused(name: str) -> None:
    with pytest.raises(UnsafeNameError):
        check_component(name, "split name", "data.parquet")


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "C:\\x"])
def test_unsafe_relative_paths_are_refused(name: str) -> None:
    with pytest.raises(UnsafeNameError):
        check_relative_path(name, "file name", "manifest.json")


def test_safe_names_never_climb() -> None:
    assert check_relative_path("train/00000001_input.png", "file name", "m") == "train/00000001_input.png"
    assert safe_name("unet:resnet18") == "unet_resnet18"
    assert safe_name("CNN (unet:test_resnet)") == "CNN_unet_test_resnet"
    for name in ("..", ".", "", "/", "../..", "..."):
        assert safe_name(name) not in ("", ".", "..") and "/" not in safe_name(name)


def test_a_deeply_nested_arc_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["render", str(deep), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and "Traceback" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("column", [pa.array(["[[1]]", "[[2]]"]), pa.array([1, 2])])
def test_a_cogitao_file_with_wrong_grid_types_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           column: pa.Array) -> None:
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"input": column, "output": column, "transformation_suite": [["rot90"], ["rot90"]],
                             "task_key": ["a", "b"]}), path)
    assert main(["render", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "grids must be lists of rows of integers" in err and "Traceback" not in err


def test_render_into_the_current_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "task.json"
    source.write_text(json.dumps({"train": [{"input": [[1, 0]], "output": [[0, 1]]}], "test": []}))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["render", str(source), "--out", "."]) == 0
    assert (here / "train" / "task_0_input.png").is_file()
