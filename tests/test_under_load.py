"""On a shared machine: the command line's torch threads sleep while they wait, and a run without
progress bars still says it is alive (docs/benchmarks.md, "Under load", has the measurements)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vision_bench.cli import main
from vision_bench.threads import DEFAULT_WAIT_POLICY, WAIT_POLICY, prefer_passive_waits
from vision_bench.train import TrainConfig, train
from vision_bench.train import logging as run_logging

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_passive_waits_are_the_default_and_a_users_policy_is_kept() -> None:
    environ: dict[str, str] = {}
    assert prefer_passive_waits(environ) == "PASSIVE" and environ == {WAIT_POLICY: "PASSIVE"}
    environ = {WAIT_POLICY: "ACTIVE"}
    assert prefer_passive_waits(environ) == "ACTIVE" and environ == {WAIT_POLICY: "ACTIVE"}


def test_the_command_line_sets_the_policy_before_torch_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenMP reads the variable once, when torch loads it: importing the CLI must not load torch."""
    code = "import sys, vision_bench.cli; print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False"
    monkeypatch.setenv(WAIT_POLICY, "unset below; restored after the test")
    monkeypatch.delenv(WAIT_POLICY)
    assert main(["transformations"]) == 0
    assert os.environ[WAIT_POLICY] == DEFAULT_WAIT_POLICY


def test_a_run_without_a_progress_bar_logs_a_heartbeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(run_logging, "HEARTBEAT_S", 0.0)  # every step: the test needs no minute-long run
    config = TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "n_train": 8, "n_val": 4, "spec": {"size": [32, 32]}},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "training": {"batch_size": 4, "eval_batch_size": 4, "epochs": 1},
    })
    with caplog.at_level(logging.INFO, logger="vision_bench"):
        train(config, tmp_path / "quiet", progress=False)
    beats = [r.getMessage() for r in caplog.records if r.getMessage().startswith("training unet:test_resnet")]
    assert [beat.split(",")[0] for beat in beats] == ["training unet:test_resnet seed 0: step 1/2",
                                                       "training unet:test_resnet seed 0: step 2/2"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="vision_bench"):
        train(config, tmp_path / "bar", progress=True)
    assert not [r for r in caplog.records if r.getMessage().startswith("training unet:test_resnet")]
