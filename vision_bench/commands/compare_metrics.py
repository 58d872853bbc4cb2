"""`vision-bench compare-metrics --out DIR [--data DIR] [--run RUN_DIR]`: which metric should I trust?

Scores controlled perturbations of true targets (an object moved, recolored, removed or added; a
one-pixel shift, blur, JPEG) with every metric, and with --run measures how well each pixel and
perceptual metric ranks a trained model's predictions like grid accuracy and Obj-PPA do. With
--bench it ranks the benches' models by every metric: over all pairs, over pairs of competent
models (both pass --gate or the bench's own gate) and per sample on those (`bench.model_ranks`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision_bench.commands._common import add_progress_arguments, check_out_folder, show_progress
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips

NAME = "compare-metrics"
HELP = "which metric should I trust: metrics on controlled perturbations, and rank agreement on runs and benches"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="output folder for tables, plots and the report")
    parser.add_argument("--data", type=Path, default=None,
                        help="export directory whose targets are perturbed (default: generate from --study)")
    parser.add_argument("--run", type=Path, default=None,
                        help="training run (or its evaluation folder) for the rank-correlation study")
    parser.add_argument("--bench", type=Path, action="append", default=None, metavar="BENCH_DIR",
                        help="a bench folder (repeatable): also rank its models by every metric and report which "
                        "metric orders them like grid accuracy (model_ranks.md): over all pairs, over competent pairs "
                        "(both pass the gate) and per sample on those")
    parser.add_argument("--gate", default=None, metavar="METRIC:SPLIT:AT_LEAST",
                        help="with --bench: a trained run is competent when METRIC on SPLIT is at least AT_LEAST, e.g. "
                        "grid_accuracy:test_id:90; for a metric that is better lower give an upper bound, "
                        "METRIC:SPLIT:at_most:BOUND, e.g. mse:test_id:at_most:0.001 (the bare form is refused there) "
                        "(default: each bench's own gate from its bench.yaml; a bench without one has no competent "
                        "run; baselines never are)")
    parser.add_argument("--study", default=None, help="study generating the default targets (default: envgen/G1/1)")
    parser.add_argument("--split", default="test_id", help="split the targets come from (default: test_id)")
    parser.add_argument("--n", type=int, default=32, help="number of targets (default: 32)")
    parser.add_argument("--spec", type=Path, default=None,
                        help="render spec YAML for generated targets (default: the default spec)")
    add_lpips_arguments(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the perturbations' random choices")
    add_progress_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from render.spec import RenderSpec
    from vision_bench.bench import model_ranks
    from vision_bench.bench.compare_metrics import DEFAULT_STUDY
    from vision_bench.bench.compare_report import export_targets, run_compare_metrics, study_targets
    from vision_bench.errors import ConfigError

    show_progress(args)  # no progress bar yet; --quiet still silences informational messages
    if args.n < 1:
        raise ConfigError(f"--n must be at least 1, got {args.n}")
    if args.gate is not None and not args.bench:
        raise ConfigError("--gate says which runs of --bench are competent; add --bench BENCH_DIR")
    gate = None if args.gate is None else model_ranks.parse_gate(args.gate)
    check_out_folder(args.out, NAME)
    for option, path in (("--run", args.run), ("--data", args.data), ("--spec", args.spec),
                         *(("--bench", bench) for bench in args.bench or ())):
        if path is not None and not path.exists():
            raise ConfigError(f"{option} {path} does not exist; check the path")
    ranks = model_ranks.rank_views(args.bench, gate) if args.bench else None
    if args.data is not None:
        if args.study is not None or args.spec is not None:
            raise ConfigError("--data brings its own targets and render spec; drop --study / --spec")
        targets, spec = export_targets(args.data, args.n, args.split)
    else:
        spec = RenderSpec.from_yaml(args.spec) if args.spec is not None else RenderSpec()
        targets = study_targets(args.study or DEFAULT_STUDY, args.n, args.split)
    prepare_lpips(args.lpips_net, args.offline)
    result = run_compare_metrics(args.out, targets=targets, spec=spec, run=args.run, lpips=args.lpips_net,
                                 seed=args.seed, ranks=ranks)
    if result.study is not None:
        from vision_bench.bench.compare_metrics import findings

        print("\n".join(findings(result.study)))
    if ranks is not None:
        print(model_ranks.views_markdown(ranks))
        print(f"model ranks: {args.out / 'model_ranks.md'}")
    print(f"report: {result.report_md} and {result.report_html}")
    return 0
