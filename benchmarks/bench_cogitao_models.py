"""COGITAO's baselines: the cost of one training step of each `cogitao:` preset against the ResNet, same run.

    python benchmarks/bench_cogitao_models.py [--grid 15] [--batch 32] [--steps 5] [--threads 1] [--device cpu]
        [--presets resnet vanilla-tf ...]

Each preset is built as training builds it for a study of `--grid`-cell grids (its canvas set to that
largest grid) and one training step (its own `training_loss` on a fixed batch of random grids, backward,
AdamW) is timed; the ResNet's step is timed alternately with it, step by step, so a drifting machine biases
neither side. The median step and the ratio to the ResNet's are printed; prediction (`predict_grids`, which is
32 forward passes for LLaDA and up to 7 loop steps for PL-TF) is timed once per preset after the steps.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from vision_bench.models import create_model
from vision_bench.models.cogitao import PRESETS


def grid_batch(batch: int, grid: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random grids of `grid` x `grid` cells as a training batch holds them (input, target, their shape)."""
    grids = torch.randint(0, 10, (batch, grid, grid), generator=generator)
    return {"input_grid": grids, "target_grid": grids.flip(-1),
            "grid_shape": torch.tensor([[grid, grid]] * batch)}


def training_step(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> Callable[[], None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model.training_loss(batch).backward()  # type: ignore[operator]
        optimizer.step()

    return step


def timed(call: Callable[[], object], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    call()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--grid", type=int, default=15)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    grids = grid_batch(args.batch, args.grid, torch.Generator().manual_seed(0))
    batch = {key: value.to(device) for key, value in grids.items()}
    torch.manual_seed(0)
    baseline = create_model("cogitao:resnet", grid_size=args.grid).to(device).train()
    baseline_step = training_step(baseline, batch)
    print(f"{args.grid}x{args.grid} grids, batch {args.batch}, device {device}, {args.threads} thread(s), "
          f"median of {args.steps} steps")
    print("preset\tparameters\tstep s\tresnet step s\tratio\tpredict s")
    for preset in args.presets:
        model = create_model(f"cogitao:{preset}", grid_size=args.grid).to(device).train()
        step = training_step(model, batch)
        step(), baseline_step()
        times, baseline_times = [], []
        for _ in range(args.steps):
            times.append(timed(step, device))
            baseline_times.append(timed(baseline_step, device))
        model.eval()
        predict = timed(lambda model=model: model.predict_grids(batch), device)  # type: ignore[misc]
        parameters = sum(p.numel() for p in model.parameters())
        median, base = statistics.median(times), statistics.median(baseline_times)
        print(f"{preset}\t{parameters:,}\t{median:.3f}\t{base:.3f}\t{median / base:.2f}x\t{predict:.3f}")


if __name__ == "__main__":
    main()
