"""`vision-bench render` and `vision-bench show` through the command-line entry point."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from render import RenderSpec, decode, load
from vision_bench.cli import main
from vision_bench.tasks.formats import read_tasks

TASKS = ("007bbfb7", "00d62c1b")


@pytest.fixture()
def task_folder(tmp_path: Path, arc_dir: Path) -> Path:
    folder = tmp_path / "arc"
    folder.mkdir()
    for name in TASKS:
        shutil.copy(arc_dir / f"{name}.json", folder)
    return folder


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_render_writes_every_pair_decodably(task_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "images"
    assert main(["render", str(task_folder), "--out", str(out), "--layout", "fit", "--size", "96", "96"]) == 0
    records = read_tasks(task_folder)
    entries = [json.loads(line) for line in (out / "images.jsonl").read_text().splitlines()]
    assert len(entries) == len(records) and len(records) > 10
    spec = RenderSpec.from_yaml(out / "render_spec.yaml")
    assert spec == RenderSpec(layout="fit", size=(96, 96))
    for record, entry in zip(records, entries):
        stem = f"{record.split}/{record.task_key}_{record.index}"
        assert (entry["input"], entry["target"]) == (f"{stem}_input.png", f"{stem}_target.png")
        assert entry["seed"] == entries.index(entry)
        for role, grid in (("input", record.input), ("target", record.output)):
            image = load(out / entry[role])
            assert image.shape == (96, 96, 3)
            assert entry[f"{role}_shape"] == list(np.shape(grid))
            assert np.array_equal(decode(image, spec, entry[f"{role}_shape"], seed=entry["seed"]), grid)
    assert leftovers(tmp_path) == []


def test_render_jpeg_with_quality_and_a_spec_file(task_folder: Path, tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(RenderSpec(palette="arc", background="random", size=(64, 64)).to_yaml())
    out = tmp_path / "jpeg"
    arguments = ["render", str(task_folder), "--out", str(out), "--spec", str(spec_file), "--blur", "gaussian:1"]
    assert main([*arguments, "--image-format", "jpeg", "--quality", "90"]) == 0
    spec = RenderSpec.from_yaml(out / "render_spec.yaml")
    assert (spec.palette, spec.background, spec.blur.sigma) == ("arc", "random", 1.0)
    first = json.loads((out / "images.jsonl").read_text().splitlines()[0])
    assert first["input"].endswith("_input.jpg") and first["target"].endswith("_target.jpg")
    assert (out / first["input"]).read_bytes()[:2] == b"\xff\xd8"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--palette", "acr"], "unknown palette 'acr'; did you mean 'arc'"),
        (["--size", "8", "8"], "grid does not fit 8x8 pixels with layout 'stretch'"),
        (["--layout", "cell:5", "--size", "32", "32"],
         "does not fit 32x32 pixels with layout 'cell' and 5-pixel cells"),
        (["--quality", "90"], "--quality applies to --image-format jpeg only"),
        (["--blur", "gaussian:-1"], "gaussian blur needs sigma"),
    ],
)
def test_errors_are_one_line_and_leave_nothing(
    task_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    out = tmp_path / "images"
    assert main(["render", str(task_folder), "--out", str(out), *options]) == 2
    error = capsys.readouterr().err
    assert error.startswith("vision-bench render: error: ") and message in error and error.count("\n") == 1
    assert not out.exists() and leftovers(tmp_path) == []


def test_render_refuses_a_non_empty_output_directory(task_folder: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "images"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["render", str(task_folder), "--out", str(out)]) == 2
    assert "exists and is not an empty directory" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_show_writes_a_contact_sheet(task_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet = tmp_path / "sheets" / "sheet.png"
    assert main(["show", str(task_folder), "--out", str(sheet), "--n", "5"]) == 0
    image = load(sheet)
    assert image.shape[0] > 200 and image.shape[1] > 800
    assert (image != 255).any(axis=-1).mean() > 0.05
    assert "wrote 5 pairs" in capsys.readouterr().out
    assert leftovers(sheet.parent) == []
    assert main(["show", str(task_folder), "--out", str(sheet), "--n", "0"]) == 2


def test_show_names_the_input_and_the_target_of_every_pair() -> None:
    pytest.importorskip("matplotlib")
    from vision_bench.commands.show import _contact_sheet
    from vision_bench.tasks.sample import TaskSample

    grid = np.zeros((3, 3), np.int64)
    records = [TaskSample(grid, grid, sequence=("translate_up", "rot90") if i else (), task_key="t", index=i)
               for i in range(5)]
    images = np.zeros((5, 8, 8, 3), np.uint8)
    figure = _contact_sheet(records, images, images)
    drawn = [axis for axis in figure.axes if axis.images]
    assert [axis.get_xlabel() for axis in drawn] == ["input", "target"] * 5
    assert drawn[3].get_title() == "translate_up → rot90" and drawn[1].get_title() == ""  # no sequence, no title
