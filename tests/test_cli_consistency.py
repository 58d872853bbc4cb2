"""One command line: the same switches mean the same in every command (progress, device, --set,
image format, render options), `--help` states every default, and target images have one name."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml

from render import RenderSpec, load
from vision_bench.cli import HelpFormatter, build_parser, main
from vision_bench.commands import show
from vision_bench.commands._render_options import spec_from_args

ROOT = Path(__file__).resolve().parents[1]
TRAIN_CONFIG = ROOT / "configs" / "train_smoke.yaml"
LONG_COMMANDS = ("generate", "export", "render", "evaluate", "score", "train", "compare-metrics", "verify")
MODEL_COMMANDS = ("train", "evaluate", "score")
UNSET = (None, False, "", [], (), argparse.SUPPRESS)
REQUIRED = {  # the arguments each command cannot parse without
    "generate": ("--study", "envgen/G1/1", "--out", "x"),
    "export": ("--study", "envgen/G1/1", "--out", "x"),
    "render": ("tasks.json", "--out", "x"),
    "evaluate": ("run",),
    "score": ("a.png", "b.png"),
    "train": ("config.yaml",),
    "compare-metrics": ("--out", "x"),
    "verify": ("x",),
}


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every (nested) sub-command parser by its full name, e.g. 'weights get'."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found[name] = child
                found.update({f"{name} {inner}": p for inner, p in subparsers(child).items()})
    return found


COMMANDS = subparsers(build_parser())


def options(command: str) -> dict[str, argparse.Action]:
    return {option: action for action in COMMANDS[command]._actions for option in action.option_strings}


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def one_error_line(capsys: pytest.CaptureFixture[str], command: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"vision-bench {command}: error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture()
def task_file(tmp_path: Path) -> Path:
    """An ARC task with non-square grids: a 2x6 input of color 1, a 6x2 output of color 2."""
    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"train": [{"input": [[1] * 6] * 2, "output": [[2] * 2] * 6}], "test": []}))
    return path


@pytest.mark.parametrize("command", LONG_COMMANDS)
def test_every_long_command_has_the_progress_switches(command: str) -> None:
    assert {"--no-progress", "--quiet"} <= set(options(command))
    assert parse(command, *REQUIRED[command], "--quiet").quiet is True


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_every_model_running_command_has_device(command: str) -> None:
    assert parse(command, *REQUIRED[command], "--device", "cuda:1").device == "cuda:1"
    assert options(command)["--device"].default == (None if command == "train" else "auto")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_states_every_default(command: str) -> None:
    parser = COMMANDS[command]
    assert parser.formatter_class is HelpFormatter
    formatter = HelpFormatter(prog=parser.prog)
    for action in parser._actions:
        if action.help not in (None, argparse.SUPPRESS) and action.default not in UNSET:
            assert "default" in formatter._get_help_string(action), (command, action.option_strings)
    assert "usage:" in parser.format_help()


def test_help_appends_a_default_once_and_only_where_there_is_one() -> None:
    help_text = " ".join(COMMANDS["export"].format_help().split())
    assert "local worker processes (default: 1)" in help_text
    assert "images are rendered when read (default); folder:" in help_text  # the default named once, in place
    assert "also write intermediate frames (folder, webdataset) --masks" in help_text  # a switch: no default
    show_help = " ".join(COMMANDS["show"].format_help().split())
    assert "number of pairs to show (default 8) --spec" in show_help  # stated once, in the help's own words


def test_render_option_help_states_the_spec_defaults() -> None:
    spec, help_text = RenderSpec(), " ".join(COMMANDS["render"].format_help().split())
    assert f"(default: {spec.size[0]} {spec.size[1]})" in help_text
    for value in (spec.palette, spec.background, spec.layout.mode, spec.blur.kind):
        assert f"(default: {value})" in help_text


def test_show_takes_render_options_and_fits_by_default() -> None:
    assert {"--spec", "--size", "--palette", "--background", "--layout", "--blur"} <= set(options("show"))
    assert spec_from_args(parse("show", "t.json", "--out", "s.png"), layout=show.LAYOUT) == RenderSpec(layout="fit")
    custom = parse("show", "t.json", "--out", "s.png", "--size", "64", "32", "--layout", "stretch", "--blur", "box:3")
    assert spec_from_args(custom, layout=show.LAYOUT) == RenderSpec(size=(64, 32), blur="box:3")


def test_show_keeps_the_aspect_of_non_square_grids(task_file: Path, tmp_path: Path, monkeypatch) -> None:
    drawn: dict[str, Any] = {}
    draw = show._contact_sheet

    def capture(records: list[Any], inputs: Any, targets: Any) -> Any:
        drawn.update(inputs=inputs, targets=targets)
        return draw(records, inputs, targets)

    monkeypatch.setattr(show, "_contact_sheet", capture)
    assert main(["show", str(task_file), "--out", str(tmp_path / "sheet.png")]) == 0
    background = RenderSpec().colors(0)[0]
    for images, (height, width) in ((drawn["inputs"], (2, 6)), (drawn["targets"], (6, 2))):
        rows, columns = np.nonzero((images[0] != background).any(axis=-1))
        box = (rows.max() - rows.min() + 1, columns.max() - columns.min() + 1)
        assert box[0] * width == box[1] * height  # square cells: the grid's aspect ratio is kept
        assert max(box) >= 120  # and it fills the 128-pixel canvas along its long side


def test_render_names_the_target_image_as_export_does(task_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "images"
    assert main(["render", str(task_file), "--out", str(out), "--image-format", "jpeg", "--quiet"]) == 0
    assert sorted(p.name for p in (out / "train").iterdir()) == ["wide_0_input.jpg", "wide_0_target.jpg"]
    entry = json.loads((out / "images.jsonl").read_text())
    assert (entry["target"], entry["target_shape"]) == ("train/wide_0_target.jpg", [6, 2])
    assert load(out / entry["target"]).shape == (128, 128, 3)


@pytest.mark.parametrize(("command", "old"), [("render", "--format"), ("export", "--format-image")])
def test_image_format_is_one_flag_and_the_old_spelling_still_works(command: str, old: str) -> None:
    assert parse(command, *REQUIRED[command]).image_format == "png"
    assert parse(command, *REQUIRED[command], "--image-format", "jpeg").image_format == "jpeg"
    assert parse(command, *REQUIRED[command], old, "jpeg").image_format == "jpeg"
    assert old not in COMMANDS[command].format_help()
    if command == "export":
        assert parse(command, *REQUIRED[command], "--format", "folder").format == "folder"


def test_the_old_spelling_prints_one_deprecation_line(task_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "images"
    assert main(["render", str(task_file), "--out", str(out), "--format", "jpeg"]) == 0
    assert capsys.readouterr().err == (
        "vision-bench render: --format is deprecated and will be removed in the next release; use --image-format\n"
    )
    assert (out / "train" / "wide_0_target.jpg").is_file()


@pytest.mark.slow  # imports torch and timm (about 3 s on their own)
def test_train_applies_set_seed_and_device_to_the_config(tmp_path: Path, monkeypatch) -> None:
    import vision_bench.train

    seen = {}

    def fake_train(config: Any, run_dir: Path, **options: Any) -> SimpleNamespace:
        seen.update(config=config, run_dir=run_dir, options=options)
        return SimpleNamespace(notes=[], final_metrics={}, best_checkpoint=None, step=0, run_dir=run_dir)

    monkeypatch.setattr(vision_bench.train, "train", fake_train)
    argv = ["train", str(TRAIN_CONFIG), "--out", str(tmp_path / "run"), "--set", "training.epochs=1",
            "--set", "dataset.spec.size=[32, 32]", "--set", "model.options={decoder_width: 4}",
            "--seed", "7", "--device", "cpu", "--no-progress"]
    assert main(argv) == 0
    config = seen["config"]
    assert (config.training.epochs, config.dataset.spec, config.model.options) == (1, {"size": [32, 32]},
                                                                                   {"decoder_width": 4})
    assert (config.seed, config.runtime.device, seen["options"]["progress"]) == (7, "cpu", False)
    assert config.training.batch_size == 16  # the rest is the file's
    assert main(argv[:4]) == 0 and (seen["config"].seed, seen["config"].runtime.device) == (0, "auto")


@pytest.mark.parametrize(
    ("command", "override", "message"),
    [
        ("train", "training.epoch=3", "--set training.epoch=3: training has no key 'epoch'; did you mean 'epochs'?"),
        ("generate", "grid.sise=10",
         "--set grid.sise=10: the config has no key 'grid'; did you mean 'grid_height' or 'grid_width'?"),
        ("export", "splits.test_ood.grid_hieght=5",
         "splits.test_ood has no key 'grid_hieght'; did you mean 'grid_height' or 'grid_width'?"),
        ("train", "training.epochs=abc", "training.epochs: Input should be a valid integer"),
        ("generate", "n_objects=[1, -2]", "n_objects.1: must be at least 1, got -2; set it to 1 or more"),
        ("train", "training.epochs=[1", "--set 'training.epochs=[1': the value is not valid YAML"),
        ("export", "samples.train", "--set 'samples.train': expected KEY.PATH=VALUE"),
        ("train", "seed.value=1", "--set seed.value=1: seed holds a value (0), not a section of keys"),
    ],
)
def test_set_is_validated_like_the_file(
    command: str, override: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    source = ([str(TRAIN_CONFIG)] if command == "train"
              else ["--config", str(ROOT / "configs/reference_generation.yaml")])
    assert main([command, *source, "--out", str(out), "--set", override]) == 2
    assert message in one_error_line(capsys, command)
    assert not out.exists()


def test_set_names_every_key_of_the_section_when_nothing_is_close(capsys) -> None:
    assert main(["generate", "--study", "envgen/G1/1", "--out", "x", "--set", "zzz=1"]) == 2
    error = one_error_line(capsys, "generate")
    assert "the config has no key 'zzz' (its keys: description, seed, grid_height," in error
    assert "did you mean" not in error


def test_generate_applies_set_to_a_config_file_and_a_study(tmp_path: Path) -> None:
    config = ROOT / "configs" / "reference_generation.yaml"
    counts = ["--n-train", "2", "--n-val", "1", "--n-test", "1"]
    assert main(["generate", "--config", str(config), "--out", str(tmp_path / "file"), *counts,
                 "--set", "grid_height=12", "--set", "object_filter.max_width=3", "--quiet"]) == 0
    manifest = json.loads((tmp_path / "file" / "manifest.json").read_text())
    assert manifest["config"]["grid_height"] == [12, 12] and manifest["config"]["grid_width"] == [20, 20]
    assert manifest["config"]["object_filter"] == {"max_height": 5, "max_width": 3}
    assert manifest["overrides"] == ["grid_height=12", "object_filter.max_width=3"]
    assert main(["generate", "--study", "envgen/G1/1", "--out", str(tmp_path / "study"), *counts,
                 "--set", "seed=5", "--quiet"]) == 0
    manifest = json.loads((tmp_path / "study" / "manifest.json").read_text())
    assert (manifest["seed"], manifest["counts"]["train"]) == (5, 2)


class RecordingBar:
    """Stands in for tqdm: records the total the export announces and the samples it reports."""

    made: ClassVar[list[RecordingBar]] = []

    def __init__(self, *args: Any, **options: Any) -> None:
        self.total, self.n, self.disable = options.get("total"), 0, options.get("disable")
        RecordingBar.made.append(self)

    def __enter__(self) -> RecordingBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def reset(self, total: int | None = None) -> None:
        self.total, self.n = total, 0

    def update(self, n: int = 1) -> None:
        self.n += n


def test_export_progress_has_a_total_and_set_reaches_the_export(tmp_path: Path, monkeypatch) -> None:
    import tqdm

    monkeypatch.setattr(tqdm, "tqdm", RecordingBar)
    RecordingBar.made.clear()
    out = tmp_path / "data"
    argv = ["export", "--study", "envgen/G1/1", "--out", str(out), "--n-train", "5", "--n-val", "1",
            "--n-test", "1", "--shard-size", "2", "--set", "samples.train=3"]
    assert main([*argv, "--image-format", "jpeg"]) == 0
    bar = RecordingBar.made[-1]
    assert (bar.total, bar.n) == (7, 7)  # 3 training samples (--set wins over --n-train for a study) + 4
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settings"]["config"]["samples"]["train"] == 3
    assert manifest["settings"]["options"]["image_format"] == "jpeg"
    assert main([*argv, "--image-format", "jpeg", "--no-progress"]) == 0  # complete: nothing left to write
    assert RecordingBar.made[-1].disable is True and RecordingBar.made[-1].n == 0


def readme_output_folders() -> list[str]:
    """The relative `--out X` paths of the commands in README's shell code blocks (an absolute path, such as a
    cluster's shared folder, is outside the repository)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    found = {match for block in blocks for match in re.findall(r"--out\s+(\S+)", block)}
    return sorted(path for path in found if not path.startswith(("/", "$", "~")))


def ignored(path: str) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], check=False, cwd=ROOT).returncode == 0


def test_readme_example_outputs_are_ignored_by_git() -> None:
    folders = readme_output_folders()
    assert {"data/g1", "runs/smoke", "tasks/c1_1"} <= set(folders)
    for folder in folders:
        probe = f"{folder}/file" if not Path(folder).suffix else folder
        assert ignored(probe), f"{folder} is not in .gitignore"
    for tracked in ("vision_bench/bench/runner.py", "vision_bench/data/export.py", "samples/quickstart/report.md",
                    "tests/data/golden_generator.json"):
        assert not ignored(tracked), f"{tracked} would be ignored"


def test_set_values_are_read_as_yaml() -> None:
    """`--set` values are read as YAML: numbers, lists and mappings arrive typed, as in the file."""
    from vision_bench.config_files import apply_overrides

    data = yaml.safe_load(TRAIN_CONFIG.read_text())
    changed = apply_overrides(data, ["optimizer.betas=[0.8, 0.9]", "runtime={device: cpu}", "model.name=unet:x"])
    assert changed["optimizer"] == {"lr": 0.01, "betas": [0.8, 0.9]}
    assert (changed["runtime"], changed["model"]["name"]) == ({"device": "cpu"}, "unet:x")
    assert data["optimizer"] == {"lr": 0.01}  # the parsed file itself is left alone
