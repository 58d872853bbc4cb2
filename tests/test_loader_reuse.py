"""DataLoaders are built once per run and split, keep their workers between epochs, and the order
they give stays a pure function of (seed, epoch), whatever the number of workers and resumes."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from torch.utils.data import Subset

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.train import TrainConfig, components, train  # noqa: E402
from vision_bench.train.logging import read_records  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

EVAL_BATCH = 3  # differs from the training batch and from TensorBoard's sample batch, to tell loaders apart


def make_config(workers: int = 0, **training: object) -> TrainConfig:
    return TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": "envgen/G1/1", "n_train": 12, "n_val": 6, "spec": {"size": [32, 32]}},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "optimizer": {"lr": 1e-2},
        "schedule": {"warmup_steps": 1},
        "training": {"batch_size": 4, "epochs": 3, "log_every": 1, "eval_batch_size": EVAL_BATCH, **training},
        "runtime": {"num_workers": workers},
    })


def split_of(dataset: object) -> str:
    return (dataset.dataset if isinstance(dataset, Subset) else dataset).split


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every DataLoader the training components construct: its split, batch size and worker settings."""
    records: list[dict] = []

    class CountingLoader(components.DataLoader):
        def __init__(self, dataset, **options):
            super().__init__(dataset, **options)
            records.append({"split": split_of(dataset), "batch_size": options["batch_size"],
                            "persistent": self.persistent_workers, "prefetch": self.prefetch_factor})

    monkeypatch.setattr(components, "DataLoader", CountingLoader)
    return records


def step_losses(run_dir: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == "step"]


def test_each_split_gets_one_loader_per_run(built: list[dict], tmp_path: Path) -> None:
    result = train(make_config(epochs=2), tmp_path / "run", progress=False)
    assert result.step == 6 and len(result.history) == 2  # two epochs, each validated
    counts = Counter(record["split"] for record in built if record["batch_size"] in (4, EVAL_BATCH))
    assert counts == {"train": 1, "val_id": 1, "val_ood": 1}


@pytest.mark.slow
def test_persistent_workers_repeat_the_single_process_run_and_its_resume(built: list[dict], tmp_path: Path) -> None:
    single = train(make_config(), tmp_path / "single", progress=False)
    built.clear()
    workers = train(make_config(workers=2), tmp_path / "workers", progress=False)
    ours = [record for record in built if record["batch_size"] in (4, EVAL_BATCH)]
    assert [record["split"] for record in ours] == ["train", "val_id", "val_ood"]
    assert all(record["persistent"] and record["prefetch"] == components.PREFETCH_BATCHES for record in ours)
    assert step_losses(tmp_path / "workers") == step_losses(tmp_path / "single")  # each epoch's order seen
    assert workers.history == single.history
    # interrupted mid-epoch 2 and resumed, both sessions with persistent workers
    train(make_config(workers=2), tmp_path / "resumed", progress=False, stop_at_step=6)
    train(make_config(workers=2), tmp_path / "resumed", resume=True, progress=False)
    assert step_losses(tmp_path / "resumed") == step_losses(tmp_path / "single")
