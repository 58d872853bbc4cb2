"""Error messages name the fix: close matches or the listing command for unknown names, what a
refused pickle is, the user's own path (never a hidden temporary one) on a failed write."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from vision_bench.cli import main
from vision_bench.registry import unknown_name_message
from vision_bench.train.checkpoint import CheckpointError, read_checkpoint


def test_a_long_list_of_names_points_to_the_command_that_prints_it() -> None:
    names = [f"metric_{i}" for i in range(20)]
    message = unknown_name_message("metric", "metric_3x", names)
    assert "did you mean 'metric_3'" in message and "`vision-bench metrics` lists all 20" in message
    other = unknown_name_message("palette", "x", [f"p{i}" for i in range(20)])
    assert "known: p0, p1" in other and "(20 in all)" in other and "names)" not in other


def test_unknown_metric_on_the_command_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from vision_bench.errors import UnknownNameError
    from vision_bench.metrics import compute_metrics

    with pytest.raises(UnknownNameError, match="did you mean 'lpips'.*`vision-bench metrics` lists all"):
        compute_metrics(torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 8, 8), names=["lpipz"])


def test_a_refused_pickle_checkpoint_is_called_what_it_is(tmp_path: Path) -> None:
    class Payload:
        def __reduce__(self) -> tuple:
            return (Path.touch, (tmp_path / "ran",))

    path = tmp_path / "evil.pt"
    torch.save({"format": "x", "model": Payload()}, path)
    refused = "refused: its pickle asks for objects other than tensors and plain values, which would run code"
    with pytest.raises(CheckpointError, match=refused):
        read_checkpoint(path)
    assert not (tmp_path / "ran").exists()


def test_a_failed_render_write_names_the_users_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from render import codec

    source = tmp_path / "task.json"
    source.write_text(json.dumps({"train": [{"input": [[1]], "output": [[2]]}], "test": []}))

    def full_disk(*args: object, **kwargs: object) -> bytes:
        stage = next(iter(tmp_path.glob(".out.tmp-*")))
        raise OSError(errno.ENOSPC, "No space left on device", str(stage / "x"))

    monkeypatch.setattr(codec, "encode", full_disk)
    assert main(["render", str(source), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"No space left on device: {tmp_path / 'out' / 'x'}" in err and ".tmp-" not in err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp-*"))


def test_output_cut_short_by_its_reader_is_not_an_error() -> None:
    """`vision-bench studies | head -0`: the reader has gone before the first line; no error line, exit 0."""
    process = subprocess.Popen([sys.executable, "-m", "vision_bench", "studies"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # long before the command has imported its modules and printed
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""
