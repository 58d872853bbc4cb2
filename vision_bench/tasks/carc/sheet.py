"""A picture of one Compositional-ARC episode for people: every pair drawn apart and labelled.

The model sees the episode as one canvas (`canvas`), whose background separators are invisible
once drawn; this sheet draws the same pairs as separate framed grids instead, each titled with
the indicators its object carries (and, for the query, the answer), in the C-ARC palette.

    python -m vision_bench.tasks.carc.sheet --study carc/systematicity/1860 --out samples/carc/episode.png
"""

from __future__ import annotations

import argparse
import io
import sys

from PIL import Image, ImageDraw

from render.raster import render
from render.spec import RenderSpec
from vision_bench.errors import ConfigError, UserError
from vision_bench.io.atomic import atomic_write_bytes
from vision_bench.tasks.carc.episodes import Episode, Example, episode_of

CELL = 16
GAP = 12
TITLE = 26
PAIRS_PER_ROW = 3
SPEC = RenderSpec.from_dict({"size": [10 * CELL, 10 * CELL], "palette": "c-arc",
                             "gridlines": {"color": "#404040", "width": 1}})


def _title(example: Example, query: bool) -> str:
    indicators = "+".join(example.indicators)
    return f"query: {indicators}" if query else f"level {example.level}: {indicators}"


def episode_sheet(episode: Episode, query: int = 0) -> Image.Image:
    """The study pairs, then query `query` with its answer, three pairs to a row, on white."""
    pairs = [(example, False) for example in episode.study] + [(episode.queries[query], True)]
    pair_width = 2 * 10 * CELL + GAP
    rows = -(-len(pairs) // PAIRS_PER_ROW)
    header = 2 * TITLE
    width = PAIRS_PER_ROW * (pair_width + 2 * GAP) + GAP
    height = header + rows * (10 * CELL + TITLE + GAP) + GAP
    sheet = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(sheet)
    draw.text((GAP, GAP), f"{episode.setup}: {episode.grammar.describe()}", fill="black")
    for k, (example, is_query) in enumerate(pairs):
        row, column = divmod(k, PAIRS_PER_ROW)
        left = GAP + column * (pair_width + 2 * GAP)
        top = header + row * (10 * CELL + TITLE + GAP)
        draw.text((left, top + 6), _title(example, is_query), fill="firebrick" if is_query else "black")
        for side, grid in enumerate((example.input, example.output)):
            image = Image.fromarray(render(grid, SPEC))
            sheet.paste(image, (left + side * (10 * CELL + GAP), top + TITLE))
    return sheet


def main(argv: list[str] | None = None) -> int:
    """Draw the sheet; bad input prints one line and returns 2, as the command line does."""
    try:
        return _draw(argv)
    except UserError as error:
        print(f"vision_bench.tasks.carc.sheet: error: {error}", file=sys.stderr)
        return 2


def _draw(argv: list[str] | None) -> int:
    from vision_bench.tasks.studies import get_study

    parser = argparse.ArgumentParser(description="draw one C-ARC episode as a PNG sheet")
    parser.add_argument("--study", default="carc/systematicity/1860")
    parser.add_argument("--split", default="train")
    parser.add_argument("--episode", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    config = get_study(args.study, n_train=1, n_val=1, n_test=1, seed=args.seed)
    if config.episode is None:
        raise ConfigError(f"study {args.study!r} has no episodes; pass a carc/<setup>/<split> study")
    episode = episode_of(config.episode, config.seed, args.split, args.episode)
    buffer = io.BytesIO()
    episode_sheet(episode).save(buffer, format="PNG")
    atomic_write_bytes(args.out, buffer.getvalue())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
