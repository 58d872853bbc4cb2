"""Decode accuracy study: how much blur and JPEG compression `render.decode` survives.

ARC-like grids (background with a few solid or multi-colored rectangles, sizes 5..30) are
rendered at 128x128 (default spec, or `--layout fit`), degraded, and decoded with the same spec.
Printed as markdown: per grid size, the share of grids decoded exactly and, in parentheses, the
share of cells decoded correctly. Degradations: Gaussian blur sigma 0..6 pixels (the render's own
blur, which `decode` undoes at the cell level), JPEG quality 50..100 with and without 4:2:0
chroma subsampling, and blur followed by JPEG.

    python benchmarks/bench_decode.py [--grids 100] [--layout stretch|fit]
"""

from __future__ import annotations

import argparse

import numpy as np

from render import RenderSpec, encode, load, render_batch
from render.decode import decode_batch

SIZES = (5, 10, 15, 20, 25, 30)
SIGMAS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0)
BLURRED_JPEG = ((1.5, 95), (3.0, 95), (1.5, 75), (3.0, 75))
QUALITIES = (50, 75, 90, 95, 100)


def arc_like_grid(rng: np.random.Generator, side: int) -> np.ndarray:
    """A side x side grid: background 0 with 1..4 rectangles, half of them multi-colored."""
    grid = np.zeros((side, side), dtype=np.uint8)
    for _ in range(rng.integers(1, 5)):
        height, width = rng.integers(1, max(2, side // 2) + 1, size=2)
        top, left = rng.integers(0, side - height + 1), rng.integers(0, side - width + 1)
        colors = rng.integers(1, 10, size=(height, width)) if rng.random() < 0.5 else rng.integers(1, 10)
        grid[top : top + height, left : left + width] = colors
    return grid


def score(decoded: list[np.ndarray], grids: np.ndarray) -> str:
    exact = np.mean([np.array_equal(d, g) for d, g in zip(decoded, grids)])
    cells = np.mean([np.mean(d == g) for d, g in zip(decoded, grids)])
    return f"{100 * exact:.0f} ({100 * cells:.1f})"


def table(title: str, columns: list[str], rows: dict[int, list[str]]) -> None:
    print(f"\n{title}\n")
    print("| grid | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for side, cells in rows.items():
        print(f"| {side}x{side} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grids", type=int, default=100, help="grids per size")
    parser.add_argument("--layout", default="stretch", choices=("stretch", "fit"))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    grids = {side: np.stack([arc_like_grid(rng, side) for _ in range(args.grids)]) for side in SIZES}
    print(f"{args.grids} ARC-like grids per size, 128x128 images, layout {args.layout}; "
          "cells: exact-match % (cell accuracy %)")

    blur_rows: dict[int, list[str]] = {}
    for side, batch in grids.items():
        blur_rows[side] = []
        for sigma in SIGMAS:
            spec = RenderSpec(layout=args.layout, blur=f"gaussian:{sigma}" if sigma else "none")
            decoded = decode_batch(render_batch(batch, spec), spec, [batch.shape[1:]] * len(batch))
            blur_rows[side].append(score(decoded, batch))
    table("Gaussian blur (sigma, pixels)", [f"{s:g}" for s in SIGMAS], blur_rows)

    spec = RenderSpec(layout=args.layout)
    jpeg_rows: dict[int, list[str]] = {}
    for side, batch in grids.items():
        images = render_batch(batch, spec)
        jpeg_rows[side] = []
        for subsampling in (False, True):
            for quality in QUALITIES:
                options = {"quality": quality, "subsampling": subsampling}
                degraded = np.stack([load(encode(image, "jpeg", **options)) for image in images])
                decoded = decode_batch(degraded, spec, [batch.shape[1:]] * len(batch))
                jpeg_rows[side].append(score(decoded, batch))
    columns = [f"q{q}" for q in QUALITIES] + [f"q{q} 4:2:0" for q in QUALITIES]
    table("JPEG quality (4:4:4, then 4:2:0 chroma subsampling)", columns, jpeg_rows)

    both_rows: dict[int, list[str]] = {}
    for side, batch in grids.items():
        both_rows[side] = []
        for sigma, quality in BLURRED_JPEG:
            spec = RenderSpec(layout=args.layout, blur=f"gaussian:{sigma}")
            images = render_batch(batch, spec)
            degraded = np.stack([load(encode(image, "jpeg", quality=quality)) for image in images])
            both_rows[side].append(score(decode_batch(degraded, spec, [batch.shape[1:]] * len(batch)), batch))
    table("Gaussian blur, then JPEG (4:4:4)", [f"sigma {s:g} + q{q}" for s, q in BLURRED_JPEG], both_rows)


if __name__ == "__main__":
    main()
