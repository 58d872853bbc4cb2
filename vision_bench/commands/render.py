"""`vision-bench render INPUT --out DIR`: draw every input/output grid of a task file as images.

Files are `DIR/{split}/{task_key}_{index}_input.{ext}` and `..._target.{ext}` (the names an export's
`folder` format and `score` use), plus `DIR/render_spec.yaml` (the spec used) and `DIR/images.jsonl`
(one line per pair: file names, grid shapes, sequence and render seed, enough to decode the images
back). Everything is written into a temporary sibling directory that is renamed to DIR at the end,
so an error leaves nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.commands._common import add_progress_arguments, show_progress
from vision_bench.commands._render_options import add_image_format_argument, add_render_arguments, spec_from_args

if TYPE_CHECKING:
    import numpy as np

    from render.spec import RenderSpec
    from vision_bench.tasks.sample import TaskSample

NAME = "render"
HELP = "render the input/output grids of a generated Parquet, COGITAO Parquet or ARC JSON task file as images"
BATCH = 256


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT", help="generated or COGITAO Parquet, or ARC JSON (file or folder)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to create (absent or empty)")
    add_render_arguments(parser)
    add_image_format_argument(parser, old_spelling="--format")
    parser.add_argument("--quality", type=int,
                        help="JPEG quality 1-100 (default: 95, with no chroma subsampling)")
    add_progress_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from vision_bench.tasks.formats import read_tasks

    progress = show_progress(args)
    spec = spec_from_args(args)
    options = _encode_options(args)
    records = read_tasks(args.input)
    out = Path(args.out).expanduser().absolute()  # `--out .` names the current folder
    _check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    temp.mkdir()
    try:
        try:
            count = _write_images(records, spec, temp, args, options, progress)
        except OSError as error:  # name the file the user asked for, not the hidden folder it is made in
            name = Path(error.filename).relative_to(temp) if error.filename and str(error.filename).startswith(
                str(temp)) else None
            raise OSError(error.errno, error.strerror or str(error), str(out / name) if name else str(out)) from None
        if out.exists():
            out.rmdir()
        os.rename(temp, out)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    print(f"wrote {count} images of {len(records)} pairs to {out}")
    return 0


def _check_target(out: Path) -> None:
    from vision_bench.errors import ConfigError

    if not out.name:
        raise ConfigError(f"--out {out}: name a folder to create, not the file system root")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out} exists and is not an empty directory; remove it or choose another")


def _encode_options(args: argparse.Namespace) -> dict[str, int]:
    from vision_bench.errors import ConfigError

    if args.quality is None:
        return {}
    if args.image_format != "jpeg":
        raise ConfigError("--quality applies to --image-format jpeg only")
    if not 1 <= args.quality <= 100:
        raise ConfigError(f"--quality must be 1..100, got {args.quality}")
    return {"quality": args.quality}


def _write_images(
    records: list[TaskSample], spec: RenderSpec, root: Path, args: argparse.Namespace, options: dict[str, int],
    progress: bool
) -> int:
    """Render and write all records in batches; returns the number of image files.

    Pair i (in file order) is drawn with seed i for both its images, so a random background or
    jitter is the same in the input and the target.
    """
    from tqdm import tqdm

    from render.codec import encode
    from render.raster import render_batch
    from vision_bench.data.names import check_component, safe_name
    from vision_bench.errors import ConfigError

    extension = "jpg" if args.image_format == "jpeg" else "png"
    stems: set[str] = set()
    lines: list[str] = []
    with tqdm(total=len(records), desc="render", unit="pair", leave=False, disable=None if progress else True) as bar:
        for start in range(0, len(records), BATCH):
            chunk = records[start : start + BATCH]
            seeds = list(range(start, start + len(chunk)))
            inputs = render_batch([record.input for record in chunk], spec, seeds)
            targets = render_batch([record.output for record in chunk], spec, seeds)
            for i, record in enumerate(chunk):
                folder = check_component(record.split, "split name", str(args.input))
                stem = f"{folder}/{safe_name(record.task_key)}_{record.index}"
                if stem in stems:
                    raise ConfigError(
                        f"{args.input}: two pairs would both be written as {stem}_*; "
                        "each (split, task key, index) must be unique"
                    )
                stems.add(stem)
                (root / folder).mkdir(exist_ok=True)
                input_file, target_file = f"{stem}_input.{extension}", f"{stem}_target.{extension}"
                entry = {
                    "task_key": record.task_key,
                    "split": record.split,
                    "index": record.index,
                    "sequence": list(record.sequence),
                    "seed": seeds[i],
                    "input": input_file,
                    "target": target_file,
                    "input_shape": _shape(record.input),
                    "target_shape": _shape(record.output),
                }
                (root / input_file).write_bytes(encode(inputs[i], args.image_format, **options))
                (root / target_file).write_bytes(encode(targets[i], args.image_format, **options))
                lines.append(json.dumps(entry))
            bar.update(len(chunk))
    (root / "render_spec.yaml").write_text(spec.to_yaml(), encoding="utf-8")
    (root / "images.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return 2 * len(lines)


def _shape(grid: np.ndarray) -> list[int]:
    import numpy as np

    return [int(side) for side in np.shape(grid)]
