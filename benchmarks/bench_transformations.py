"""Speed of the 28 transformations on generator-sized inputs, as ratios to a baseline timed in the same run.

Input: a 30x30 grid with three single-colored 5x5 objects (hollow where a transformation needs holes, solid
otherwise). Baseline: `extract_objects` + `draw_objects` on the same grid, the grid work every
generated sample does anyway. Also compared: the label-based hole finder (computed, and remembered
by mask as generation uses it) against `scipy.ndimage.binary_fill_holes`.

Run: python benchmarks/bench_transformations.py
"""

from __future__ import annotations

import timeit

import numpy as np
from scipy import ndimage

from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.transformations import TRANSFORMATIONS, apply_sequence, apply_step, cells, enclosed_holes

SHAPE = (30, 30)
ANCHORS = ((6, 6), (6, 18), (18, 12))
COGITAO_SECONDS_PER_PAIR = 0.005


def _objects(hollow: bool) -> list[GridObject]:
    pixels = np.full((5, 5), 3, dtype=np.uint8)
    if hollow:
        pixels[1:4, 1:4] = 0
    return [GridObject(pixels, top, left) for top, left in ANCHORS]


def _microseconds(function, repeat: int = 5, number: int = 400) -> float:
    return min(timeit.repeat(function, repeat=repeat, number=number)) / number * 1e6


def main() -> None:
    solid, hollow = _objects(hollow=False), _objects(hollow=True)
    grid = draw_objects(SHAPE, solid)
    baseline = _microseconds(lambda: draw_objects(SHAPE, extract_objects(grid)))
    print(f"baseline extract_objects + draw_objects: {baseline:.1f} us per grid")
    print(f"{'transformation':34s} {'us/step':>8s} {'ratio':>6s}")
    slowest = 0.0
    for name, transformation in TRANSFORMATIONS.items():
        objects = solid if transformation.accepts(solid[0]) else hollow
        seconds = _microseconds(lambda objects=objects, name=name: apply_step(objects, name, SHAPE))
        slowest = max(slowest, seconds)
        print(f"{name:34s} {seconds:8.1f} {seconds / baseline:6.2f}")
    print(f"slowest step: {slowest:.1f} us = {1e6 / slowest:,.0f} three-object steps per second")
    sequence = ["rot90", "pad_top"]
    whole = _microseconds(lambda: apply_sequence(grid, sequence))
    print(
        f"apply_sequence(grid, {sequence}): {whole:.1f} us, ratio {whole / baseline:.2f} "
        f"(COGITAO reports {COGITAO_SECONDS_PER_PAIR * 1e6:.0f} us per generated pair, paper 000 App. D.3)"
    )
    mask = hollow[0].mask
    remembered = _microseconds(lambda: enclosed_holes(mask), number=2000)
    label_based = _microseconds(lambda: cells.holes_of(mask), number=2000)
    fill_based = _microseconds(lambda: ndimage.binary_fill_holes(mask) & ~mask, number=2000)
    print(
        f"holes of a 5x5 ring: computed {label_based:.1f} us (remembered {remembered:.1f} us), "
        f"binary_fill_holes {fill_based:.1f} us, ratio {label_based / fill_based:.2f}"
    )


if __name__ == "__main__":
    main()
