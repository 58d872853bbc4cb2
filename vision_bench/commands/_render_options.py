"""The rendering options shared by `render`, `show` and `export`, so each spells and means them alike.

`add_render_arguments` adds the render-spec options (`--spec` and the fields laid over it) and
`spec_from_args` reads them back; `add_image_format_argument` adds `--image-format`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.commands._common import add_old_spelling
from vision_bench.data.shard_context import IMAGE_FORMATS

if TYPE_CHECKING:
    from render.spec import RenderSpec


def add_render_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, layout: str = "stretch") -> None:
    """`--spec` and the render-spec fields laid over it; `layout` is the command's layout without a spec file."""
    parser.add_argument("--spec", metavar="FILE",
                        help="render spec YAML (docs/rendering.md); the options below override it "
                        "(default: the default spec)")
    parser.add_argument("--size", nargs=2, type=int, metavar=("H", "W"),
                        help="image height and width in pixels (default: 128 128)")
    parser.add_argument("--palette", help="cogitao-rgb, arc or c-arc (default: cogitao-rgb)")
    parser.add_argument("--background", help="palette (color 0), white, black, #RRGGBB or random (default: palette)")
    parser.add_argument("--layout", help=f"stretch, fit (square cells, the grid's aspect kept), or "
                        f"cell:SIZE[:ANCHOR] (default: {layout})")
    parser.add_argument("--blur", help="none, gaussian:SIGMA or box:SIZE (default: none)")


def spec_from_args(args: argparse.Namespace, layout: str = "stretch") -> RenderSpec:
    """The spec file (or the default spec with `layout`) with the command-line options laid over it."""
    from render.spec import RenderSpec

    spec = RenderSpec.from_yaml(Path(args.spec)) if args.spec else RenderSpec(layout=layout)
    overrides = {
        field: value
        for field, value in (
            ("size", args.size),
            ("palette", args.palette),
            ("background", args.background),
            ("layout", args.layout),
            ("blur", args.blur),
        )
        if value is not None
    }
    return RenderSpec.from_dict({**spec.to_dict(), **overrides}) if overrides else spec


def add_image_format_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old_spelling: str) -> None:
    """`--image-format png|jpeg`, with the command's former spelling kept as a hidden deprecated alias."""
    option = parser.add_argument("--image-format", choices=IMAGE_FORMATS, default="png", help="image file format")
    add_old_spelling(parser, old_spelling, option)
