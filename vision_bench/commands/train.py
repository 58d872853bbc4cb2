"""`vision-bench train CONFIG [--out RUN_DIR] [--resume]`: train a model from a YAML config.

Under `torchrun --nproc_per_node N -m vision_bench train CONFIG` every process runs this command
and the run is data-parallel; rank 0 writes the run directory. `--set`, `--seed`, `--device`, `--select-on` and
`--logger` change the config before it is used, so the run directory's config shows what actually ran.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from vision_bench.commands._common import (
    add_device_argument,
    add_logger_argument,
    add_progress_arguments,
    add_select_on_argument,
    add_set_argument,
    check_out_folder,
    check_select_on_agrees,
    show_progress,
)
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips_loss

NAME = "train"
HELP = "train an image-to-image model from a YAML config (checkpoints, resume, multi-process)"
DEFAULT_RUNS_DIR = Path("runs")

logger = logging.getLogger(__name__)


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path,
                        help="training config: a YAML file, or a packaged config by name (e.g. train_smoke; "
                        "`vision-bench configs` lists them)")
    add_set_argument(parser)
    parser.add_argument("--out", type=Path, default=None, help="run directory (default: runs/<config name>)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt")
    parser.add_argument("--seed", type=_seed, default=None, help="the run's seed (default: the config's seed)")
    add_device_argument(parser, default=None, default_text="the config's runtime.device")
    add_select_on_argument(parser, "checkpoint.select_on")
    add_logger_argument(parser, "tracking.loggers")
    add_progress_arguments(parser)
    add_lpips_arguments(parser, net=False)


def run(args: argparse.Namespace) -> int:
    from vision_bench.config_files import check_override_keys
    from vision_bench.train import TrainConfig, train
    from vision_bench.train.config import check_selection
    from vision_bench.train.distributed import context_from_environment

    progress = show_progress(args)
    check_override_keys(TrainConfig, args.overrides)
    check_select_on_agrees(args.select_on, args.overrides, "checkpoint.select_on")
    config = TrainConfig.from_yaml(args.config, args.overrides)
    if args.seed is not None:
        config = config.replace(seed=args.seed)
    if args.device is not None:
        config = config.replace(runtime=config.runtime.model_dump() | {"device": args.device})
    if args.select_on is not None:
        config = config.replace(checkpoint=config.checkpoint.model_dump() | {"select_on": args.select_on})
    if args.loggers:
        loggers = list(dict.fromkeys([*config.tracking.loggers, *args.loggers]))  # each once, the config's first
        config = config.replace(tracking=config.tracking.model_dump() | {"loggers": loggers})
    check_selection(config)  # before anything is written: a study without an OOD validation split
    run_dir = args.out if args.out is not None else DEFAULT_RUNS_DIR / args.config.stem
    check_out_folder(run_dir, NAME)
    prepare_lpips_loss(config.model.options.get("loss"), args.offline)
    result = train(config, run_dir, resume=args.resume, progress=progress)
    if context_from_environment().is_main:
        for note in result.notes:
            logger.warning("note: %s", note)
        summary = ", ".join(f"{key} {value:.4g}" for key, value in sorted(result.final_metrics.items()))
        best = result.best_checkpoint if result.best_checkpoint is not None else "none"
        print(f"trained {result.step} steps into {result.run_dir}; best checkpoint {best}; {summary}")
    return 0
