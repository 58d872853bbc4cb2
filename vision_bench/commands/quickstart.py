"""`vision-bench quickstart [--out DIR]`: the built-in default run (see `vision_bench.quickstart`)."""

from __future__ import annotations

import argparse
import logging
import time

from vision_bench.commands._common import add_device_argument, add_progress_arguments, check_out_folder, show_progress
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips

logger = logging.getLogger(__name__)

NAME = "quickstart"
HELP = (
    "train a timm CNN and a timm ViT on a small EnvGen-style study at 64x64, evaluate them ID and OOD "
    "against the baselines, write the report and print a summary (about 3 minutes on a laptop CPU)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="quickstart", help="output folder (default: ./quickstart); reruns resume")
    add_device_argument(parser)
    add_progress_arguments(parser)
    add_lpips_arguments(parser, net=False)


def run(args: argparse.Namespace) -> int:
    from vision_bench.quickstart import ESTIMATE, PHASES, run_quickstart

    start = time.perf_counter()
    progress = show_progress(args)
    check_out_folder(args.out, NAME)
    logger.info("%d steps, %s: %s", len(PHASES), ESTIMATE, "; ".join(PHASES))
    logger.info("step 1/%d: %s", len(PHASES), PHASES[0])
    prepare_lpips("alex", args.offline)
    result, table = run_quickstart(args.out, progress=progress, device=args.device)
    print(table)
    print(f"\nreport: {result.report_md}\n        {result.report_html}")
    print(f"results: {result.results_csv}\n         {result.results_json}")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0
