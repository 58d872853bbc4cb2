"""`vision-bench weights`: which weight files LPIPS and timm models will find, and where missing ones go."""

from __future__ import annotations

import argparse

NAME = "weights"
HELP = "show the LPIPS and timm weight files present on this machine and where missing ones belong"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--folder",
        metavar="DIR",
        help="folder of local timm weight files (default: $VISION_BENCH_WEIGHTS or ~/.cache/vision-bench/weights)",
    )


def run(args: argparse.Namespace) -> int:
    from vision_bench.weights import weight_files

    records = weight_files(args.folder)
    kind_width = max(len(r.kind) for r in records)
    name_width = max(len(r.name) for r in records)
    for record in records:
        present = "yes" if record.present else "no"
        print(f"{record.kind:<{kind_width}}  {record.name:<{name_width}}  {present:<3}  {record.path}  ({record.detail})")
    return 0
