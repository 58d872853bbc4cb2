"""`--scale small|paper`: how many samples a study preset yields on the command line, and a rough
estimate of the time and disk space a command will take, printed before it starts.

A study preset carries the papers' counts (COGITAO: 100,000 training pairs and 1,000 in each
validation and test split, 104,000 in all; SVIB's `svib/...`: 64,000 and 8,000, `studies.registry.paper_counts`),
which take minutes to generate and hundreds of MB
to export as images. A newcomer's first command should not start that by accident, so the
default is `small` (`SMALL_COUNTS`: 1,000 train and 100 in each of val_id, val_ood, test_id and
test_ood, 1,400 pairs); `--scale paper` asks for the study's own counts. `--n-train`, `--n-val`
and `--n-test` override either. A `--config` file states its own counts (`samples:`), so
`--scale` does not apply to it.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from vision_bench.data.export_formats import FORMATS
from vision_bench.errors import ConfigError

if TYPE_CHECKING:
    from vision_bench.tasks.config import TaskConfig

SCALES = ("small", "paper")
DEFAULT_SCALE = "small"
SMALL_COUNTS = {"n_train": 1_000, "n_val": 100, "n_test": 100}
"""The small scale: enough to look at and to train a smoke model on, a few seconds to generate."""

REFERENCE_PIXELS = 128 * 128
"""The image area a format's `bytes_per_pair` is given for (`ExportFormat`)."""
EPISODE_SECONDS = 0.03
"""Extra time per C-ARC query generated in order: 0.008 s (Systematicity) to 0.03 s (3-Shot) measured
with `generate` on 540 queries (the ten queries of an episode share its study pairs and grammar)."""
STARTUP_SECONDS = 3.0
"""One process's start before the first pair: imports and the object library (2.7 s measured for `generate` of one
pair, docs/benchmarks.md)."""
WORKER_START_SECONDS = 3.0
"""Each worker process's own start (its imports), in CPU seconds shared by the cores."""


def available_cores() -> int:
    """The cores this process may run on (its affinity where the platform says it, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1

logger = logging.getLogger(__name__)


def add_scale_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--scale", choices=SCALES, default=None,
        help=f"with --study: small = {SMALL_COUNTS['n_train']:,} train and {SMALL_COUNTS['n_val']} in each "
        "validation and test split; paper = the study's own counts (COGITAO: 100,000 train and 1,000 per "
        "split, 104,000 pairs; SVIB: 64,000 train and 8,000 per split); --n-train/--n-val/--n-test override "
        f"either (default: {DEFAULT_SCALE})",
    )


def add_count_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                        count: Callable[[str], int] = int) -> None:
    """--scale, --n-train, --n-val, --n-test and --seed, as `generate` and `export` take them (`count`: the type)."""
    add_scale_argument(parser)
    for flag, what in (("--n-train", "training samples"), ("--n-val", "samples in val_id and in val_ood"),
                       ("--n-test", "samples in test_id and in test_ood")):
        parser.add_argument(flag, type=count, metavar="N",
                            help=f"{what} (default: the scale's with --study, the file's with --config)")
    parser.add_argument("--seed", type=count, metavar="S", help="generation seed (default: the study's or config's)")


def counts(args: argparse.Namespace) -> dict[str, int | None]:
    """The n_train / n_val / n_test to load the study or config with: explicit options first, then the
    scale's counts (None = the study's or the config file's own)."""
    explicit = {"n_train": args.n_train, "n_val": args.n_val, "n_test": args.n_test}
    if args.config is not None:
        if args.scale is not None:
            raise ConfigError("--scale picks a study preset's counts; a --config file sets its own (samples:), "
                              "so drop --scale or use --n-train / --n-val / --n-test")
        return explicit
    if (args.scale or DEFAULT_SCALE) == "paper":
        return explicit
    return {name: SMALL_COUNTS[name] if value is None else value for name, value in explicit.items()}


def describe_scale(args: argparse.Namespace) -> str:
    """Where the counts come from, in words: 'scale small (...)', 'scale paper', or the config file."""
    if args.config is not None:
        return f"counts of {args.config}"
    scale = args.scale or DEFAULT_SCALE
    names = ("n_train", "n_val", "n_test")
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is not None]
    text = f"scale {scale}" + (f" with {', '.join(given)}" if given else "")
    if scale == "small":
        text += " (--scale paper for the study's own counts)"
    return text


def estimate(total: int, *, kind: str, workers: int = 1, pixels: int = REFERENCE_PIXELS, episodes: bool = False,
             cores: int | None = None) -> str:
    """'about 2 min and 210 MB' for `total` pairs written as export format `kind` ('grids' for `generate`);
    a rough figure from the format's rates (its `ExportFormat` entry) and image area (`episodes`: C-ARC
    queries, which cost `EPISODE_SECONDS` more each), plus the start: the process's, and each worker's
    shared by the `cores` (default: `available_cores`); workers beyond the cores add start-up, not speed."""
    if total <= 0:
        return "under 1 s and under 1 kB"
    entry = FORMATS[kind]
    cores = cores or available_cores()
    start = STARTUP_SECONDS + (WORKER_START_SECONDS * workers / cores if workers > 1 else 0.0)
    per_pair = entry.seconds_per_pair + (EPISODE_SECONDS if episodes else 0.0)
    seconds = start + total * per_pair / max(1, min(workers, cores))
    size = total * entry.bytes_per_pair * (pixels / REFERENCE_PIXELS if entry.images else 1.0)
    return f"{_duration(seconds)} and {_size(size)}"


def plan_splits(config: TaskConfig) -> None:
    """Prepare every split that holds samples (a COGITAO split's plan, cached), as generation does first, so that an
    infeasible config fails with its one-line error before the announcement, not after it."""
    from vision_bench.tasks.config import SPLITS
    from vision_bench.tasks.sampling import prepare_split

    for split in SPLITS:
        if config.count(split):
            prepare_split(config, split)


def announce(args: argparse.Namespace, per_split: Mapping[str, int], *, kind: str, workers: int = 1,
             pixels: int = REFERENCE_PIXELS, pending: int | None = None, episodes: bool = False) -> None:
    """Log, before any pair is made: the counts per split, where they come from, and the estimate for
    the `pending` pairs this run makes (all of them unless a resumed or sharded run does part)."""
    total = sum(per_split.values())
    work = total if pending is None else pending
    listed = ", ".join(f"{count:,} {split}" for split, count in per_split.items())
    part = "" if work == total else f"; {work:,} of them made by this run"
    logger.info("%s: %s pairs (%s)%s; %s (rough)", describe_scale(args), f"{total:,}", listed, part,
                estimate(work, kind=kind, workers=workers, pixels=pixels, episodes=episodes))
    cores = available_cores()
    if workers > cores:
        logger.warning("--workers %d on %d cores: workers beyond the cores only add start-up time (each starts its "
                       "own Python); --workers %d is the most that helps here", workers, cores, cores)


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under 1 s"
    if seconds < 90:
        return f"about {round(seconds)} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def _size(size: float) -> str:
    if size < 1e3:
        return "under 1 kB"
    if size < 1e6:
        return f"{round(size / 1e3)} kB"
    if size < 1e9:
        return f"{size / 1e6:.0f} MB" if size >= 1e7 else f"{size / 1e6:.1f} MB"
    return f"{size / 1e9:.1f} GB"
