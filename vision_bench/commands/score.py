"""`vision-bench score PRED TARGET`: the project's metrics on any predicted images (see `vision_bench.scoring`)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.commands._common import add_device_argument, add_progress_arguments, show_progress
from vision_bench.commands._lpips import add_lpips_arguments, prepare_lpips

if TYPE_CHECKING:  # heavy modules are imported inside `run`, so that `--help` stays fast
    from vision_bench.scoring import Scores

NAME = "score"
HELP = "score predicted images against targets: two image files, or two folders paired by file name"


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _grid(text: str) -> tuple[int, int]:
    try:
        height, width = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HxW such as 16x16, got {text!r}") from None
    return height, width


def _pixels(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pred", type=Path, metavar="PRED", help="a predicted image, or a folder of them")
    parser.add_argument("target", type=Path, metavar="TARGET",
                        help="the target image, or a folder (an export split folder works: *_target.png)")
    parser.add_argument("--metrics", type=_names, default=(),
                        help="comma-separated metrics (default: mse,mse_sum,psnr,ssim,lpips, plus the grid "
                        "metrics with --spec and --grid)")
    parser.add_argument("--spec", type=Path, default=None,
                        help="render spec YAML the images were drawn with (grid metrics)")
    parser.add_argument("--grid", type=_grid, default=None, metavar="HxW", help="grid shape to decode (grid metrics)")
    parser.add_argument("--out", type=Path, default=None, help="write one row per pair to this .parquet or .csv file")
    parser.add_argument("--max-pixels", type=_pixels, default=None, metavar="N",
                        help="refuse images of more pixels, read from their headers before decoding (default: "
                        "4,194,304 = 2048x2048; scoring a pair takes about 150 bytes a pixel)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_device_argument(parser)
    add_lpips_arguments(parser)
    add_progress_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from vision_bench.errors import ConfigError
    from vision_bench.evaluation import pick_device
    from vision_bench.scoring import check_metrics, pair_files, score_pairs

    show_progress(args)  # score has no progress bar yet; --quiet still silences informational messages
    if args.out is not None and args.out.suffix.lower() not in (".parquet", ".csv"):
        raise ConfigError(f"--out {args.out}: use a .parquet or .csv file name")
    if (args.spec is None) != (args.grid is None):
        raise ConfigError("grid metrics need both --spec SPEC.yaml and --grid HxW")
    spec = None
    if args.spec is not None:
        from render.spec import RenderSpec

        spec = RenderSpec.from_yaml(args.spec)
    metrics = check_metrics(args.metrics, decodable=spec is not None)
    device = pick_device(args.device)
    pairs, unpaired = pair_files(args.pred, args.target)
    if "lpips" in metrics:
        prepare_lpips(args.lpips_net, args.offline)
    limit = {} if args.max_pixels is None else {"max_pixels": args.max_pixels}
    scores = score_pairs(pairs, metrics, lpips=args.lpips_net, device=device, spec=spec, grid_shape=args.grid,
                         unpaired=unpaired, **limit)
    if args.out is not None:
        _write(scores, args.out)
    if args.json:
        rows = [{**row, **_finite({m: row[m] for m in scores.metrics})} for row in scores.rows]
        print(json.dumps({"metrics": list(scores.metrics), "pairs": rows, "mean": _finite(scores.mean),
                          "status": scores.status, "unpaired": [str(p) for p in unpaired]}, indent=2,
                         allow_nan=False))
        return 0
    _print_table(scores)
    return 0


def _finite(values: dict[str, float]) -> dict[str, float | None]:
    return {k: v if math.isfinite(v) else None for k, v in values.items()}


def _print_table(scores: Scores) -> None:
    from vision_bench.bench.tables import short, text_table

    header = ["pair", *[short(m) for m in scores.metrics]]
    rows = [[row["key"], *[_number(row[m]) for m in scores.metrics]] for row in scores.rows]
    if len(scores.rows) > 1:
        rows.append([f"mean ({len(scores.rows)} pairs)", *[_number(scores.mean[m]) for m in scores.metrics]])
    print(text_table(header, rows))
    for name, reason in scores.status.items():
        print(f"{name}: {reason}")
    if scores.unpaired:
        print(f"{len(scores.unpaired)} images without a partner were skipped (first: {scores.unpaired[0]})")


def _number(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.4g}"


def _write(scores: Scores, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from vision_bench.io.atomic import atomic_output
    from vision_bench.scoring import scores_table

    table = pa.table(dict(scores_table(scores)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temp:
        with open(temp, "wb") as handle:  # an open file: pyarrow cannot encode a non-UTF-8 file name
            if path.suffix.lower() == ".csv":
                pacsv.write_csv(table, handle)
            else:
                pq.write_table(table, handle)
