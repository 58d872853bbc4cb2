"""Writes never go through a symlink the command did not make, temporary files are created
exclusively, and a full disk while saving a checkpoint is one line naming the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from vision_bench.cli import main
from vision_bench.io import atomic
from vision_bench.io.atomic import append_line, atomic_output, atomic_write_text
from vision_bench.train.checkpoint import save_checkpoint


def test_atomic_writes_replace_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "out" / "metrics.json"
    link.parent.mkdir()
    link.symlink_to(victim)
    atomic_write_text(link, "new")
    assert victim.read_text() == "keep"
    assert not link.is_symlink() and link.read_text() == "new"


def test_temporary_files_are_created_exclusively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    planted = tmp_path / ".planted.tmp"
    planted.symlink_to(victim)
    names = iter([planted, tmp_path / ".fresh.tmp"])
    monkeypatch.setattr(atomic, "temp_path_for", lambda target: next(names))  # the first guess is taken
    with atomic_output(tmp_path / "out.txt") as temp:
        assert temp == tmp_path / ".fresh.tmp"
        temp.write_text("data")
    assert victim.read_text() == "keep" and (tmp_path / "out.txt").read_text() == "data"


def test_log_appends_refuse_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "metrics.jsonl"
    link.symlink_to(victim)
    with pytest.raises(OSError):
        append_line(link, "{}\n")
    assert victim.read_text() == "keep"


def test_train_does_not_write_through_symlinked_run_files(tmp_path: Path) -> None:
    from vision_bench.train.logging import RunLogger

    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "metrics.jsonl").symlink_to(victim)
    logger = RunLogger(run_dir, enabled=True)
    logger.log({"kind": "step", "step": 1, "epoch": 0, "loss": 0.5})
    logger.close()
    assert victim.read_text() == "keep"
    assert json.loads((run_dir / "metrics.jsonl").read_text())["loss"] == 0.5


def test_export_refuses_a_symlinked_progress_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "data"
    out.mkdir()
    (out / "_progress").symlink_to(elsewhere, target_is_directory=True)
    code = main(["export", "--study", "envgen/G1/1", "--n-train", "2", "--n-val", "1", "--n-test", "1",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "is a symbolic link" in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []


def test_generate_manifest_is_not_written_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "tasks"
    out.mkdir()
    (out / ".manifest.json.partial").symlink_to(victim)  # the old fixed temporary name
    assert main(["generate", "--study", "envgen/G1/1", "--out", str(out), "--n-train", "2", "--n-val", "1",
                 "--n-test", "1"]) == 0
    assert victim.read_text() == "keep" and json.loads((out / "manifest.json").read_text())["counts"]["train"] == 2


def test_a_failed_checkpoint_save_leaves_no_temp_file_and_is_judged_by_the_write_not_the_wording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's text alone says nothing: without a failed write it is not called a full disk (the real full disk,
    a small tmpfs, is in tests/test_failures_round2.py)."""
    def fails(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing file "
                           "data/0: file write failed")

    monkeypatch.setattr(torch, "save", fails)
    with pytest.raises(RuntimeError):
        save_checkpoint(tmp_path / "checkpoints" / "last.pt", {"step": 1})
    assert os.listdir(tmp_path / "checkpoints") == []


def test_show_writes_the_format_its_suffix_names(tmp_path: Path, arc_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    task = arc_dir / "007bbfb7.json"
    assert main(["show", str(task), "--out", str(tmp_path / "s.jpg"), "--n", "1"]) == 0
    assert (tmp_path / "s.jpg").read_bytes()[:3] == b"\xff\xd8\xff"  # JPEG, not PNG bytes
    assert main(["show", str(task), "--out", str(tmp_path / "s.gif"), "--n", "1"]) == 2
    assert "name a .png, .jpg, .jpeg, .pdf or .svg file" in capsys.readouterr().err
    assert not (tmp_path / "s.gif").exists()


@pytest.mark.parametrize(("name", "message"), [
    ("bogus", "'bogus' is not a device"),
    ("cuda:7", "CUDA is not available here"),
    ("xla", "is not supported"),
])
def test_one_device_check_for_every_command(name: str, message: str) -> None:
    from vision_bench.errors import ConfigError
    from vision_bench.evaluation import pick_device

    with pytest.raises(ConfigError, match=message):
        pick_device(name)


def test_a_missing_cuda_index_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from vision_bench.errors import ConfigError
    from vision_bench.train.device import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ConfigError, match="cuda:7 does not exist; this machine has 2 CUDA device"):
        resolve_device("cuda:7", setting="--device")


def test_evaluate_with_a_bogus_device_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path), str(tmp_path), "--device", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'bogus' is not a device" in err and "Traceback" not in err
