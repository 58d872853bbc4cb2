"""`vision-bench show INPUT --out sheet.png`: a contact sheet of rendered input/target pairs.

Each pair is drawn side by side (input, then target), each image named "input" or "target" below it, with
the task key above the input and the transformation sequence (if any) above the target, four pairs per row.
The sheet is written atomically. It takes `render`'s options; without a spec file it draws with the `fit`
layout (square cells), so non-square grids keep their shape.
"""

from __future__ import annotations

import argparse
import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.commands._render_options import add_render_arguments, spec_from_args

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.figure import Figure

    from vision_bench.tasks.sample import TaskSample

NAME = "show"
HELP = "draw the first N input/output pairs of a task file as a PNG contact sheet titled with their sequences"
PAIRS_PER_ROW = 4
ROLES = ("input", "target")
"""The names under each pair's two images."""
ROLE_HEIGHT = 0.25
"""Inches a row of the sheet gives the names under its images (each title line takes 0.14)."""
LAYOUT = "fit"
SHEET_FORMATS = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".pdf": "pdf", ".svg": "svg"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT", help="generated or COGITAO Parquet, or ARC JSON (file or folder)")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="contact sheet to write: .png, .jpg / .jpeg, .pdf or .svg (the suffix picks the format)")
    parser.add_argument("--n", type=int, default=8, help="number of pairs to show (default 8)")
    add_render_arguments(parser, layout=LAYOUT)


def run(args: argparse.Namespace) -> int:
    from render.raster import render_batch
    from vision_bench.bench.figures import REPORTS_EXTRA, figures_missing
    from vision_bench.errors import ConfigError
    from vision_bench.io.atomic import atomic_output
    from vision_bench.tasks.formats import read_tasks

    if args.n < 1:
        raise ConfigError(f"--n must be at least 1, got {args.n}")
    missing = figures_missing()
    if missing is not None:
        raise ConfigError(f"show draws its sheet with matplotlib, which is not installed ({REPORTS_EXTRA})")
    image_format = SHEET_FORMATS.get(Path(args.out).suffix.lower())
    if image_format is None:
        raise ConfigError(f"--out {args.out}: name a .png, .jpg, .jpeg, .pdf or .svg file")
    spec = spec_from_args(args, layout=LAYOUT)
    records = read_tasks(args.input)[: args.n]
    if not records:
        raise ConfigError(f"{args.input} holds no task pairs to show; give a task file with at least one pair")
    seeds = list(range(len(records)))
    inputs = render_batch([r.input for r in records], spec, seeds)
    targets = render_batch([r.output for r in records], spec, seeds)
    figure = _contact_sheet(records, inputs, targets)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(out) as temp:
        figure.savefig(temp, format=image_format, dpi=100, bbox_inches="tight", pad_inches=0.1)
    print(f"wrote {len(records)} pairs to {out}")
    return 0


def _wrapped(title: str) -> str:
    """A panel title in lines of at most 28 characters, printable whatever the bytes of a file name."""
    printable = title.encode("utf-8", "backslashreplace").decode("utf-8")
    return "\n".join(textwrap.wrap(printable, 28))


def _contact_sheet(records: list[TaskSample], inputs: np.ndarray, targets: np.ndarray) -> Figure:
    """A matplotlib Figure (no pyplot state) with each pair's input and target side by side."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = min(len(records), PAIRS_PER_ROW)
    rows = math.ceil(len(records) / columns)
    titles = []
    for record in records:
        sequence = " → ".join(record.sequence)
        titles.append((_wrapped(f"{record.task_key} {record.split} #{record.index}"), _wrapped(sequence)))
    title_lines = max(title.count("\n") + 1 for pair in titles for title in pair)
    figure = Figure(figsize=(2.2 * 2 * columns, (2.2 + 0.14 * title_lines + ROLE_HEIGHT) * rows))
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, 2 * columns, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for i, pair_titles in enumerate(titles):
        row, column = divmod(i, columns)
        for offset, (image, title, role) in enumerate(zip((inputs[i], targets[i]), pair_titles, ROLES)):
            ax = axes[row, 2 * column + offset]
            ax.axis("on")
            ax.imshow(image, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_color("0.6")  # a frame, so that a white background still shows the image's extent
            ax.set_title(title, fontsize=7)
            ax.set_xlabel(role, fontsize=8, labelpad=2)
    figure.tight_layout()
    return figure
