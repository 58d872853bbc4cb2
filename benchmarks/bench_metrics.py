"""Metrics benchmark: every metric on 1,000 pairs of 128x128 images, batched, against a per-image loop.

The baseline, measured in the same run on the same images, is what a straightforward evaluation
does: for each pair, scikit-image's SSIM (the same Gaussian settings) and a numpy MSE. The batched
side runs all image metrics of `compute_metrics` (MSE, MSE sum, PSNR, SSIM, foreground and changed
MSE; LPIPS only when its weights are present, timed separately) and, on the grids behind the
images, all grid metrics. Times are the best of `--repeats` runs; the ratio is baseline / batched.

LPIPS (when its weights are present) is timed on the evaluation's workload: five predictors scored
against the same targets, batch by batch (two models, copy_input, mean_target: one image for every
sample, and the ground truth: identical to the target). The baseline is the official `lpips`
module's forward on every pair; the other side is `LpipsScorer`, which passes each target batch
through the network once, skips identical pairs and passes a repeated image once.

    python benchmarks/bench_metrics.py [--pairs 1000] [--size 128] [--repeats 3] [--threads N]
                                       [--lpips-targets 512] [--lpips-batch 64]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import cv2
import numpy as np
import torch
from skimage.metrics import structural_similarity

from vision_bench.errors import TransformationError
from vision_bench.metrics import LpipsScorer, compute_metrics, load_lpips
from vision_bench.tasks.transformations import apply_sequence

PALETTE = np.array(
    [[255, 255, 255], [0, 116, 217], [255, 65, 54], [46, 204, 64], [255, 220, 0], [170, 170, 170],
     [240, 18, 190], [255, 133, 27], [127, 219, 255], [135, 12, 37]], dtype=np.uint8,
)
"""cogitao-rgb: grid value -> RGB, white background."""
GRID = 16
ID_SEQUENCES = [["translate_up"], ["translate_left"], ["rot90"], ["mirror_vertical"], ["change_shape_color"]]
OOD_SEQUENCE = ["translate_down", "mirror_horizontal"]
IMAGE_METRICS = ["mse", "mse_sum", "psnr", "ssim", "fg_mse", "changed_mse"]
GRID_METRICS = ["grid_accuracy", "pixel_accuracy", "object_pixel_accuracy", "object_accuracy",
                "color_accuracy", "shape_accuracy", "stubbornness"]


def random_input(rng: np.random.Generator) -> np.ndarray:
    """A 16x16 grid with two or three separated rectangular objects of random colors."""
    grid = np.zeros((GRID, GRID), dtype=np.uint8)
    for band in rng.permutation(3)[: rng.integers(2, 4)]:
        top = 1 + 5 * band + rng.integers(0, 2)
        left = rng.integers(1, GRID - 5)
        height, width = rng.integers(1, 4), rng.integers(1, 5)
        grid[top:top + height, left:left + width] = rng.integers(1, 10, size=(height, width))
    return grid


def make_grids(pairs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inputs, targets, predictions): targets follow the OOD sequence; predictions are a mix of
    correct, stubborn (an ID sequence) and noisy answers."""
    rng = np.random.default_rng(seed)
    inputs, targets, preds = [], [], []
    while len(inputs) < pairs:
        grid = random_input(rng)
        try:
            target = apply_sequence(grid, OOD_SEQUENCE)
            stubborn = apply_sequence(grid, ID_SEQUENCES[rng.integers(len(ID_SEQUENCES))])
        except TransformationError:
            continue
        kind = len(inputs) % 3
        pred = stubborn.copy() if kind == 1 else target.copy()
        if kind == 2:
            cells = rng.integers(0, GRID, size=(3, 2))
            pred[cells[:, 0], cells[:, 1]] = rng.integers(0, 10, size=3)
        inputs.append(grid)
        targets.append(target)
        preds.append(pred)
    return np.stack(inputs), np.stack(targets), np.stack(preds)


def render(grids: np.ndarray, size: int, rng: np.random.Generator, noise: float = 0.0) -> torch.Tensor:
    """Cells drawn as size/16-pixel squares: (N, 3, size, size) float in [0, 1], plus optional pixel noise."""
    scale = size // GRID
    pixels = np.repeat(np.repeat(PALETTE[grids], scale, axis=1), scale, axis=2)
    images = pixels.transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    if noise:
        images = np.clip(images + rng.normal(0, noise, images.shape).astype(np.float32), 0, 1)
    return torch.from_numpy(np.ascontiguousarray(images))


def best_times(functions: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """(best wall time, its process CPU time) of each function; the functions take turns so that
    they share the machine's load. CPU time counts every thread, so wall / CPU shows the parallelism."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            wall, cpu = time.perf_counter(), time.process_time()
            function()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: min(values) for name, values in times.items()}


def baseline(pred: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-image scikit-image SSIM and numpy MSE on (N, H, W, 3) float32 arrays."""
    ssims, mses = [], []
    for a, b in zip(pred, target):
        ssims.append(structural_similarity(a, b, channel_axis=-1, gaussian_weights=True, sigma=1.5,
                                           use_sample_covariance=False, data_range=1.0))
        mses.append(np.mean((a - b) ** 2))
    return np.array(ssims), np.array(mses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="torch threads (also the CPU workers of the metrics)")
    parser.add_argument("--lpips-targets", type=int, default=512, help="targets of the LPIPS workload")
    parser.add_argument("--lpips-batch", type=int, default=64, help="evaluation batch size of the LPIPS workload")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(1)

    inputs, targets, preds = make_grids(args.pairs)
    input_images = render(inputs, args.size, rng)
    target_images = render(targets, args.size, rng)
    pred_images = render(preds, args.size, rng, noise=0.02)
    pred_np = pred_images.permute(0, 2, 3, 1).contiguous().numpy()
    target_np = target_images.permute(0, 2, 3, 1).contiguous().numpy()
    as_long = [torch.from_numpy(g.astype(np.int64)) for g in (inputs, targets, preds)]

    def batched_images() -> object:
        return compute_metrics(pred_images, target_images, input_images, background_rgb=PALETTE[0],
                               names=IMAGE_METRICS)

    def batched_ssim_mse() -> object:
        return compute_metrics(pred_images, target_images, names=["ssim", "mse"])

    def batched_grids() -> object:
        return compute_metrics(pred_grids=as_long[2], target_grids=as_long[1], input_grids=as_long[0],
                               id_sequences=ID_SEQUENCES, names=GRID_METRICS)

    print(f"{args.pairs} pairs of {args.size}x{args.size} RGB images ({GRID}x{GRID} grids); "
          f"torch threads {torch.get_num_threads()}, OpenCV threads {cv2.getNumThreads()}; best of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    reference_ssim, reference_mse = baseline(pred_np, target_np)
    values = batched_images()
    print(f"agreement: max |SSIM - skimage| {np.abs(values['ssim'].numpy() - reference_ssim).max():.1e}, "
          f"max |MSE - numpy| {np.abs(values['mse'].numpy() - reference_mse).max():.1e}")
    times = best_times({
        "loop": lambda: baseline(pred_np, target_np),
        "ssim_mse": batched_ssim_mse,
        "images": batched_images,
        "grids": batched_grids,
    }, args.repeats)
    loop, loop_cpu = times["loop"]
    print(f"{'':42}{'wall s':>8}{'cpu s':>8}{'speed-up':>10}")
    print(f"{'baseline loop (skimage SSIM + numpy MSE)':42}{loop:8.3f}{loop_cpu:8.3f}")
    rows = {"ssim_mse": "batched SSIM + MSE", "images": f"batched image metrics ({len(IMAGE_METRICS)})",
            "grids": f"batched grid metrics ({len(GRID_METRICS)})"}
    for key, label in rows.items():
        wall, cpu = times[key]
        speed = f"{loop / wall:9.1f}x" if key != "grids" else f"{wall / args.pairs * 1e3:6.2f} ms/pair"
        print(f"{label:42}{wall:8.3f}{cpu:8.3f} {speed}")
    lpips_workload(args, input_images, target_images, pred_images, rng)


def lpips_workload(args: argparse.Namespace, inputs: torch.Tensor, targets: torch.Tensor, preds: torch.Tensor,
                   rng: np.random.Generator) -> None:
    """The official module's forward on every (predictor, target) pair vs `LpipsScorer`, side by side."""
    load = load_lpips("alex")
    if load.module is None:
        print(f"LPIPS: {load.status}")
        return
    module, count = load.module.module, min(args.lpips_targets, len(targets))
    targets, inputs = targets[:count], inputs[:count]
    predictors = {
        "model_a": preds[:count],
        "model_b": render(make_grids(count, seed=2)[2], args.size, rng, noise=0.02),
        "copy_input": inputs,
        "mean_target": targets.mean(0, keepdim=True).expand(count, -1, -1, -1).contiguous(),
        "ground_truth": targets.clone(),
    }
    batches = [slice(start, start + args.lpips_batch) for start in range(0, count, args.lpips_batch)]

    def official() -> dict[str, torch.Tensor]:
        with torch.no_grad():
            return {name: torch.cat([module(pred[b] * 2 - 1, targets[b] * 2 - 1).reshape(-1) for b in batches])
                    for name, pred in predictors.items()}

    def scorer() -> dict[str, torch.Tensor]:
        fast = LpipsScorer(module)
        parts: dict[str, list[torch.Tensor]] = {name: [] for name in predictors}
        for b in batches:
            target = targets[b]  # one tensor per batch, as an evaluation scores every predictor against it
            for name, pred in predictors.items():
                parts[name].append(fast(pred[b], target))
        return {name: torch.cat(values) for name, values in parts.items()}

    expected, values = official(), scorer()
    worst = max(float((expected[name] - values[name]).abs().max()) for name in predictors)
    times = best_times({"official": official, "scorer": scorer}, args.repeats)
    pairs = count * len(predictors)
    print(f"LPIPS-alex, {len(predictors)} predictors x {count} targets = {pairs} pairs, batch {args.lpips_batch}; "
          f"max |scorer - official| {worst:.1e}")
    for key, label in (("official", "official lpips forward, every pair"), ("scorer", "LpipsScorer")):
        wall, cpu = times[key]
        print(f"{label:42}{wall:8.3f}{cpu:8.3f}{pairs / wall:9.0f} pairs/s")
    print(f"{'speed-up (official / scorer)':42}{times['official'][0] / times['scorer'][0]:25.2f}x")

if __name__ == "__main__":
    main()
