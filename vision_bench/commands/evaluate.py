"""`vision-bench evaluate RUN_DIR`: every metric per split and per sample, plus sample sheets.

Writes RUN_DIR/evaluation/ (or --out): metrics.json, samples.parquet and sheets/ (see
`vision_bench.evaluation.outputs`), for the run's model and the baselines next to it; with --rollout
also rollout/ there. Nothing is written outside that folder, nor through a folder link placed in it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision_bench.commands._common import add_device_argument, add_progress_arguments, check_out_folder, show_progress
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips
from vision_bench.io.documents import JSONDict

NAME = "evaluate"
HELP = "evaluate a training run (and the copy_input / mean_target / ground_truth baselines) on the test splits"


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a directory written by `vision-bench train`")
    parser.add_argument("--checkpoint", default="best", help="best, last, or the path of a checkpoint (default: best)")
    parser.add_argument("--splits", type=_names, default=("test_id", "test_ood"),
                        help="comma-separated splits (default: test_id,test_ood)")
    parser.add_argument("--data", default=None,
                        help="evaluate on this data instead of the run's own: an export directory, a folder of "
                        "image pairs, a Hugging Face dataset (folder or hf://user/name) or WebDataset shards "
                        "(a {split} brace pattern, URL or pipe: command)")
    parser.add_argument("--trust-stored-data", action="store_true",
                        help="read the run's own data even when its checkpoint names a pipe: command, URL or "
                        "hf:// Hub id, which are otherwise refused (whoever made the run chose them): only for a "
                        "run you trust")
    parser.add_argument("--n-test", type=int, default=None,
                        help="samples per test split when the run's data is an on-the-fly study "
                        "(default: max(dataset.n_val, 100) when the run set dataset.n_val, else the study's test size)")
    parser.add_argument("--baselines", type=_names, default=("copy_input", "mean_target", "ground_truth"),
                        help="comma-separated baselines to evaluate alongside, '' for none "
                        "(default: copy_input,mean_target,ground_truth)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: RUN_DIR/evaluation; with --data, "
                        "RUN_DIR/evaluation_<its name>_<8 hex digits of its source>)")
    parser.add_argument("--batch-size", type=int, default=64, help="evaluation batch size (default: 64)")
    add_device_argument(parser)
    parser.add_argument("--sheet-samples", type=int, default=4, help="best and worst samples per sheet (default 4)")
    parser.add_argument("--save-predictions", action="store_true",
                        help="also write every predicted image as OUT/predictions/PREDICTOR/SPLIT/<index>_pred.png "
                        "(`vision-bench score` pairs them with an export split's <index>_target.png)")
    parser.add_argument("--rollout", choices=("image", "grid"), default=None,
                        help="a world-model run (dataset.study worldmodel/...): also roll it out over whole "
                        "sequences, feeding back each predicted image as it is (image) or decoded and re-rendered "
                        "(grid), scored per step into OUT/rollout/ (OUT: --out, default RUN_DIR/evaluation; "
                        "default: no rollout)")
    add_lpips_arguments(parser)
    add_progress_arguments(parser)


def summary_table(metrics: JSONDict) -> str:
    """The terminal table of a `metrics.json` document: one row per predictor and split, one column
    per metric listed in "evaluate" (`vision_bench.metrics.listed_in`)."""
    from vision_bench.bench.tables import short, text_table
    from vision_bench.metrics import listed_in

    shown = listed_in("evaluate")
    entries = {metrics["model"]: metrics["splits"], **{n: e["splits"] for n, e in metrics["baselines"].items()}}
    header = ["model", "split", "n"] + [short(m) for m in shown]
    rows = []
    for name, splits in entries.items():
        for split, entry in splits.items():
            values = [entry["metrics"].get(m) for m in shown]
            rows.append([name, split, str(entry["n"])] + ["n/a" if v is None else f"{v:.4g}" for v in values])
    return text_table(header, rows)


def run(args: argparse.Namespace) -> int:
    from vision_bench.errors import ConfigError
    from vision_bench.evaluation import evaluate_run

    progress = show_progress(args)
    if args.batch_size < 1 or args.sheet_samples < 1 or (args.n_test is not None and args.n_test < 1):
        raise ConfigError("--batch-size, --sheet-samples and --n-test must be positive integers")
    if args.out is not None:
        check_out_folder(args.out, NAME)
    if args.rollout is not None and args.data is not None:
        raise ConfigError("--rollout rolls the run's own world-model study out; evaluate other data (--data) without "
                          "--rollout, or roll out without --data")
    if args.rollout is not None:
        _prepare_rollout(args)
    prepare_lpips(args.lpips_net, args.offline)
    result = evaluate_run(
        args.run_dir, checkpoint=args.checkpoint, splits=args.splits, data=args.data, n_test=args.n_test,
        baselines=args.baselines, out_dir=args.out, device=args.device, batch_size=args.batch_size,
        lpips=args.lpips_net, sheet_samples=args.sheet_samples, progress=progress,
        save_predictions=args.save_predictions, trust_stored_data=args.trust_stored_data,
    )
    metrics = result.metrics
    print(summary_table(metrics))
    by_status: dict[str, list[str]] = {}
    for name, status in metrics["status"].items():
        by_status.setdefault(str(status), []).append(name)
    for status, names in by_status.items():  # one line per reason: a family's five metrics share theirs
        print(f"{', '.join(names)}: {status}")
    for note in metrics.get("notes", []):
        print(f"note: {note}")
    print(f"wrote {result.metrics_path}, {result.samples_path} and {len(result.sheets)} sample sheets")
    if args.rollout is not None:
        from vision_bench.bench.rollout_report import roll_out_run

        rollout = roll_out_run(args.run_dir, out_dir=result.out_dir, checkpoint=args.checkpoint, splits=args.splits,
                               n_test=args.n_test, device=args.device, batch_size=args.batch_size,
                               sheet_samples=args.sheet_samples, feedback=args.rollout)
        print(f"wrote the per-step rollout scores {rollout} and its sheets beside it")
    return 0


def _prepare_rollout(args: argparse.Namespace) -> None:
    """Everything that would stop the rollout, checked before the evaluation runs: a run that is not a world
    model, an output folder that cannot be written (read-only), a rollout/ placed there as a link or a file."""
    from vision_bench.bench.rollout_report import check_rollout_run
    from vision_bench.evaluation.rollout import ROLLOUT_DIR
    from vision_bench.evaluation.run import evaluation_dir
    from vision_bench.io.atomic import check_writable, output_folder

    check_rollout_run(args.run_dir, args.checkpoint)
    out = evaluation_dir(args.run_dir, args.out, make=False, data=args.data)  # made by the evaluation, not on a failure
    check_writable(next(folder for folder in (out, *out.parents) if folder.exists()))
    output_folder(out, ROLLOUT_DIR, make=False)
