"""Generation throughput on the reference setting (configs/reference_generation.yaml).

The setting of COGITAO's timing (paper 000, appendix D.3): a 20x20 grid, 4 objects smaller than
6x6, random depth-2 sequences of all 28 transformations. COGITAO reports 0.005 s per pair, i.e.
200 pairs/s. Targets here: >= 5,000 pairs/s on one core and >= 1.8x that with 2 workers.

Measured in one run, on disjoint index ranges of the train split:
  - one core, cold: a fresh process, object library already built, every per-sequence cache empty;
  - one core, warm: after a warm-up pass, so the caches (which templates survive which sequence,
    box extents) are filled, as they are after the first minutes of a large generation;
  - two workers on a fresh range of the same size, forked after the same warm-up;
and the ratios warm / cold and 2 workers / 1 core. CPU seconds per pair are printed next to
wall-clock rates: on a busy machine the wall clock undercounts what one core can do.

Run: python benchmarks/bench_generate.py [--pairs 5000] [--warmup 20000] [--config FILE]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.generator import generate_split

REPO = Path(__file__).resolve().parents[1]
COGITAO_PAIRS_PER_SECOND = 1 / 0.005


def _timed(config: TaskConfig, start: int, stop: int, workers: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its finished children) to generate start..stop-1."""
    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    cpu_before, wall_before = cpu(), time.perf_counter()
    generate_split(config, "train", start, stop, workers=workers)
    return time.perf_counter() - wall_before, cpu() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "reference_generation.yaml")
    parser.add_argument("--pairs", type=int, default=5000, help="pairs per measured run")
    parser.add_argument("--warmup", type=int, default=20000, help="pairs generated to fill the caches")
    args = parser.parse_args()
    config = TaskConfig.from_yaml(args.config)
    n = args.pairs
    generate_split(config, "train", 0, 1)
    cold = _timed(config, 1, 1 + n, 1)
    _timed(config, 1 + n, 1 + n + args.warmup, 1)
    base = 1 + n + args.warmup
    warm = _timed(config, base, base + n, 1)
    two = _timed(config, base + n, base + 2 * n, 2)

    print(f"config: {args.config.relative_to(REPO) if args.config.is_relative_to(REPO) else args.config}; "
          f"{n} pairs per run; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'run':<22}{'pairs/s (wall)':>16}{'CPU ms/pair':>14}{'pairs per CPU s':>17}")
    for name, (wall, cpu) in (("1 core, cold", cold), ("1 core, warm", warm), ("2 workers, warm", two)):
        print(f"{name:<22}{n / wall:>16,.0f}{cpu / n * 1e3:>14.3f}{n / cpu:>17,.0f}")
    print(f"warm / cold (wall): {cold[0] / warm[0]:.2f}x")
    print(f"2 workers / 1 core (wall): {warm[0] / two[0]:.2f}x  (target >= 1.8x)")
    print(f"1 core warm vs COGITAO's 200 pairs/s: {n / warm[0] / COGITAO_PAIRS_PER_SECOND:.1f}x  "
          f"(target 5,000 pairs/s = 25x)")


if __name__ == "__main__":
    main()
