"""`vision-bench quickstart [--out DIR]`: the built-in default run (see `vision_bench.quickstart`)."""

from __future__ import annotations

import argparse
import time

from vision_bench.commands._common import add_device_argument, add_progress_arguments, show_progress
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips

NAME = "quickstart"
HELP = (
    "train a timm CNN and a timm ViT on a small EnvGen-style study at 128x128, evaluate them ID and OOD "
    "against the baselines, write the report and print a summary (a few minutes on a laptop CPU)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="quickstart", help="output folder (default: ./quickstart); reruns resume")
    add_device_argument(parser)
    add_progress_arguments(parser)
    add_lpips_arguments(parser, net=False)


def run(args: argparse.Namespace) -> int:
    from vision_bench.quickstart import run_quickstart

    start = time.perf_counter()
    progress = show_progress(args)
    prepare_lpips("alex", args.offline)
    result, table = run_quickstart(args.out, progress=progress, device=args.device)
    print(table)
    print(f"\nreport: {result.report_md}\n        {result.report_html}")
    print(f"results: {result.results_csv}\n         {result.results_json}")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0
