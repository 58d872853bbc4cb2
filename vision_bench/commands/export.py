"""`vision-bench export`: generate, render and write a dataset in one pass (sharded, resumable)."""

from __future__ import annotations

import argparse

from vision_bench.commands._common import add_progress_arguments, add_set_argument, check_out_folder, show_progress
from vision_bench.commands._render_options import add_image_format_argument, add_render_arguments
from vision_bench.commands._scale import add_count_arguments, announce, counts, plan_splits
from vision_bench.data.export_formats import DEFAULT_FORMAT, FORMATS
from vision_bench.data.shards import DEFAULT_SHARD_SIZE

NAME = "export"
HELP = "generate and render a study or config into an image dataset (folder, parquet, webdataset or grids)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--study", metavar="ID", help="a study preset, e.g. compgen/C1/1 (see `vision-bench studies`)")
    source.add_argument("--config", metavar="FILE",
                        help="a task generation config: a YAML file, or a packaged config by name "
                        "(e.g. reference_generation)")
    add_set_argument(parser, example="samples.train=500")
    parser.add_argument("--out", required=True, metavar="DIR", help="export directory (re-running resumes it)")
    parser.add_argument(
        "--format", default=DEFAULT_FORMAT, choices=FORMATS.names(),
        help="; ".join(f"{name}: {FORMATS.description(name)}" for name in FORMATS),
    )
    render = parser.add_argument_group("rendering (as in `vision-bench render`)")
    add_render_arguments(render)
    add_image_format_argument(render, old_spelling="--format-image")
    render.add_argument("--frames", action="store_true", help="also write intermediate frames (folder, webdataset)")
    render.add_argument("--masks", action="store_true", help="also write per-object label masks (image formats)")
    card = parser.add_argument_group("dataset card (README.md of --format parquet; kept out of the export's identity)")
    card.add_argument("--license", default=None, metavar="ID",
                      help="the card's hub license id (apache-2.0, mit, cc-by-4.0, other, ...); default none")
    card.add_argument("--citation", default=None, metavar="BIBTEX",
                      help="the BibTeX entry the card asks users to cite, e.g. --citation \"$(cat paper.bib)\"")
    samples = parser.add_argument_group("samples")
    add_count_arguments(samples)
    scale = parser.add_argument_group("scale-out")
    scale.add_argument("--workers", type=int, default=1, metavar="W", help="local worker processes")
    scale.add_argument("--num-shards", type=int, default=1, metavar="N", help="split the work over N separate runs")
    scale.add_argument("--shard-index", type=int, default=0, metavar="K", help="this run's part, 0..N-1")
    scale.add_argument(
        "--shard-size", type=int, default=DEFAULT_SHARD_SIZE, metavar="S",
        help="samples per shard; part of the export's identity, like the seed",
    )
    add_progress_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from vision_bench import interrupts
    from vision_bench.commands._render_options import spec_from_args
    from vision_bench.config_files import check_override_keys
    from vision_bench.data.export import export_dataset
    from vision_bench.data.export_formats import ExportOptions
    from vision_bench.data.hf_card import CardOptions
    from vision_bench.data.shards import Shard
    from vision_bench.data.sources import load_config
    from vision_bench.tasks.config import SPLITS, TaskConfig
    from vision_bench.tasks.families import family_of
    from vision_bench.train.logging import messages_above_progress_bar

    progress = show_progress(args)
    check_override_keys(TaskConfig, args.overrides)
    check_out_folder(args.out, NAME)
    card = CardOptions(license=args.license, citation=args.citation)
    card.check_format(args.format)
    config = load_config(args.study, args.config, **counts(args), seed=args.seed, overrides=args.overrides)
    options = ExportOptions(
        format=args.format, image_format=args.image_format, frames=args.frames, masks=args.masks,
        shard_size=args.shard_size,
    )
    spec = spec_from_args(args)

    def planned(shards: list[Shard]) -> None:
        """Once the export is checked and planned, before any pair is made: the scale, the estimate, the bar's total."""
        pending = sum(shard.size for shard in shards)
        plan_splits(config)
        announce(args, {split: config.count(split) for split in SPLITS}, kind=args.format, workers=args.workers,
                 pixels=spec.size[0] * spec.size[1], pending=pending, episodes=family_of(config).episodes)
        bar.reset(total=pending)

    def shard_done(shard: Shard) -> None:
        """After each shard: stop cleanly on Ctrl-C (see vision_bench.interrupts), advance the bar."""
        interrupts.check()
        bar.update(shard.size)

    with messages_above_progress_bar(progress), tqdm(desc="export", unit="sample", leave=False,
                                                     disable=None if progress else True) as bar:
        result = export_dataset(
            config, spec, args.out, options, workers=args.workers, num_shards=args.num_shards,
            shard_index=args.shard_index, on_plan=planned,
            on_shard_done=shard_done, card=card,
        )
    samples = sum(shard.size for shard in result.written)
    print(f"{result.root}: wrote {len(result.written)} shard(s) ({samples} samples), "
          f"{len(result.skipped)} already complete")
    if result.manifest is not None:
        print(f"{result.manifest}: written; every shard is complete (check with `vision-bench verify {result.root}`)")
    else:
        print(f"{result.incomplete} shard(s) of other runs are not finished yet; the last run to finish "
              "(or a re-run of this command) writes manifest.json")
    return 0
