"""Data-parallel training: two gloo processes under torchrun equal one process with the same global batch,
unless the model has BatchNorm layers, which a CPU run cannot synchronise: then one warning says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.errors import ConfigError  # noqa: E402
from vision_bench.models import create_model  # noqa: E402
from vision_bench.train import TrainConfig, load_checkpoint, train  # noqa: E402
from vision_bench.train.distributed import batchnorm_caveat  # noqa: E402
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


def train_with_torchrun(config: TrainConfig, folder: Path, run_name: str) -> subprocess.CompletedProcess:
    """`torchrun --nproc_per_node 2 -m vision_bench train` on CPU (gloo), one torch thread per process."""
    config_path = folder / f"{run_name}.yaml"
    config_path.write_text(config.to_yaml())
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "-m", "vision_bench", "train", str(config_path), "--out", str(folder / run_name), "--no-progress",
    ]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    finished = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return finished


@pytest.mark.slow
def test_two_processes_match_one_and_write_one_checkpoint_set(tmp_path) -> None:
    config = TrainConfig.from_dict(CONFIG)
    finished = train_with_torchrun(config, tmp_path, "ddp")
    assert finished.stdout.count("trained 6 steps") == 1  # rank 0 alone reports
    assert "BatchNorm" not in finished.stderr
    assert finished.stderr.count("vision-bench train: epoch 1/2, step 4/6") == 1  # rank 0 alone logs

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
    ddp_weights = load_checkpoint(tmp_path / "ddp" / "checkpoints" / "last.pt")[2]["model"]
    single_weights = load_checkpoint(single.last_checkpoint)[2]["model"]
    assert ddp_weights.keys() == single_weights.keys()
    for name, weight in single_weights.items():
        torch.testing.assert_close(ddp_weights[name], weight, rtol=1e-4, atol=1e-6, msg=name)
    assert json.loads((tmp_path / "ddp" / "environment.json").read_text())["world_size"] == 2


@pytest.mark.slow
def test_a_batchnorm_model_on_cpu_warns_once_that_it_differs_from_one_process(tmp_path) -> None:
    config = TrainConfig.from_dict({
        **CONFIG,
        "dataset": {**CONFIG["dataset"], "n_train": 8, "n_val": 1},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "training": {**CONFIG["training"], "max_steps": 1},
    })
    finished = train_with_torchrun(config, tmp_path, "bn")
    warning = "this model has BatchNorm layers and they cannot be synchronised on cpu"
    assert finished.stderr.count(warning) == 1, finished.stderr[-3000:]  # rank 0 alone warns
    assert warning in (tmp_path / "bn" / "train.log").read_text()


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="SyncBatchNorm needs one CUDA device per process (NCCL)")
def test_a_batchnorm_model_synchronised_on_cuda_matches_one_process(tmp_path) -> None:
    config = TrainConfig.from_dict({
        **CONFIG,
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "runtime": {"device": "cuda", "sync_batchnorm": True, "channels_last": False},
    })
    finished = train_with_torchrun(config, tmp_path, "ddp")
    assert "BatchNorm" not in finished.stderr
    single = train(config, tmp_path / "single", progress=False)
    for one, two in zip(records(tmp_path / "single", "step"), records(tmp_path / "ddp", "step")):
        assert two["loss"] == pytest.approx(one["loss"], rel=1e-4, abs=1e-6)
    ddp_final = records(tmp_path / "ddp", "epoch")[-1]
    for key, value in single.final_metrics.items():
        assert ddp_final[key] == pytest.approx(value, rel=1e-3, abs=1e-5), key


@pytest.mark.slow
def test_a_model_that_trains_in_phases_trains_in_two_processes(tmp_path) -> None:
    """svib:ssm-vae leaves its probe without gradients at step 1 and its SSM at step 2: DistributedDataParallel looks
    for unused parameters (`trains_in_phases`; without it the second step fails), and the run finishes."""
    config = TrainConfig.from_dict({
        **CONFIG,
        "dataset": {**CONFIG["dataset"], "n_train": 8, "n_val": 2},
        "model": {"name": "svib:ssm-vae", "options": {"encoder_width": 4, "encoder_depth": 1, "latent_dim": 8,
                                                      "decoder_width": 8, "decoder_depth": 1, "probe_from": 0.5}},
        "training": {**CONFIG["training"], "batch_size": 4, "max_steps": 2},
    })
    finished = train_with_torchrun(config, tmp_path, "phases")
    assert finished.stdout.count("trained 2 steps") == 1
    assert [r["step"] for r in records(tmp_path / "phases", "step")] == [1, 2]


def test_the_batchnorm_caveat_names_when_a_run_differs_from_one_process() -> None:
    with_bn = create_model("unet:test_resnet", image_size=32, decoder_width=4)
    without_bn = create_model("vit:test_vit", image_size=32)
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    message = batchnorm_caveat(with_bn, cpu, sync_batchnorm=True, world_size=2)
    assert message is not None and "each of the 2 processes normalises" in message
    assert "train on CUDA with runtime.sync_batchnorm: true" in message
    assert "runtime.sync_batchnorm is off" in batchnorm_caveat(with_bn, cuda, sync_batchnorm=False, world_size=4)
    assert batchnorm_caveat(with_bn, cuda, sync_batchnorm=True, world_size=2) is None  # SyncBatchNorm
    assert batchnorm_caveat(with_bn, cpu, sync_batchnorm=True, world_size=1) is None
    assert batchnorm_caveat(without_bn, cpu, sync_batchnorm=True, world_size=2) is None


def test_global_batch_must_split_over_the_processes(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ConfigError, match="training.batch_size 8 does not split over 3 processes"):
        train(TrainConfig.from_dict(CONFIG), tmp_path, progress=False)
