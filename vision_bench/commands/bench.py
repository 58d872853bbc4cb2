"""`vision-bench bench CONFIG --out DIR`: models x experiments x seeds, trained, evaluated, reported.

Re-running the same command skips finished cells and resumes interrupted ones; the report
(DIR/report.md and a self-contained DIR/report.html) is rewritten at the end of every run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips

NAME = "bench"
HELP = "train and evaluate a matrix of models x experiments x seeds and write a report (resumable)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, metavar="CONFIG", help="bench config (YAML); see configs/bench_smoke.yaml")
    parser.add_argument("--out", type=Path, required=True, help="output folder (re-use it to resume)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_lpips_arguments(parser, net=False)


def run(args: argparse.Namespace) -> int:
    from vision_bench.bench import run_bench, summary_table

    prepare_lpips("alex", args.offline)
    result = run_bench(args.config, args.out, progress=not args.no_progress)
    print(summary_table(result))
    print(
        f"{len(result.computed)} cells computed, {len(result.skipped)} already finished; "
        f"report: {result.report_md} and {result.report_html}"
    )
    return 0
