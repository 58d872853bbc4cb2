"""Training building blocks that need no model or data: config, schedule, sampler, checkpoints."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.errors import ConfigError
from vision_bench.train.checkpoint import (
    CheckpointError,
    capture_rng_state,
    read_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from vision_bench.train.config import TrainConfig, differing_keys
from vision_bench.train.distributed import DistributedContext, EpochSampler, shard_indices
from vision_bench.train.logging import RunLogger, read_records
from vision_bench.train.schedule import build_scheduler, warmup_cosine_factor

MINIMAL = {"dataset": {"study": "envgen/G1/1"}, "model": {"name": "unet:test_resnet"}}


def config_with(**sections: dict) -> TrainConfig:
    data = {key: dict(value) for key, value in MINIMAL.items()}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return TrainConfig.from_dict(data)


# ---------------------------------------------------------------------------- config


def test_defaults_follow_the_cogitao_recipe() -> None:
    config = TrainConfig.from_dict(MINIMAL)
    assert config.training.batch_size == 64 and config.training.epochs == 10
    assert config.schedule.warmup_steps == 200
    assert config.optimizer.lr == 1e-3 and config.optimizer.weight_decay == 1e-3
    assert config.checkpoint.select_on == "val_id"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({**MINIMAL, "optimiser": {}}, "optimiser: unknown key; did you mean 'optimizer'?"),
        ({**MINIMAL, "training": {"batch_szie": 8}}, "training.batch_szie: unknown key; did you mean 'batch_size'?"),
        ({**MINIMAL, "training": {"batch_size": 0}},
         "training.batch_size: must be at least 1, got 0; set it to 1 or more"),
        ({**MINIMAL, "optimizer": {"betas": [0.9, 1.5]}}, "optimizer.betas: each beta must be in [0, 1)"),
        ({**MINIMAL, "checkpoint": {"select_on": "test_ood"}},
         "checkpoint.select_on: Input should be 'val_id' or 'val_ood'"),
        ({"model": {"name": "x"}}, "dataset: required key is missing"),
        ({**MINIMAL, "dataset": {"study": "a", "path": "b"}}, "give exactly one of dataset.study"),
        ({**MINIMAL, "dataset": {"path": "b", "n_train": 3}}, "dataset.n_train / dataset.n_val size generated data"),
        (
            {**MINIMAL, "dataset": {"study": "a", "val_splits": ["val_ood"]}},
            "checkpoint.select_on is val_id but dataset.val_splits is ['val_ood']",
        ),
        ([1, 2], "expected a mapping of keys, got list"),
    ],
)
def test_config_errors_name_the_key(data: object, expected: str) -> None:
    with pytest.raises(ConfigError) as error:
        TrainConfig.from_dict(data)
    assert expected in str(error.value)


def test_yaml_round_trip_and_broken_yaml(tmp_path) -> None:
    config = config_with(training={"batch_size": 8, "max_steps": 5}, checkpoint={"select_on": "val_ood"})
    path = tmp_path / "config.yaml"
    path.write_text(config.to_yaml())
    assert TrainConfig.from_yaml(path) == config
    path.write_text("model: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        TrainConfig.from_yaml(path)


def test_experiment_hash_ignores_runtime_and_diff_names_keys() -> None:
    base = TrainConfig.from_dict(MINIMAL)
    runtime_only = config_with(runtime={"device": "cpu", "num_workers": 2})
    assert runtime_only.experiment_hash() == base.experiment_hash()
    changed = config_with(optimizer={"lr": 0.01}, training={"epochs": 3})
    assert changed.experiment_hash() != base.experiment_hash()
    assert differing_keys(base.experiment(), changed.experiment()) == ["optimizer.lr", "training.epochs"]


# ---------------------------------------------------------------------------- schedule


def test_schedule_hand_values() -> None:
    factor = lambda step: warmup_cosine_factor(step, warmup_steps=4, total_steps=12, min_ratio=0.1)  # noqa: E731
    assert [factor(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert factor(8) == pytest.approx(0.1 + 0.9 * 0.5)  # half way through the cosine
    assert factor(12) == pytest.approx(0.1) and factor(50) == pytest.approx(0.1)
    assert warmup_cosine_factor(3, warmup_steps=0, total_steps=6) == pytest.approx(0.5)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 50), st.integers(1, 400), st.floats(0, 1))
def test_schedule_rises_then_falls_within_bounds(warmup: int, decay: int, floor: float) -> None:
    total = warmup + decay
    values = [warmup_cosine_factor(s, warmup_steps=warmup, total_steps=total, min_ratio=floor)
              for s in range(total + 3)]
    assert all(0 < v <= 1 for v in values[:warmup])
    assert all(floor - 1e-12 <= v <= 1 + 1e-12 for v in values[warmup:])
    assert all(a < b for a, b in zip(values[:warmup], values[1:warmup]))
    assert all(a >= b - 1e-12 for a, b in zip(values[warmup:], values[warmup + 1 :]))


def test_scheduler_drives_the_optimizer() -> None:
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([parameter], lr=0.5)
    scheduler = build_scheduler(optimizer, warmup_steps=2, total_steps=4)
    seen = []
    for _ in range(5):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    # warm-up 1/2, 2/2; cosine over steps 2..4: 1, cos-half-way 0.5, floor 0
    assert seen == pytest.approx([0.25, 0.5, 0.5, 0.5 * 0.5 * (1 + math.cos(math.pi / 2)), 0.0])


# ---------------------------------------------------------------------------- sampler


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.sampled_from([1, 2, 4]), st.integers(1, 4), st.integers(0, 3), st.integers(0, 9))
def test_global_batches_do_not_depend_on_world_size(n: int, world: int, per_rank: int, epoch: int, seed: int) -> None:
    dataset = list(range(n))
    single = EpochSampler(dataset, batch_per_rank=per_rank * world, seed=seed, context=DistributedContext())
    single.set_position(epoch)
    order = list(single)
    global_batch = per_rank * world
    expected = [sorted(order[k : k + global_batch]) for k in range(0, len(order), global_batch)]
    ranks = []
    for rank in range(world):
        sampler = EpochSampler(dataset, batch_per_rank=per_rank, seed=seed, context=DistributedContext(rank, world))
        sampler.set_position(epoch)
        ranks.append(list(sampler))
        assert sampler.batches_per_epoch == single.batches_per_epoch == n // global_batch
    merged = [sorted(i for r in ranks for i in r[k * per_rank : (k + 1) * per_rank]) for k in range(len(expected))]
    assert merged == expected
    assert len(order) == (n // global_batch) * global_batch and len(set(order)) == len(order)


def test_sampler_order_is_a_function_of_seed_and_epoch_and_resumes_mid_epoch() -> None:
    dataset = list(range(20))
    sampler = EpochSampler(dataset, batch_per_rank=4, seed=3, context=DistributedContext())
    sampler.set_position(1)
    full = list(sampler)
    sampler.set_position(0)
    assert list(sampler) != full
    sampler.set_position(1, start_batch=2)
    assert list(sampler) == full[8:] and len(sampler) == 12
    assert shard_indices(7, DistributedContext(1, 3)) == [1, 4]


# ---------------------------------------------------------------------------- checkpoints and logs


def test_rng_states_round_trip() -> None:
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    state = capture_rng_state()
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    restore_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def payload() -> dict:
    keys = ("config", "config_hash", "model", "optimizer", "scheduler", "scaler", "rng", "epoch", "step")
    return {key: {} for key in keys} | {"model": {"w": torch.ones(2)}, "rng": capture_rng_state(), "step": 3}


def test_checkpoint_is_written_atomically_and_read_back(tmp_path) -> None:
    path = tmp_path / "checkpoints" / "last.pt"
    save_checkpoint(path, payload())
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.pt"]
    assert read_checkpoint(path)["step"] == 3


def test_failed_save_leaves_no_file(tmp_path, monkeypatch) -> None:
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path / "last.pt", payload())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "corrupt or truncated"),
        (lambda p: p.write_bytes(b"not a checkpoint"), "corrupt or truncated"),
        (lambda p: torch.save({"weights": torch.ones(1)}, p), "not a vision-bench training checkpoint"),
        (lambda p: p.unlink(), "checkpoint not found"),
    ],
)
def test_damaged_checkpoints_give_one_clear_error(tmp_path, damage, expected) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(path, payload())
    damage(path)
    with pytest.raises(CheckpointError, match=expected) as error:
        read_checkpoint(path)
    assert str(path) in str(error.value)


def test_logger_drops_records_newer_than_the_resumed_step(tmp_path) -> None:
    logger = RunLogger(tmp_path, enabled=True)
    for step in range(1, 6):
        logger.log({"kind": "step", "step": step, "loss": 1.0 / step})
    logger.log({"kind": "epoch", "step": 5, "epoch": 1, "val_id/mse": float("nan")})
    logger.close()
    assert read_records(tmp_path / "metrics.jsonl")[-1]["val_id/mse"] is None
    RunLogger(tmp_path, enabled=True, resume_step=3).close()
    assert [r["step"] for r in read_records(tmp_path / "metrics.jsonl")] == [1, 2, 3]


def test_the_shipped_smoke_config_is_valid() -> None:
    path = Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml"
    config = TrainConfig.from_yaml(path)
    assert config.dataset.study == "envgen/G1/1" and config.training.epochs == 3
