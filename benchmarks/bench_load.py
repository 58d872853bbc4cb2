"""Whole commands on a quiet machine and beside busy processes: wall-clock and CPU seconds per variant.

A user's machine is rarely idle. Threads that spin while they wait for each other (OpenMP's active
wait) cost little on a quiet machine and a great deal on a shared one, where a spinning thread
takes the core its partner needs. This script times one `vision-bench` command per code tree (as
`bench_commands.py` does, the variants taking turns) twice: alone, and beside `--busy N` processes
that spin for the whole measurement (a stand-in for other users' jobs). CPU time is the figure to
compare: the busy processes stretch every variant's wall time, but only spinning inflates its CPU.

Run: python benchmarks/bench_load.py --variant before=/tmp/before --variant after=/tmp/after \
         --busy 2 --rounds 2 -- train /abs/config.yaml --out {out} --no-progress
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_commands import load_average, time_command


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` busy loops for the duration of the block (none for 0)."""
    workers = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=TREE",
                        help="a code tree holding vision_bench/ and render/ (repeatable; default: the installed code)")
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the loaded runs (default 2)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the vision-bench command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    variants = {name: Path(tree) for name, tree in (v.split("=", 1) for v in args.variant)} or {"installed": None}
    print(f"command: vision-bench {' '.join(command)}")
    print(f"load before: {load_average()}")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for condition, processes in (("quiet", 0), (f"beside {args.busy} busy", args.busy)):
            with busy(processes):
                for name, tree in variants.items():
                    times.setdefault((name, condition), []).append(time_command(command, tree))
    print(f"load after: {load_average()}")
    baseline = {condition: statistics.median(c for _, c in runs)
                for (name, condition), runs in times.items() if name == next(iter(variants))}
    for (name, condition), runs in times.items():
        walls, cpus = zip(*runs)
        cpu = statistics.median(cpus)
        print(f"{name:>10} {condition:<16} wall median {statistics.median(walls):7.1f} s "
              f"({', '.join(f'{s:.1f}' for s in walls)}); CPU median {cpu:7.1f} s "
              f"({', '.join(f'{s:.1f}' for s in cpus)}); CPU / first variant's {cpu / baseline[condition]:.2f}")


if __name__ == "__main__":
    main()
