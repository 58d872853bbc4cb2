"""Generation throughput on the reference setting (configs/reference_generation.yaml).

The setting of COGITAO's timing (paper 000, appendix D.3): a 20x20 grid, 4 objects smaller than
6x6, random depth-2 sequences of all 28 transformations. COGITAO reports 0.005 s per pair, i.e.
200 pairs/s. Targets here: >= 5,000 pairs/s on one core and >= 1.8x that with 2 workers.

Measured in one run, each on its own index range of the train split:
  - one core, cold: a fresh process, object library already built, every per-sequence cache empty;
  - one core, warm: after a warm-up pass, so the caches (which templates survive which sequence,
    box extents) are filled, as they are after the first seconds of a large generation;
  - two workers, warm: `generate_split(..., workers=2)`, forked after the same warm-up, every
    sample object sent back to this process (which then spends a good part of a core receiving them);
  - tables, 1 core and 2 workers, warm: samples turned into Arrow tables where they are generated
    (`map_split` + `table_of`), so this process only receives a few tables: the scaling of
    generation itself;
  - the `vision-bench generate` path, warm, with 1 and with 2 workers: those tables written to one
    Parquet file here (the encoding, in this process alone, caps the speed-up).
  - two independent one-core runs at once, each in its own forked process with nothing sent back:
    the most two processes can do on this machine, the ceiling for any 2-worker speed-up (shared
    caches, memory bandwidth and neighbours on a virtual machine keep it below 2x).
Warm rows are the best of `--repeats` rounds (the rounds take turns, so machine noise hits all rows
alike); CPU seconds per pair count this process and its workers.

Run: python benchmarks/bench_generate.py [--pairs 5000] [--warmup 20000] [--repeats 5] [--config FILE]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.formats import table_of, write_tables
from vision_bench.tasks.sampling import generate_split, map_split

REPO = Path(__file__).resolve().parents[1]
COGITAO_PAIRS_PER_SECOND = 1 / 0.005
Run = Callable[[int, int], object]


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(run: Run, start: int, stop: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its finished children) of run(start, stop), started
    after a full garbage collection so that no run pays for the previous one's objects."""
    gc.collect()
    cpu_before, wall_before = _cpu(), time.perf_counter()
    run(start, stop)
    return time.perf_counter() - wall_before, _cpu() - cpu_before


def _alone(job: tuple[TaskConfig, int, int]) -> int:
    config, start, stop = job
    return len(generate_split(config, "train", start, stop))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "reference_generation.yaml")
    parser.add_argument("--pairs", type=int, default=5000, help="pairs per measured run")
    parser.add_argument("--warmup", type=int, default=20000, help="pairs generated to fill the caches")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the warm measurements (best is kept)")
    args = parser.parse_args()
    config = TaskConfig.from_yaml(args.config)
    n = args.pairs
    scratch = Path(tempfile.mkdtemp(prefix="bench-generate-"))

    def samples(workers: int) -> Run:
        return lambda start, stop: generate_split(config, "train", start, stop, workers=workers)

    def parquet(workers: int) -> Run:
        path = scratch / f"train-{workers}.parquet"
        return lambda start, stop: write_tables(map_split(config, "train", table_of, start, stop, workers), path)

    def tables(workers: int) -> Run:
        return lambda start, stop: sum(table.num_rows for table in map_split(config, "train", table_of, start, stop,
                                                                             workers))

    def ceiling(start: int, stop: int) -> None:
        middle = (start + stop) // 2
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pool.map(_alone, [(config, start, middle), (config, middle, stop)])

    runs = {
        "1 core, warm": samples(1),
        "2 independent 1-core runs": ceiling,
        "2 workers, warm": samples(2),
        "tables: 1 core, warm": tables(1),
        "tables: 2 workers, warm": tables(2),
        "generate: 1 worker, warm": parquet(1),
        "generate: 2 workers, warm": parquet(2),
    }
    generate_split(config, "train", 0, 1)
    results = {"1 core, cold": _timed(samples(1), 1, 1 + n)}
    _timed(samples(1), 1 + n, 1 + n + args.warmup)
    start = 1 + n + args.warmup
    for _ in range(args.repeats):
        for name, run in runs.items():
            measured = _timed(run, start, start + n)
            start += n
            if name not in results or measured[0] < results[name][0]:
                results[name] = measured

    print(f"config: {args.config.relative_to(REPO) if args.config.is_relative_to(REPO) else args.config}; "
          f"{n} pairs per run, best of {args.repeats}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'run':<28}{'pairs/s (wall)':>16}{'CPU ms/pair':>14}{'pairs per CPU s':>17}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<28}{n / wall:>16,.0f}{cpu / n * 1e3:>14.3f}{n / cpu:>17,.0f}")

    def ratio(slow: str, fast: str) -> float:
        return results[slow][0] / results[fast][0]

    print(f"warm / cold (wall): {ratio('1 core, cold', '1 core, warm'):.2f}x")
    print(f"machine ceiling, 2 independent runs / 1 core (wall): "
          f"{ratio('1 core, warm', '2 independent 1-core runs'):.2f}x")
    print(f"2 workers / 1 core, samples (wall): {ratio('1 core, warm', '2 workers, warm'):.2f}x")
    print(f"2 workers / 1 core, tables (wall): {ratio('tables: 1 core, warm', 'tables: 2 workers, warm'):.2f}x  "
          "(target >= 1.8x)")
    print(f"2 workers / 1 worker, generate to Parquet (wall): "
          f"{ratio('generate: 1 worker, warm', 'generate: 2 workers, warm'):.2f}x")
    print(f"1 core warm vs COGITAO's 200 pairs/s: {n / results['1 core, warm'][0] / COGITAO_PAIRS_PER_SECOND:.1f}x  "
          f"(target 5,000 pairs/s = 25x)")
    for path in scratch.iterdir():
        path.unlink()
    scratch.rmdir()


if __name__ == "__main__":
    main()
