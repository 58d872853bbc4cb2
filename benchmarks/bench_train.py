"""Training throughput: the whole training step against the model alone, same model, same run;
or, with `--workers`, the wall time of whole epochs for each number of DataLoader workers.

    python benchmarks/bench_train.py [--model unet:resnet18] [--size 128] [--batch 32] [--steps 8]
    python benchmarks/bench_train.py --workers 0,2 --source folder [--epochs 3] [--n-train 512]

*Whole step* is what `vision_bench.train.train` does per optimizer step: generate the batch on the
fly (study envgen/G1/1, grids only), render it on the device, forward, backward, gradient clipping,
AdamW, the learning-rate schedule and the step log; its rate comes from the run's metrics.jsonl.
*Model only* is forward + backward + clipping + AdamW on one pre-made batch of tensors. Target:
feed and bookkeeping cost at most 10% on CPU (whole / model-only >= 0.90). The model-only rate is
measured before and after the engine; both sides report the median step, so a drifting or shared
machine biases neither.

*Epochs* (`--workers 0,2`): `train` for `--epochs` epochs (each with its validation) once per worker
count, data on the fly (`--source onthefly`: generated and rendered per sample, no images stored)
or from a PNG `folder` export made first (not timed). Reported per epoch: the wall time of the
whole run divided by the epochs (worker start-up and validation included) and the time of the
training steps alone (from the step records). The loaders are built once per run, so workers
start once; the same script on an older checkout measures loaders rebuilt every epoch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from vision_bench.train import (  # noqa: E402
    TrainConfig,
    components,  # noqa: E402
    train,
)
from vision_bench.train.device import resolve_runtime  # noqa: E402
from vision_bench.train.logging import read_records  # noqa: E402

WARMUP_STEPS = 2


def bench_config(args: argparse.Namespace) -> TrainConfig:
    steps = WARMUP_STEPS + args.steps
    return TrainConfig.from_dict(
        {
            "seed": 0,
            "dataset": {
                "study": args.study,
                "n_train": steps * args.batch,
                "n_val": 1,
                "spec": {"size": [args.size, args.size]},
                "val_splits": ["val_id"],
            },
            "model": {"name": args.model},
            "schedule": {"warmup_steps": 1},
            "training": {"batch_size": args.batch, "max_steps": steps, "log_every": 1, "validate_every": 1000},
            "runtime": {"device": "cpu", "num_workers": args.num_workers},
        }
    )


def model_only_step_times(config: TrainConfig, steps: int) -> list[float]:
    """Seconds of each forward + backward + clip + AdamW step on one pre-made batch."""
    datasets, spec = components.build_datasets(config)
    runtime = resolve_runtime("cpu", "fp32", False, False)
    torch.manual_seed(config.seed)
    model = components.build_model(config, spec).train()
    loader = components.eval_loader(datasets["train"], range(config.training.batch_size),
                                    batch_size=config.training.batch_size, num_workers=0)
    batch = components.DeviceFeed(spec, runtime)(next(iter(loader)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.optimizer.lr,
                                  weight_decay=config.optimizer.weight_decay)
    times = []
    for _ in range(WARMUP_STEPS + steps):
        start = time.perf_counter()
        loss = model.training_loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        times.append(time.perf_counter() - start)
    return times[WARMUP_STEPS:]


def whole_step_times(config: TrainConfig, run_dir: Path) -> list[float]:
    """Seconds of each engine step after the warm-up, from the run's metrics.jsonl (one record per step)."""
    train(config, run_dir, progress=False)
    records = [r for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == "step"][WARMUP_STEPS:]
    return [config.training.batch_size / r["images_per_s"] for r in records]


def epoch_config(args: argparse.Namespace, workers: int, data: Path | None) -> TrainConfig:
    """A run of `--epochs` epochs over `--n-train` samples, validated every epoch."""
    dataset: dict = {"path": str(data)} if data is not None else {
        "study": args.study, "n_train": args.n_train, "n_val": args.n_val, "spec": {"size": [args.size, args.size]}}
    return TrainConfig.from_dict(
        {
            "seed": 0,
            "dataset": {**dataset, "val_splits": ["val_id"]},
            "model": {"name": args.model},
            "schedule": {"warmup_steps": 1},
            "training": {"batch_size": args.batch, "epochs": args.epochs, "log_every": 1,
                         "eval_batch_size": args.batch},
            "runtime": {"device": "cpu", "num_workers": workers},
        }
    )


def export_folder(args: argparse.Namespace, out: Path) -> Path:
    """The study as a PNG folder export with the benchmark's counts and size."""
    from render.spec import RenderSpec
    from vision_bench.data.export import export_dataset
    from vision_bench.data.export_formats import ExportOptions
    from vision_bench.data.sources import load_config

    config = load_config(args.study, n_train=args.n_train, n_val=args.n_val, n_test=1)
    export_dataset(config, RenderSpec(size=(args.size, args.size)), out, ExportOptions(format="folder"), workers=2)
    return out


def epoch_times(args: argparse.Namespace, workers: int, data: Path | None, run_dir: Path) -> tuple[float, float]:
    """(wall seconds per epoch, seconds of training steps per epoch) of one run."""
    config = epoch_config(args, workers, data)
    start = time.perf_counter()
    train(config, run_dir, progress=False)
    wall = time.perf_counter() - start
    steps = [r for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == "step"]
    step_seconds = sum(config.training.batch_size / r["images_per_s"] for r in steps)
    return wall / args.epochs, step_seconds / args.epochs


def compare_workers(args: argparse.Namespace) -> None:
    counts = [int(part) for part in args.workers.split(",")]
    print(f"{args.model} at {args.size} px, batch {args.batch}, {args.n_train} training + {args.n_val} validation "
          f"samples, {args.epochs} epochs, {torch.get_num_threads()} torch threads, data: {args.source}")
    with tempfile.TemporaryDirectory() as folder:
        data = export_folder(args, Path(folder) / "export") if args.source == "folder" else None
        results = {}
        for round_number in range(args.rounds):  # interleaved, so a drifting machine biases no count
            for workers in counts:
                run_dir = Path(folder) / f"run-{workers}-{round_number}"
                results.setdefault(workers, []).append(epoch_times(args, workers, data, run_dir))
    base = statistics.median(wall for wall, _ in results[counts[0]])
    for workers in counts:
        wall = statistics.median(w for w, _ in results[workers])
        steps = statistics.median(s for _, s in results[workers])
        print(f"{workers} workers: {wall:7.2f} s per epoch (steps alone {steps:6.2f} s); "
              f"{base / wall:5.2f}x the speed of {counts[0]} workers (median of {args.rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="unet:resnet18")
    parser.add_argument("--study", default="envgen/G1/1")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8, help="timed steps (after warm-up)")
    parser.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes of the engine")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    parser.add_argument("--workers", default=None,
                        help="comma-separated worker counts, e.g. 0,2: time whole epochs with each instead")
    parser.add_argument("--source", choices=("onthefly", "folder"), default="onthefly",
                        help="with --workers: data generated on the fly, or a PNG folder export")
    parser.add_argument("--epochs", type=int, default=3, help="with --workers: epochs per run")
    parser.add_argument("--n-train", type=int, default=512, help="with --workers: training samples")
    parser.add_argument("--n-val", type=int, default=64, help="with --workers: validation samples")
    parser.add_argument("--rounds", type=int, default=1, help="with --workers: runs per worker count")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.workers is not None:
        compare_workers(args)
        return
    config = bench_config(args)
    print(f"{args.model} at {args.size} px, batch {args.batch}, {args.steps} timed steps per phase, "
          f"{torch.get_num_threads()} torch threads, {args.num_workers} loader workers, data {args.study} on the fly")
    model_only = model_only_step_times(config, args.steps)
    with tempfile.TemporaryDirectory() as folder:
        whole = whole_step_times(config, Path(folder) / "run")
    model_only += model_only_step_times(config, args.steps)
    rates = {
        "model only (pre-made tensors)": args.batch / statistics.median(model_only),
        "whole training step": args.batch / statistics.median(whole),
    }
    for name, rate in rates.items():
        print(f"{name + ':':31s}{rate:8.2f} images/s (median step)")
    ratio = rates["whole training step"] / rates["model only (pre-made tensors)"]
    mean_ratio = statistics.mean(model_only) / statistics.mean(whole)
    print(f"whole / model only:            {ratio:8.3f} (ratio of means {mean_ratio:.3f}) -> feed + bookkeeping "
          f"cost {100 * (1 - ratio):.1f}% (target <= 10%: {'met' if ratio >= 0.9 else 'NOT met'})")

if __name__ == "__main__":
    main()
