"""Rendering speed: 20x20 grids -> 128x128 RGB with `render_batch`, against Pillow per image.

The baseline, timed in the same run on the same grids, is the straightforward way to draw
COGITAO-RGB images: for each grid, `Image.fromarray(palette[grid]).resize((128, 128), NEAREST)`,
plus `ImageFilter.GaussianBlur(sigma)` for the blurred case. Both sides run on one thread
(`cv2.setNumThreads(1)`). Times are the best of `--repeats` runs; ratio = baseline / ours.
Also printed: other render options against the same baseline, the default spec at several batch
sizes (the output of a large batch no longer fits in cache, so memory bandwidth caps its speed),
and PNG / JPEG encode rates.

    python benchmarks/bench_render.py [--grids 1024] [--batch 256] [--repeats 5] [--sigma 1.5]
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

import cv2
import numpy as np
from PIL import Image, ImageFilter

from render import RenderSpec, encode, render_batch

SIZE = 128
GRID = 20


def best_time(function: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` runs, in seconds (after one warm-up run)."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def pillow_baseline(grids: np.ndarray, palette: np.ndarray, sigma: float | None) -> Callable[[], None]:
    def run() -> None:
        for grid in grids:
            image = Image.fromarray(palette[grid]).resize((SIZE, SIZE), Image.NEAREST)
            if sigma is not None:
                image.filter(ImageFilter.GaussianBlur(sigma))

    return run


def ours(grids: np.ndarray, spec: RenderSpec, batch: int) -> Callable[[], None]:
    """`render_batch` over all grids; every run uses new seeds, so nothing seed-dependent is cached."""
    runs = itertools.count()

    def run() -> None:
        first = next(runs) * len(grids)
        for start in range(0, len(grids), batch):
            chunk = grids[start : start + batch]
            render_batch(chunk, spec, seeds=range(first + start, first + start + len(chunk)))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grids", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sigma", type=float, default=1.5)
    args = parser.parse_args()
    cv2.setNumThreads(1)

    grids = np.random.default_rng(0).integers(0, 10, (args.grids, GRID, GRID), dtype=np.uint8)
    palette = RenderSpec().colors()
    per_image = 1e6 / args.grids
    plain = best_time(pillow_baseline(grids, palette, None), args.repeats)
    blurred = best_time(pillow_baseline(grids, palette, args.sigma), args.repeats)
    print(f"{args.grids} grids {GRID}x{GRID} -> {SIZE}x{SIZE} RGB, render_batch in batches of {args.batch}, 1 thread")
    print(f"baseline Pillow NEAREST per image: {plain * per_image:8.1f} us/image")
    print(f"baseline Pillow + GaussianBlur({args.sigma}): {blurred * per_image:8.1f} us/image\n")
    print(f"{'render spec':<40} {'us/image':>9} {'ratio':>7}  baseline")
    cases = [
        ("default (stretch)", RenderSpec(), plain, "Pillow"),
        (f"gaussian:{args.sigma}", RenderSpec(blur=f"gaussian:{args.sigma}"), blurred, "Pillow+blur"),
        ("box:3", RenderSpec(blur="box:3"), blurred, "Pillow+blur"),
        ("fit", RenderSpec(layout="fit"), plain, "Pillow"),
        ("random background", RenderSpec(background="random"), plain, "Pillow"),
        ("fit + gridlines", RenderSpec(layout="fit", gridlines=True), plain, "Pillow"),
        ("antialias 2", RenderSpec(antialias=2), plain, "Pillow"),
        ("jitter (per-image placement)", RenderSpec(jitter={"max_shift": 4, "scale": [0.9, 1.1]}), plain, "Pillow"),
    ]
    for name, spec, baseline, label in cases:
        seconds = best_time(ours(grids, spec, args.batch), args.repeats)
        print(f"{name:<40} {seconds * per_image:9.1f} {baseline / seconds:6.1f}x  {label}")

    print("\ndefault spec by batch size (a batch's images are written once; up to 32 images, 1.5 MiB, they stay "
          "in the core's cache, beyond that the memory bandwidth sets the pace)")
    for batch in (16, 32, 64, 256):
        seconds = best_time(ours(grids, RenderSpec(), batch), args.repeats)
        print(f"{f'batch {batch}':<40} {seconds * per_image:9.1f} {plain / seconds:6.1f}x  Pillow")

    formats = [
        ("png", {"compression": 1}),
        ("png", {"compression": 6}),
        ("jpeg", {"quality": 95}),
        ("jpeg", {"quality": 100}),
        ("jpeg", {"quality": 95, "subsampling": True}),
    ]
    for look, spec in (("sharp", RenderSpec()), (f"gaussian:{args.sigma}", RenderSpec(blur=f"gaussian:{args.sigma}"))):
        images = render_batch(grids[:256], spec)
        print(f"\nencode rates, 256 {look} {SIZE}x{SIZE} renders (one thread)")
        for format, options in formats:
            seconds = best_time(lambda format=format, options=options, images=images:
                                [encode(image, format, **options) for image in images], args.repeats)
            size = np.mean([len(encode(image, format, **options)) for image in images[:32]])
            described = ", ".join(f"{k}={v}" for k, v in options.items())
            rate = len(images) / seconds
            print(f"{format:<5} {described:<30} {rate:8.0f} images/s  {size / 1024:6.1f} KiB/image")


if __name__ == "__main__":
    main()
