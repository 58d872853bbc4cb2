"""`vision-bench train CONFIG [--out RUN_DIR] [--resume]`: train a model from a YAML config.

Under `torchrun --nproc_per_node N -m vision_bench train CONFIG` every process runs this command
and the run is data-parallel; rank 0 writes the run directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips_loss

NAME = "train"
HELP = "train an image-to-image model from a YAML config (checkpoints, resume, multi-process)"
DEFAULT_RUNS_DIR = Path("runs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="training config (YAML); see configs/train_smoke.yaml")
    parser.add_argument("--out", type=Path, default=None, help="run directory (default: runs/<config name>)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_lpips_arguments(parser, net=False)


def run(args: argparse.Namespace) -> int:
    from vision_bench.train import TrainConfig, train
    from vision_bench.train.distributed import context_from_environment

    config = TrainConfig.from_yaml(args.config)
    prepare_lpips_loss(config.model.options.get("loss"), args.offline)
    run_dir = args.out if args.out is not None else DEFAULT_RUNS_DIR / args.config.stem
    result = train(config, run_dir, resume=args.resume, progress=not args.no_progress)
    if context_from_environment().is_main:
        for note in result.notes:
            print(f"vision-bench train: note: {note}", file=sys.stderr)
        summary = ", ".join(f"{key} {value:.4g}" for key, value in sorted(result.final_metrics.items()))
        best = result.best_checkpoint if result.best_checkpoint is not None else "none"
        print(f"trained {result.step} steps into {result.run_dir}; best checkpoint {best}; {summary}")
    return 0
