"""The folders a command writes into: never through a folder link placed in the output folder, the
rollout under --out, no --out that holds another tool's files, and an `evaluate --rollout` that cannot
finish refused before it evaluates (reliability round two, items 2, 3, 4 and 16).

Every case uses the real thing: real symbolic links, real runs and exports, a real read-only mount.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_errors import cli_error

from vision_bench.cli import main
from vision_bench.errors import ConfigError
from vision_bench.io.atomic import output_folder

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml"
TINY_TRAIN = ["--set", "dataset.n_train=4", "--set", "dataset.n_val=2", "--set", "dataset.spec.size=[32,32]",
              "--set", "training.batch_size=4", "--set", "training.eval_batch_size=4",
              "--set", "training.max_steps=1", "--no-progress"]
EVALUATE = ["--n-test", "2", "--baselines", "", "--batch-size", "4", "--no-progress", "--offline"]
SMALL_EXPORT = ["--study", "envgen/G1/1", "--n-train", "2", "--n-val", "1", "--n-test", "1", "--format", "grids",
                "--no-progress"]
TINY_BENCH = """\
experiments: [envgen/G1/1]
models: [{name: vit:test_vit, options: {patch_size: 16}}]
seeds: [0]
baselines: []
data: {n_train: 4, n_val: 2, n_test: 2, spec: {size: [32, 32]}}
train: {training: {batch_size: 4, eval_batch_size: 4, epochs: 1, max_steps: 1}, schedule: {warmup_steps: 1}}
evaluate: {checkpoint: last, batch_size: 4, sheet_samples: 1}
"""
RUN_SETTINGS = {"training": {"batch_size": 4, "eval_batch_size": 4, "epochs": 1, "max_steps": 1},
                "schedule": {"warmup_steps": 1}}
RUNS = {
    "worldmodel": {"dataset": {"study": "worldmodel/depth4/1", "n_train": 4, "n_val": 2, "spec": {"size": [48, 48]}},
                   "model": {"name": "vit:test_vit", "options": {"patch_size": 16, "task_conditioning": True}}},
    "envgen": {"dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": {"size": [32, 32]}},
               "model": {"name": "vit:test_vit", "options": {"patch_size": 16}}},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A world-model run and an ordinary one, one training step each (tests copy them before changing them)."""
    from vision_bench.train import TrainConfig, train

    root = tmp_path_factory.mktemp("runs")
    for name, config in RUNS.items():
        train(TrainConfig.from_dict({**RUN_SETTINGS, **config}), root / name, progress=False)
    return {name: root / name for name in RUNS}





def _listing(folder: Path) -> list[str]:
    """Every path under `folder` (links not followed)."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def _link(link: Path, target: Path) -> Path:
    """A real folder `target` (made empty) and a symbolic link to it at `link`."""
    target.mkdir(parents=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    return target


def _assert_names_the_link(line: str, link: Path) -> None:
    assert str(link) in line and "symbolic link" in line and "remove the link" in line, line


@contextmanager
def _read_only(folder: Path, contents: Path | None = None) -> Iterator[Path]:
    """`folder` as a small tmpfs holding a copy of `contents`, then remounted read-only (tests run as root)."""
    folder.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here (the read-only case needs root)")
    try:
        if contents is not None:
            shutil.copytree(contents, folder / contents.name)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


# ----------------------------------------------------------------------------- the helper


def test_output_folder_makes_real_folders_and_refuses_links_and_files(tmp_path: Path) -> None:
    made = output_folder(tmp_path / "out", "a", "b")
    assert made.is_dir() and output_folder(tmp_path / "out", "a", "b") == made
    outside = _link(tmp_path / "out" / "link", tmp_path / "outside")
    with pytest.raises(ConfigError) as refused:
        output_folder(tmp_path / "out", "link", "c")
    _assert_names_the_link(str(refused.value), tmp_path / "out" / "link")
    assert list(outside.iterdir()) == []
    (tmp_path / "out" / "file").write_text("mine")
    with pytest.raises(ConfigError, match="is a file"):
        output_folder(tmp_path / "out", "file")
    with pytest.raises(ConfigError, match="is a file"):
        output_folder(tmp_path / "out" / "file")
    assert output_folder(tmp_path / "new", "x", make=False) == tmp_path / "new" / "x"
    assert not (tmp_path / "new").exists()
    with pytest.raises(ConfigError, match="symbolic link"):
        output_folder(tmp_path / "out", "link", make=False)
    user_link = tmp_path / "chosen"  # the output folder itself may be a link its user made
    user_link.symlink_to(made, target_is_directory=True)
    assert output_folder(user_link, "d").is_dir() and (made / "d").is_dir()


# ----------------------------------------------------------------------------- item 2: folder links


def test_train_never_writes_through_a_symlinked_checkpoints_folder(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    outside = _link(run / "checkpoints", tmp_path / "outside")
    line = cli_error(["train", SMOKE, "--out", run, *TINY_TRAIN], capsys)
    _assert_names_the_link(line, run / "checkpoints")
    assert list(outside.iterdir()) == [] and _listing(run) == ["checkpoints"]


@pytest.mark.slow
def test_evaluate_never_writes_through_a_symlinked_sheets_folder(runs: dict[str, Path], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ev"
    outside = _link(out / "sheets", tmp_path / "outside")
    line = cli_error(["evaluate", runs["envgen"], "--out", out, *EVALUATE], capsys)
    _assert_names_the_link(line, out / "sheets")
    assert list(outside.iterdir()) == [] and _listing(out) == ["sheets"]


def test_export_never_writes_through_a_symlinked_split_folder(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "export"
    assert main(["export", *SMALL_EXPORT, "--out", str(export)]) == 0
    shutil.rmtree(export / "test_id")  # a re-run rewrites a missing shard ...
    outside = _link(export / "test_id", tmp_path / "outside")  # ... but never through this link
    line = cli_error(["export", *SMALL_EXPORT, "--out", export], capsys)
    _assert_names_the_link(line, export / "test_id")
    assert list(outside.iterdir()) == []


@pytest.mark.slow
def test_a_bench_never_writes_a_cell_through_a_symlinked_folder(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    config, out = tmp_path / "bench.yaml", tmp_path / "bench"
    config.write_text(TINY_BENCH)
    assert main(["bench", str(config), "--out", str(out), "--no-progress", "--offline"]) == 0
    cell = next((out / "runs" / "envgen_G1_1").iterdir()) / "seed1"  # the cell a second seed adds
    outside = _link(cell, tmp_path / "outside")
    line = cli_error(["bench", config, "--out", out, "--set", "seeds=[0,1]", "--no-progress", "--offline"], capsys)
    _assert_names_the_link(line, cell)
    assert list(outside.iterdir()) == []


# ----------------------------------------------------------------------------- item 3: the rollout under --out


@pytest.mark.slow
def test_evaluate_rollout_writes_under_out_and_never_through_a_link(runs: dict[str, Path], tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = Path(shutil.copytree(runs["worldmodel"], tmp_path / "run"))
    old_place = _link(run / "rollout", tmp_path / "outside")  # where the rollout used to go
    assert main(["evaluate", str(run), "--rollout", "image", *EVALUATE]) == 0
    assert (run / "evaluation" / "rollout" / "rollout.json").is_file()
    assert (run / "evaluation" / "rollout" / "sheet_test_id.png").is_file()
    assert list(old_place.iterdir()) == []
    out = tmp_path / "ev"
    outside = _link(out / "rollout", tmp_path / "outside-2")
    line = cli_error(["evaluate", run, "--rollout", "grid", "--out", out, *EVALUATE], capsys)
    _assert_names_the_link(line, out / "rollout")
    assert list(outside.iterdir()) == [] and _listing(out) == ["rollout"]  # refused before evaluating


# ----------------------------------------------------------------------------- item 16: check first


@pytest.mark.slow
def test_evaluate_rollout_of_a_run_that_is_no_world_model_is_refused_before_evaluating(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ev"
    line = cli_error(["evaluate", runs["envgen"], "--rollout", "image", "--out", out, *EVALUATE], capsys)
    assert "not a world-model study" in line and "worldmodel/" in line
    assert not out.exists()


@pytest.mark.slow
def test_evaluate_rollout_of_a_read_only_run_folder_writes_under_out(runs: dict[str, Path], tmp_path: Path) -> None:
    with _read_only(tmp_path / "ro", runs["worldmodel"]) as read_only:
        out = tmp_path / "ev"
        assert main(["evaluate", str(read_only / "worldmodel"), "--rollout", "image", "--out", str(out),
                     *EVALUATE]) == 0
        assert (out / "metrics.json").is_file() and (out / "rollout" / "rollout.json").is_file()


@pytest.mark.slow
def test_evaluate_rollout_into_a_read_only_out_is_refused_before_evaluating(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _read_only(tmp_path / "ro") as read_only:
        line = cli_error(["evaluate", runs["worldmodel"], "--rollout", "image", "--out", read_only, *EVALUATE], capsys)
    assert "Read-only file system" in line and str(read_only) in line and "choose" in line  # names the fix


# ----------------------------------------------------------------------------- item 4: another tool's folder


def _assert_outcli_error(command: str, out: Path, holds: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`command` (bench or train) with --out OUT is refused, naming what OUT holds, and OUT is left as it was."""
    before = _listing(out)
    if command == "bench":
        (out.parent / "bench.yaml").write_text(TINY_BENCH)
        argv = ["bench", out.parent / "bench.yaml", "--out", out, "--no-progress", "--offline"]
    else:
        argv = ["train", SMOKE, "--out", out, *TINY_TRAIN]
    line = cli_error(argv, capsys)
    assert f"--out {out} holds {holds}" in line and "new or empty folder" in line, line
    assert _listing(out) == before


@pytest.mark.parametrize("command", ["bench", "train"])
def test_an_out_that_holds_an_export_iscli_error(command: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "export"
    assert main(["export", *SMALL_EXPORT, "--out", str(out)]) == 0
    _assert_outcli_error(command, out, "a dataset export", capsys)


@pytest.mark.slow
def test_bench_refuses_an_out_that_holds_a_training_run(runs: dict[str, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = Path(shutil.copytree(runs["envgen"], tmp_path / "run"))
    _assert_outcli_error("bench", out, "a training run", capsys)
