"""Switches shared by the long-running commands, so each means the same everywhere.

`--no-progress` hides progress bars; `--quiet` also hides informational messages (results and
errors are still printed); `--device` chooses where a model runs; `--set key.path=value`
overrides one key of a YAML config, validated like the file.
"""

from __future__ import annotations

import argparse
import logging

DEVICE_HELP = "where models run: auto (CUDA, then MPS, then CPU; default), cpu, cuda, cuda:1, mps"


def add_progress_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument("--quiet", action="store_true",
                        help="hide progress bars and informational messages (results and errors still print)")


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars unless `--no-progress` or `--quiet`; `--quiet` also silences the `vision_bench` logger."""
    if getattr(args, "quiet", False):
        logging.getLogger("vision_bench").setLevel(logging.WARNING)
    return not (getattr(args, "no_progress", False) or getattr(args, "quiet", False))


def add_device_argument(parser: argparse.ArgumentParser, default: str = "auto") -> None:
    parser.add_argument("--device", default=default, help=DEVICE_HELP)


def add_set_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
        help="override one key of the YAML config, e.g. --set training.epochs=3 (repeatable; the value is "
        "read as YAML and validated like the file)",
    )
