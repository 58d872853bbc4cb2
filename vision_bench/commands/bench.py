"""`vision-bench bench CONFIG --out DIR`: models x experiments x seeds, trained, evaluated, reported.

Re-running the same command skips finished cells and resumes interrupted ones; the report
(DIR/report.md and a self-contained DIR/report.html) and DIR/results.csv / results.json are
rewritten at the end of every run. With `--num-shards N --shard-index K` the run computes only
shard K's cells (for a Slurm array or any scheduler; shards may share DIR at once) and writes no
report; a plain run afterwards, or `--collect-only`, gathers every shard's cells. `--select-on` sets every
cell's `train.checkpoint.select_on` (a change of the bench, as the same `--set` would be; refused beside a `--set`
of that key to the other split).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

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
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips
from vision_bench.errors import ConfigError

if TYPE_CHECKING:
    from vision_bench.bench import BenchResult

NAME = "bench"
HELP = "train and evaluate a matrix of models x experiments x seeds and write a report (resumable, shardable)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, metavar="CONFIG",
                        help="bench config: a YAML file, or a packaged config by name (e.g. bench_smoke; "
                        "`vision-bench configs` lists them)")
    parser.add_argument("--out", type=Path, required=True, help="output folder (re-use it to resume)")
    parser.add_argument("--num-shards", type=int, default=None, metavar="N",
                        help="split the cells into N shards and run one of them (with --shard-index); "
                        "shards may share --out at once")
    parser.add_argument("--shard-index", type=int, default=None, metavar="K",
                        help="which shard this run computes, 0 to N-1 (e.g. $SLURM_ARRAY_TASK_ID)")
    parser.add_argument("--collect-only", action="store_true",
                        help="compute nothing: gather the finished cells of every shard and write the report, "
                        "results.csv and results.json; refuses, naming them, while cells are missing")
    parser.add_argument("--trust-stored-data", action="store_true",
                        help="evaluate runs already in --out on the data their checkpoints name even when it is a "
                        "pipe: command, URL or hf:// Hub id, which are otherwise refused (a bench never writes one): "
                        "only for a folder you trust")
    add_set_argument(parser, example="train.training.epochs=3")
    add_select_on_argument(parser, "every cell's train.checkpoint.select_on")
    add_device_argument(parser, default=None, default_text="each cell's train.runtime.device, auto unless set")
    add_logger_argument(parser, "each cell's train.tracking.loggers")
    add_progress_arguments(parser)
    add_lpips_arguments(parser, net=False)


def run(args: argparse.Namespace) -> int:
    from vision_bench.bench import BenchConfig, run_bench, summary_table

    num_shards, shard_index = _shard(args)
    progress = show_progress(args)
    check_select_on_agrees(args.select_on, args.overrides, "train.checkpoint.select_on")
    config = BenchConfig.from_yaml(args.config, args.overrides)
    if args.select_on is not None:
        config = config.with_select_on(args.select_on)
    check_out_folder(args.out, NAME)
    if not args.collect_only:
        prepare_lpips("alex", args.offline)
    result = run_bench(config, args.out, progress=progress, device=args.device, num_shards=num_shards,
                       shard_index=shard_index, collect_only=args.collect_only,
                       trust_stored_data=args.trust_stored_data, loggers=args.loggers)
    if result.shard is not None:
        print(_shard_summary(args, result))
        return 0
    print(summary_table(result))
    print(
        f"{_cells(len(result.computed))} computed, {len(result.skipped)} already finished; "
        f"report: {result.report_md} and {result.report_html}; results: {result.results_csv} and {result.results_json}"
    )
    return 0


def _shard(args: argparse.Namespace) -> tuple[int, int]:
    """(--num-shards, --shard-index), both given or neither; a plain run is one shard of one."""
    if (args.num_shards is None) != (args.shard_index is None):
        raise ConfigError("--num-shards and --shard-index go together; give both (or neither, to run every cell)")
    if args.num_shards is not None and args.collect_only:
        raise ConfigError("--collect-only gathers the cells of every shard; drop --num-shards and --shard-index")
    return (1, 0) if args.num_shards is None else (args.num_shards, args.shard_index)


def _shard_summary(args: argparse.Namespace, result: BenchResult) -> str:
    """What a shard run did, and the command that collects the shards once they have all finished."""
    assert result.shard is not None
    index, count = result.shard
    collect = ["vision-bench", "bench", str(args.config), "--out", str(args.out), "--collect-only"]
    collect += [part for override in args.overrides for part in ("--set", override)]
    if args.select_on is not None:
        collect += ["--select-on", args.select_on]
    lines = [
        (f"shard {index} of {count}: {_cells(len(result.computed))} computed, {len(result.skipped)} already "
         "finished; no report written (a shard holds part of the bench)"),
        f"{_cells(len(result.pending))} of the bench not finished yet" if result.pending
        else "every cell of the bench is finished",
        f"once every shard has finished, collect them: {shlex.join(collect)}",
    ]
    return "\n".join(lines)


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"
