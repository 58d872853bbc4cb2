"""`vision-bench generate`: a study or config as grid-task Parquet files, one per split, plus manifest.json.

Every split is written under a temporary name and renamed only when all splits are done;
manifest.json comes last, so a folder with a manifest is complete and nothing is half-written.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from vision_bench.commands._common import add_progress_arguments, add_set_argument, check_out_folder, show_progress
from vision_bench.commands._scale import add_count_arguments, announce, counts, plan_splits

NAME = "generate"
HELP = "generate grid tasks (input, output, sequence, frames, objects) as one Parquet file per split"


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _workers(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--study", metavar="ID", help="a study preset, e.g. compgen/C1/1 (see `vision-bench studies`)")
    source.add_argument("--config", metavar="FILE",
                        help="a task generation config: a YAML file, or a packaged config by name "
                        "(e.g. reference_generation)")
    add_set_argument(parser, example="samples.train=500")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    add_count_arguments(parser, _count)
    parser.add_argument("--workers", type=_workers, default=1, metavar="W",
                        help="processes generating in parallel, this one included")
    parser.add_argument("--force", action="store_true", help="replace a dataset already in --out")
    add_progress_arguments(parser)


def _checked(update: Callable[[int], object]) -> Callable[[int], None]:
    """`update`, after stopping on a Ctrl-C that a C extension swallowed (see `vision_bench.interrupts`)."""
    from vision_bench import interrupts

    def step(count: int) -> None:
        interrupts.check()
        update(count)

    return step


def run(args: argparse.Namespace) -> int:
    import json
    import os
    import platform
    from pathlib import Path

    import numpy as np
    import pyarrow
    from tqdm import tqdm

    from vision_bench import __version__
    from vision_bench.config_files import check_override_keys
    from vision_bench.data.sources import load_config
    from vision_bench.errors import ConfigError
    from vision_bench.io.atomic import atomic_write_text
    from vision_bench.tasks.caches import LIBRARY_SEED
    from vision_bench.tasks.config import SPLITS, TaskConfig
    from vision_bench.tasks.families import family_of
    from vision_bench.tasks.formats import table_of, write_tables
    from vision_bench.tasks.sampling import map_split

    progress = show_progress(args)
    check_override_keys(TaskConfig, args.overrides)
    check_out_folder(args.out, NAME)
    config = load_config(args.study, args.config, **counts(args), seed=args.seed, overrides=args.overrides)
    out = Path(args.out)
    manifest_path = out / "manifest.json"
    if manifest_path.exists() and not args.force:
        raise ConfigError(f"{out} already holds a dataset (manifest.json); choose another --out or pass --force")
    out.mkdir(parents=True, exist_ok=True)
    manifest_path.unlink(missing_ok=True)
    ours = tuple(prefix for split in SPLITS for prefix in (f".{split}.parquet", f"..{split}.parquet")) + (
        ".manifest.json",)
    for leftover in out.iterdir():  # what a killed earlier run left behind (only names this command makes)
        if leftover.is_file() and not leftover.is_symlink() and leftover.name.startswith(ours):
            leftover.unlink()
    partial = {split: out / f".{split}.parquet.partial" for split in SPLITS}
    plan_splits(config)
    announce(args, {split: config.count(split) for split in SPLITS}, kind="grids", workers=args.workers,
             episodes=family_of(config).episodes)
    try:
        for split in SPLITS:
            with tqdm(total=config.count(split), desc=split, unit="pair", disable=None if progress else True) as bar:
                tables = map_split(config, split, table_of, workers=args.workers, progress=_checked(bar.update))
                write_tables(tables, partial[split])
        for split in SPLITS:
            os.replace(partial[split], out / f"{split}.parquet")
    finally:
        for path in partial.values():
            path.unlink(missing_ok=True)
    manifest = {
        "kind": "vision-bench grid tasks",
        "study": args.study,
        "config_file": args.config,
        "overrides": list(args.overrides),
        "seed": config.seed,
        "library_seed": LIBRARY_SEED,
        "counts": {split: config.count(split) for split in SPLITS},
        "files": {split: f"{split}.parquet" for split in SPLITS},
        "config": config.to_dict(),
        "versions": {"vision_bench": __version__, "python": platform.python_version(), "numpy": np.__version__,
                     "pyarrow": pyarrow.__version__},
    }
    atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    total = sum(manifest["counts"].values())
    print(f"{out}: wrote {total} pairs in {len(SPLITS)} Parquet files and manifest.json")
    return 0
