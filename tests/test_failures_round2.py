"""Round two of the failure probe: a real full disk while saving a checkpoint or LPIPS weights, workers
whose parent was killed with -9, the re-run that `verify` recommends, and messages that name the fix.
Each case uses the real failure (a small tmpfs, a killed process, a hostile file) and asserts exit 2,
one line naming the fix, no traceback, and no files left behind but documented resumable progress."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
import yaml
from cli_errors import assert_one_error
from test_worker_pool import alive

from vision_bench.cli import main

REPO = Path(__file__).resolve().parents[1]
TINY_TRAIN = {
    "seed": 0,
    "dataset": {"study": "envgen/G1/1", "n_train": 16, "n_val": 4, "spec": {"size": [32, 32]}},
    "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},  # a checkpoint of about 7 MB
    "training": {"batch_size": 8, "eval_batch_size": 8, "max_steps": 1, "log_every": 1},
}
SMALL_EXPORT = ["--study", "envgen/G1/1", "--n-train", "2", "--n-val", "1", "--n-test", "1", "--no-progress"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----------------------------------------------------------------------------- helpers

def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err





def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())


@contextmanager
def mounted_tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A real tmpfs at `folder` (`size=1m`: a full disk; `ro`: a read-only one); skipped where mounting is
    not permitted (tests run as root in CI)."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small file system")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def write_yaml(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


# ----------------------------------------------------------------------------- full disks (items 9, 10)

@pytest.mark.slow
def test_train_on_a_full_disk_is_one_line_leaves_no_run_and_a_rerun_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_yaml(tmp_path / "train.yaml", TINY_TRAIN)
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as disk:
        argv = ["train", str(config), "--out", str(disk / "run"), "--no-progress"]
        code, err = run_cli(argv, capsys)
        assert_one_error(code, err, "No space left on device", "checkpoints/last.pt", "free some space")
        assert files_under(disk) == []  # a run that saved no checkpoint leaves nothing, not even its folder
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # space freed
        code, err = run_cli(argv, capsys)
        assert code == 0, err
        assert (disk / "run" / "checkpoints" / "last.pt").is_file()


@pytest.mark.slow
def test_bench_on_a_full_disk_is_one_line_and_keeps_only_its_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = {"experiments": ["envgen/G1/1"], "models": [TINY_TRAIN["model"]], "seeds": [0], "baselines": [],
             "data": {"n_train": 16, "n_val": 4, "n_test": 4, "spec": {"size": [32, 32]}},
             "train": {"training": TINY_TRAIN["training"]}, "evaluate": {"splits": ["test_id"]}}
    config = write_yaml(tmp_path / "bench.yaml", bench)
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as disk:
        code, err = run_cli(["bench", str(config), "--out", str(disk / "bench"), "--no-progress"], capsys)
        assert_one_error(code, err, "No space left on device", "last.pt", "free some space")
        # the bench's record, from which a re-run resumes, and the cell's lock file (empty; the lock died with the run)
        lock = ".locks/runs/envgen_G1_1/unet_test_resnet/seed0.lock"
        assert files_under(disk / "bench") == [lock, "bench.yaml"]
        assert (disk / "bench" / lock).stat().st_size == 0


def torchvision_backbone_in_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A torchvision AlexNet file in torch's cache, named with its own hash prefix as torchvision names it
    (the local route of `weights get lpips`, as tests/test_lpips_weights.py provides it): no network."""
    from vision_bench.weights.lpips import BACKBONES, expected_backbone

    cache = tmp_path / "torch" / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    temp = cache / "alexnet.pth"
    torch.save({key: torch.zeros(shape) for key, shape in expected_backbone("alex").items()}, temp)
    prefix = hashlib.sha256(temp.read_bytes()).hexdigest()[:8]
    name = f"{BACKBONES['alex'].torchvision_file.rsplit('-', 1)[0]}-{prefix}.pth"
    monkeypatch.setitem(BACKBONES, "alex", dataclasses.replace(BACKBONES["alex"], torchvision_file=name))
    temp.rename(cache / name)


def test_weights_get_on_a_full_disk_is_one_line_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    torchvision_backbone_in_cache(tmp_path, monkeypatch)  # about 10 MB of tensors to store
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as disk:
        monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(disk / "weights"))
        code, err = run_cli(["weights", "get", "lpips", "--net", "alex"], capsys)
        assert_one_error(code, err, "No space left on device", "alex.safetensors", "free some space",
                         "$VISION_BENCH_WEIGHTS")
        assert files_under(disk) == []


def offline_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every download route fails at once (a closed loopback port, a pip that exits 1): never the network."""
    import socket

    from vision_bench.weights import lpips as lpips_weights
    from vision_bench.weights import lpips_fetch

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(lpips_weights, "TORCHVISION_URL", f"http://127.0.0.1:{port}/")
    monkeypatch.setattr(lpips_fetch, "pip_download_command", lambda *args: [sys.executable, "-c", "exit(1)"])


@pytest.mark.parametrize(("folder", "fix"), [
    ("read-only", "make the folder writable"),
    ("under-a-file", "a part of the path is a file"),
])
def test_weights_get_into_an_unwritable_folder_names_the_right_fix_before_fetching(
    folder: str, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    offline_routes(monkeypatch)
    if folder == "read-only":
        with mounted_tmpfs(tmp_path / "ro", "ro,size=1m") as read_only:
            code, err = run_cli(["weights", "get", "lpips", "--net", "alex", "--folder", str(read_only)], capsys)
    else:
        (tmp_path / "a-file").write_text("not a folder")
        code, err = run_cli(["weights", "get", "lpips", "--net", "alex", "--folder", str(tmp_path / "a-file" / "w")],
                            capsys)
    line = assert_one_error(code, err, "cannot store the LPIPS-alex backbone", fix)
    assert "free some space" not in line
    assert "route failed" not in err  # found out before any route was tried


# ----------------------------------------------------------------------------- killed parents (item 15)

POOL_SCRIPT = """
import os, sys, time
from pathlib import Path
from vision_bench.io.pool import run_tasks

def work(folder):
    (Path(folder) / str(os.getpid())).touch()  # tells the test which processes are the workers
    end = time.monotonic() + 0.05
    while time.monotonic() < end:  # busy, as a worker rendering a shard is
        pass
    return folder

if __name__ == "__main__":
    for _ in run_tasks(work, [sys.argv[1]] * 100000, workers=2):
        pass
"""


def wait_for(condition: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def kill_parent_and_wait(process: subprocess.Popen, workers: list[int]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert wait_for(lambda: not any(alive(pid) for pid in workers), 15), [p for p in workers if alive(p)]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_pool_workers_whose_parent_was_killed_exit_without_a_traceback(tmp_path: Path) -> None:
    """A worker finishing its task after `kill -9` of the parent finds the pipe broken: it exits quietly. Short
    busy tasks make that nearly certain (the workers' parent watch looks every 0.5 s); the same check on a real
    `export --workers 2` is tests/test_worker_pool.py::test_no_export_worker_outlives_a_killed_parent."""
    script = tmp_path / "pool.py"
    script.write_text(POOL_SCRIPT)
    marks = tmp_path / "pids"
    marks.mkdir()
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as err:
        process = subprocess.Popen([sys.executable, str(script), str(marks)], stderr=err, cwd=REPO)
    try:
        assert wait_for(lambda: len(list(marks.iterdir())) >= 2, 60), "no workers started"
        time.sleep(0.5)
        kill_parent_and_wait(process, [int(p.name) for p in marks.iterdir()])
    finally:
        if process.poll() is None:
            process.kill()
    assert "Traceback" not in stderr.read_text(), stderr.read_text()


# ----------------------------------------------------------------------------- the re-run verify recommends (17)

@pytest.mark.parametrize("format_options", [[], ["--format", "parquet"]], ids=["default", "parquet-card"])
def test_the_rerun_verify_recommends_removes_the_files_verify_reports(
    format_options: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "export"
    argv = ["export", *SMALL_EXPORT, *format_options, "--out", str(out)]
    assert main(argv) == 0
    listed = files_under(out)
    stray = [out / "train" / "extra.png", out / ".train.part-00000.parquet.tmp-123-abcd"]
    for path in stray:
        path.write_bytes(b"left over")
    code, err = run_cli(["verify", str(out)], capsys)
    assert code == 1 and all(f"{path}: not in the manifest" in err for path in stray), err
    assert "re-run the `vision-bench export` command" in err
    assert main(argv) == 0
    assert files_under(out) == listed  # exactly the reported files went; the card and the shards stay
    assert main(["verify", str(out)]) == 0


# ----------------------------------------------------------------------------- messages (item 18)

class RunsCode:
    """Unpickled by a plain `pickle.load`, this would create `marker`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def plain_pickle(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps({"format": "vision-bench-checkpoint", "model": RunsCode(marker)}))


def torch_pickle(path: Path, marker: Path) -> None:
    torch.save({"format": "vision-bench-checkpoint", "model": RunsCode(marker)}, path)


def truncated_zip(path: Path, marker: Path) -> None:
    torch.save({"format": "vision-bench-checkpoint", "model": torch.ones(1000)}, path)
    path.write_bytes(path.read_bytes()[:600])


@pytest.mark.parametrize(("command", "make", "needles"), [
    ("evaluate", plain_pickle, ("refused: a plain pickle file", "pass a checkpoint written by `vision-bench train`")),
    ("export-model", plain_pickle, ("refused: a plain pickle file", "pass a checkpoint written by")),
    ("evaluate", torch_pickle, ("refused: its pickle asks for objects other than tensors", "vision-bench train")),
    ("evaluate", truncated_zip, ("corrupt or truncated", "delete it")),
])
def test_a_checkpoint_that_is_not_torch_saved_tensors_is_named_by_what_it_is(
    command: str, make: Callable[[Path, Path], None], needles: tuple[str, ...], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Judged from the file's bytes, never unpickled; torch's advice to pass weights_only=False is not passed on."""
    run, marker = tmp_path / "run", tmp_path / "ran"
    (run / "checkpoints").mkdir(parents=True)
    make(run / "checkpoints" / "best.pt", marker)
    code, err = run_cli([command, str(run), "--out", str(tmp_path / "out")], capsys)
    line = assert_one_error(code, err, *needles)
    assert "weights_only" not in line and not marker.exists() and not (tmp_path / "out").exists()


def test_a_pickled_pretrained_file_is_refused_without_torchs_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    weights, marker = tmp_path / "weights.pth", tmp_path / "ran"
    plain_pickle(weights, marker)
    model = {"name": "unet:test_resnet", "options": {"decoder_width": 4, "pretrained_file": str(weights)}}
    config = write_yaml(tmp_path / "train.yaml", {**TINY_TRAIN, "model": model})
    code, err = run_cli(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress"], capsys)
    line = assert_one_error(code, err, "refused: a plain pickle file", "give a .safetensors file")
    assert "weights_only" not in line and not marker.exists() and not (tmp_path / "run").exists()


def test_a_selector_longer_than_the_task_code_names_a_length_that_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    colors = [{"kind": "color", "color": color} for color in (2, 3, 4, 5)]  # 7 selector tokens
    task = {"transformations": ["translate_up"], "grid_height": [10, 10], "grid_width": [10, 10],
            "n_objects": [1, 1], "rules": [{"selector": {"kind": "all_of", "selectors": colors}, "depth": 1}]}
    config = write_yaml(tmp_path / "task.yaml", task)
    code, err = run_cli(["generate", "--config", str(config), "--out", str(tmp_path / "out"), *SMALL_EXPORT[2:]],
                        capsys)
    line = assert_one_error(code, err, "7 selector tokens leave no room", "raise task_code_length to 8")
    assert "-3" not in line.rsplit("task.yaml: ", 1)[-1] and not (tmp_path / "out").exists()  # not the tmp path


@pytest.mark.parametrize(("make", "needles"), [
    (lambda path: path.write_bytes(bytes(range(128, 256))), ("not a text file", "pass the path of a YAML file")),
    (lambda path: path.mkdir(), ("is a folder", "pass the path of a YAML file")),
    (lambda path: path.write_text(""), ("expected a mapping of keys", "write the config as `key: value` lines")),
], ids=["not-utf8", "a-folder", "empty"])
def test_a_config_that_is_not_a_yaml_mapping_names_the_fix(
    make: Callable[[Path], object], needles: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    make(config)
    code, err = run_cli(["train", str(config), "--out", str(tmp_path / "run")], capsys)
    assert_one_error(code, err, *needles)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", ["verify", "export"])
def test_a_damaged_manifest_names_a_fix_that_works(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "export"
    argv = ["export", *SMALL_EXPORT, "--out", str(out)]
    assert main(argv) == 0
    (out / "manifest.json").write_text("{")
    code, err = run_cli(["verify", str(out)] if command == "verify" else argv, capsys)
    line = assert_one_error(code, err, "the manifest is damaged", f"delete {out}")
    assert "re-run the export to rewrite it" not in line
    shutil.rmtree(out)
    assert main(argv) == 0 and main(["verify", str(out)]) == 0  # the fix it names works


def test_an_unknown_timm_model_names_the_command_that_lists_them() -> None:
    """timm knows over a thousand models: the message points at the listing command instead of a dozen names."""
    from vision_bench.errors import UnknownNameError
    from vision_bench.models import create_model

    with pytest.raises(UnknownNameError) as caught:
        create_model("unet:resnet18x", image_size=32)
    message = str(caught.value)
    assert "did you mean 'resnet18'" in message and "`vision-bench models --timm 'PATTERN*'` lists all" in message
    assert "aimv2" not in message and len(message) < 200
