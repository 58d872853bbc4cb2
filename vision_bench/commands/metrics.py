"""`vision-bench metrics`: list the metrics with their direction, column label and what each measures."""

from __future__ import annotations

import argparse

NAME = "metrics"
HELP = "list the metrics, one per line: name, direction (higher / lower is better), column label, description"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command takes no options."""


def run(args: argparse.Namespace) -> int:
    from vision_bench.metrics import METRICS

    name_width = max(len(name) for name in METRICS)
    label_width = max(len(spec.short_label) for _, spec in METRICS.items())
    for name, spec in METRICS.items():
        print(f"{name:<{name_width}}  {spec.direction:<6}  {spec.short_label:<{label_width}}  {spec.description}")
    return 0
