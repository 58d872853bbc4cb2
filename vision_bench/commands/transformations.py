"""`vision-bench transformations`: list the 28 object transformations and what each does."""

from __future__ import annotations

import argparse

NAME = "transformations"
HELP = "list the 28 object transformations, one per line: name, a tab, what it does"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command takes no options."""


def run(args: argparse.Namespace) -> int:
    from vision_bench.tasks.transformations import TRANSFORMATIONS

    for name in TRANSFORMATIONS:
        print(f"{name}\t{TRANSFORMATIONS.description(name)}")
    return 0
