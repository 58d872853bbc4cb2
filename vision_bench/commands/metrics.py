"""`vision-bench metrics`: list the metrics with their direction and what each measures."""

from __future__ import annotations

import argparse

NAME = "metrics"
HELP = "list the metrics, one per line: name, direction (higher / lower is better), description"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command takes no options."""


def run(args: argparse.Namespace) -> int:
    from vision_bench.metrics import METRICS

    width = max(len(name) for name in METRICS)
    for name, spec in METRICS.items():
        print(f"{name:<{width}}  {spec.direction:<6}  {spec.description}")
    return 0
