"""Switches shared by the long-running commands, so each means the same everywhere.

`--no-progress` hides progress bars; `--quiet` also hides informational messages (results and
errors are still printed); `--device` chooses where a model runs; `--logger NAME` adds an experiment
tracker; `--select-on val_id|val_ood` picks the validation split that chooses the best checkpoint;
`--set key.path=value` overrides one key of a YAML config, validated like the file;
`check_out_folder` refuses an `--out` that holds another command's output. A renamed option keeps its old
spelling for one release as a hidden alias (`add_old_spelling`); the command line prints one
deprecation line when it is used (`warn_old_spellings`).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEVICE_CHOICES = "where models run: auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:1, mps"
DEVICE_HELP = f"{DEVICE_CHOICES} (default: auto)"
OLD_SPELLINGS = "old_spellings"  # the namespace attribute listing the (old, new) spellings used
OUT_FOLDER_MARKS = (
    ("bench.yaml", "a bench", ("bench", "quickstart")),
    ("checkpoints", "a training run", ("train",)),
    ("metrics.jsonl", "a training run", ("train",)),
    ("manifest.json", "a dataset export", ("export", "generate")),
    ("_progress", "an unfinished export", ("export",)),
    ("model.safetensors", "an exported model", ("export-model",)),
    ("metrics.json", "an evaluation", ("evaluate",)),
)
"""(a name a command writes at the top of its --out first, what the folder then holds, the commands that
may write into it)."""

logger = logging.getLogger(__name__)


def add_progress_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument("--quiet", action="store_true",
                        help="hide progress bars and informational messages (results and errors still print)")


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars unless `--no-progress` or `--quiet`, or standard error is not a terminal (a log file or a
    pipe, where bars would leave their escape codes; long runs then log a heartbeat line instead);
    `--quiet` also silences the `vision_bench` logger."""
    if getattr(args, "quiet", False):
        logging.getLogger("vision_bench").setLevel(logging.WARNING)
    if getattr(args, "no_progress", False) or getattr(args, "quiet", False):
        return False
    return _is_terminal(sys.stderr)


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed stream
        return False


def add_device_argument(parser: argparse.ArgumentParser, default: str | None = "auto",
                        default_text: str | None = None) -> None:
    """`--device`; `default_text` says what leaving it out means when that is not a device name
    (train: the config's runtime.device)."""
    help_text = DEVICE_HELP if default_text is None else f"{DEVICE_CHOICES} (default: {default_text})"
    parser.add_argument("--device", default=default, help=help_text)


def add_select_on_argument(parser: argparse.ArgumentParser, key: str) -> None:
    """`--select-on val_id|val_ood`: the validation split whose `checkpoint.metric` picks best.pt, set as `key`
    (written out here, as `vision_bench.train.config.CheckpointConfig` has them, so that `--help` needs no torch)."""
    parser.add_argument(
        "--select-on", choices=("val_id", "val_ood"), default=None,
        help=f"the validation split that picks the best checkpoint, set as {key}: val_id, or val_ood as COGITAO's "
        "paper chose (on its OOD validation loss) (default: the config's, val_id unless it says otherwise)",
    )


def check_select_on_agrees(select_on: str | None, overrides: Sequence[str], key: str) -> None:
    """Refuse `--select-on` beside a `--set` of the same `key` (a dotted path, e.g. train.checkpoint.select_on, or a
    mapping above it) to another split: one of the two would win without a word."""
    from vision_bench.config_files import parse_override
    from vision_bench.errors import ConfigError

    if select_on is None:
        return
    wanted = key.split(".")
    for override in overrides:
        path, value = parse_override(override)
        if path != wanted[: len(path)]:
            continue
        for part in wanted[len(path):]:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and value != select_on:
            raise ConfigError(f"--select-on {select_on} and --set {override} choose different splits for {key}; "
                              "give one of the two")


def add_logger_argument(parser: argparse.ArgumentParser, key: str) -> None:
    """`--logger NAME` (repeatable): an experiment tracker added to the config's `key` (the names are
    `vision_bench.train.trackers.TRACKERS`', written out here so that `--help` needs no torch)."""
    parser.add_argument(
        "--logger", dest="loggers", action="append", default=[], metavar="NAME",
        help=f"also log to this experiment tracker: tensorboard, wandb or mlflow (repeatable; added to {key}; "
        "none by default)",
    )


def check_out_folder(out: str | os.PathLike[str], command: str) -> None:
    """Refuse an --out that is a file, or that holds another command's output (a run, an export, a bench,
    ...), before anything is written: the files of two tools must not mix in one folder."""
    from vision_bench.errors import ConfigError  # here: `vision-bench --help` stays fast

    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {folder} is a file, not a folder; give a new or empty folder")
    for name, holds, owners in OUT_FOLDER_MARKS:
        if command not in owners and os.path.lexists(folder / name):
            raise ConfigError(f"--out {folder} holds {holds} ({name}), which {command} must not mix its files "
                              "into; give a new or empty folder")


def add_set_argument(parser: argparse.ArgumentParser, example: str = "training.epochs=3") -> None:
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
        help=f"override one key of the YAML config, e.g. --set {example} (repeatable; the value is "
        "read as YAML and validated like the file)",
    )


class _OldSpelling(argparse.Action):
    """A hidden old spelling of another option: stores into that option's destination and records
    that it was used, so that the command line can say which spelling replaces it."""

    def __init__(self, option_strings: Sequence[str], dest: str, new_spelling: str, **options: Any) -> None:
        super().__init__(option_strings, dest, **options)
        self.new_spelling = new_spelling

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        used = getattr(namespace, OLD_SPELLINGS, [])
        setattr(namespace, OLD_SPELLINGS, [*used, (option_string, self.new_spelling)])


def add_old_spelling(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str,
                     new: argparse.Action) -> None:
    """Accept `old` as a hidden, deprecated spelling of the option `new` (same values, same destination)."""
    parser.add_argument(
        old, dest=new.dest, action=_OldSpelling, new_spelling=new.option_strings[0], type=new.type or str,
        choices=new.choices, metavar=new.metavar, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
    )


def warn_old_spellings(args: argparse.Namespace) -> None:
    """One deprecation line for each old option spelling on the command line."""
    for old, new in getattr(args, OLD_SPELLINGS, []):
        logger.warning("%s is deprecated and will be removed in the next release; use %s", old, new)
