"""`vision-bench models`: list the model families and baselines, timm names, or one model's description."""

from __future__ import annotations

import argparse
import json

NAME = "models"
HELP = "list model families and baselines (name, a tab, description); --timm and --describe for more"
TIMM_HINT = (
    "any timm CNN or hierarchical transformer (swin_*) works after 'unet:' and 'bottleneck:' (e.g. unet:resnet18), "
    "any timm VisionTransformer after 'vit:' (e.g. vit:vit_small_patch16_224); list timm names with --timm PATTERN"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--timm", metavar="PATTERN", help="list timm model names matching a shell pattern, e.g. 'resnet*', '*vit*'"
    )
    group.add_argument(
        "--describe", metavar="MODEL",
        help="build MODEL from scratch (e.g. unet:resnet18), print describe() and its family's own options "
        "(default, help) as JSON",
    )
    parser.add_argument("--image-size", type=int, default=128, help="image size for --describe (default 128)")


def run(args: argparse.Namespace) -> int:
    from vision_bench.models import MODELS, create_model
    from vision_bench.models.encoders import list_timm_models

    if args.timm is not None:
        for name in list_timm_models(args.timm):
            print(name)
        return 0
    if args.describe is not None:
        model = create_model(args.describe, image_size=args.image_size)
        options = MODELS[model.family].options.describe()
        print(json.dumps({**model.describe(), "family_options": options}, indent=2))
        return 0
    for name in MODELS:
        print(f"{MODELS[name].usage}\t{MODELS.description(name)}")
    print(f"# {TIMM_HINT}")
    return 0
