"""Data-parallel training: two gloo processes under torchrun equal one process with the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.errors import ConfigError  # noqa: E402
from vision_bench.train import TrainConfig, train  # noqa: E402
from vision_bench.train.logging import read_records  # noqa: E402

CONFIG = {
    "seed": 0,
    "dataset": {"study": "envgen/G1/1", "n_train": 32, "n_val": 5, "spec": {"size": [32, 32]}},
    "model": {"name": "vit:test_vit"},  # layer norm only: no batch statistics that differ per process
    "optimizer": {"lr": 3e-3},
    "schedule": {"warmup_steps": 2},
    "training": {"batch_size": 8, "max_steps": 6, "log_every": 1, "eval_batch_size": 2},
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def records(run_dir: Path, kind: str) -> list[dict]:
    return [r for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == kind]


def test_two_processes_match_one_and_write_one_checkpoint_set(tmp_path) -> None:
    config = TrainConfig.from_dict(CONFIG)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(config.to_yaml())
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "-m", "vision_bench", "train", str(config_path), "--out", str(tmp_path / "ddp"), "--no-progress",
    ]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    finished = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.count("trained 6 steps") == 1  # rank 0 alone reports

    assert sorted(p.name for p in (tmp_path / "ddp" / "checkpoints").iterdir()) == ["best.pt", "last.pt"]
    ddp_steps = records(tmp_path / "ddp", "step")
    assert [r["step"] for r in ddp_steps] == [1, 2, 3, 4, 5, 6]  # logged once, not once per process

    single = train(config, tmp_path / "single", progress=False)
    single_steps = records(tmp_path / "single", "step")
    for one, two in zip(single_steps, ddp_steps):
        assert two["loss"] == pytest.approx(one["loss"], rel=1e-5, abs=1e-7)
        assert two["lr"] == one["lr"]
    ddp_final = records(tmp_path / "ddp", "epoch")[-1]
    for key, value in single.final_metrics.items():  # validation shards (3 + 2 of 5 samples) sum exactly
        assert ddp_final[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key


def test_global_batch_must_split_over_the_processes(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ConfigError, match="training.batch_size 8 does not split over 3 processes"):
        train(TrainConfig.from_dict(CONFIG), tmp_path, progress=False)
