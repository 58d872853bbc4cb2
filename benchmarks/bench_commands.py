"""Whole `vision-bench` commands timed from the shell, start-up included, for one or more code trees.

What a user waits for is a whole command, not a warm in-process loop, so this is the yardstick for
speed tricks (issue #15): each variant is a copy of the `vision_bench` and `render` packages (one
with a trick, one with the plain code), put first on PYTHONPATH; the rounds take turns between
variants, so machine noise hits all alike, and the median of each is reported with the machine's
load average (from `uptime`) before and after.

Run: python benchmarks/bench_commands.py --variant plain=/tmp/plain --variant trick=/tmp/trick \
         --rounds 3 -- generate --study envgen/G1/1 --n-train 10000 --n-val 10 --n-test 10 --out {out}
`{out}` in the command becomes a fresh folder per run (removed afterwards); commands run from a
scratch folder, so give files by absolute path; with no --variant the installed code runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def load_average() -> str:
    """The 1, 5 and 15-minute load averages, as `uptime` prints them."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def time_command(command: list[str], tree: Path | None) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one `python -m vision_bench COMMAND`, with `tree`
    first on PYTHONPATH if given. CPU time, unlike wall time, barely depends on the machine's load."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = Path(tempfile.mkdtemp(prefix="bench-command-"))
    try:
        arguments = [part.replace("{out}", str(out / "out")) for part in command]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        # run from the scratch folder: the current directory comes first on sys.path and would shadow `tree`
        subprocess.run([sys.executable, "-m", "vision_bench", *arguments], env=env, check=True, cwd=out,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=TREE",
                        help="a code tree holding vision_bench/ and render/ (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the vision-bench command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    variants = {name: Path(tree) for name, tree in (v.split("=", 1) for v in args.variant)} or {"installed": None}
    print(f"command: vision-bench {' '.join(command)}")
    print(f"load before: {load_average()}")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, tree in variants.items():
            times[name].append(time_command(command, tree))
    print(f"load after: {load_average()}")
    for name, runs in times.items():
        walls, cpus = zip(*runs)
        print(f"{name}: wall median {statistics.median(walls):.2f} s ({', '.join(f'{s:.2f}' for s in walls)}); "
              f"CPU median {statistics.median(cpus):.2f} s ({', '.join(f'{s:.2f}' for s in cpus)})")


if __name__ == "__main__":
    main()
