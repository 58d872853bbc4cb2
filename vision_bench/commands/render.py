"""`vision-bench render INPUT --out DIR`: draw every input/output grid of a task file as images.

Files are `DIR/{split}/{task_key}_{index}_input.{ext}` and `..._output.{ext}`, plus
`DIR/render_spec.yaml` (the spec used) and `DIR/images.jsonl` (one line per pair: file names,
grid shapes, sequence and render seed, enough to decode the images back). Everything is written
into a temporary sibling directory that is renamed to DIR at the end, so an error leaves nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

NAME = "render"
HELP = "render the input/output grids of a generated Parquet, COGITAO Parquet or ARC JSON task file as images"
BATCH = 256


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT", help="generated or COGITAO Parquet, or ARC JSON (file or folder)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to create (absent or empty)")
    add_render_arguments(parser)
    parser.add_argument("--format", choices=("png", "jpeg"), default="png", help="image format (default png)")
    parser.add_argument("--quality", type=int, help="JPEG quality 1-100 (default 95; no chroma subsampling)")


def add_render_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The render-spec options `spec_from_args` reads, shared by every command that renders."""
    parser.add_argument("--spec", metavar="FILE", help="render spec YAML (docs/rendering.md); options below override it")
    parser.add_argument("--size", nargs=2, type=int, metavar=("H", "W"), help="image height and width in pixels")
    parser.add_argument("--palette", help="cogitao-rgb (default), arc or c-arc")
    parser.add_argument("--background", help="palette (color 0), white, black, #RRGGBB or random")
    parser.add_argument("--layout", help="stretch (default), fit, or cell:SIZE[:ANCHOR]")
    parser.add_argument("--blur", help="none (default), gaussian:SIGMA or box:SIZE")


def run(args: argparse.Namespace) -> int:
    from vision_bench.tasks.formats import read_tasks

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
            count = _write_images(records, spec, temp, args, options)
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


def spec_from_args(args: argparse.Namespace) -> Any:
    """The spec file (or the default spec) with the command-line options laid over it."""
    from render.spec import RenderSpec

    spec = RenderSpec.from_yaml(Path(args.spec)) if args.spec else RenderSpec()
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


def _check_target(out: Path) -> None:
    from vision_bench.errors import ConfigError

    if not out.name:
        raise ConfigError(f"--out {out}: name a folder to create, not the file system root")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out} exists and is not an empty directory; remove it or choose another")


def _encode_options(args: argparse.Namespace) -> dict[str, Any]:
    from vision_bench.errors import ConfigError

    if args.quality is None:
        return {}
    if args.format != "jpeg":
        raise ConfigError("--quality applies to --format jpeg only")
    if not 1 <= args.quality <= 100:
        raise ConfigError(f"--quality must be 1..100, got {args.quality}")
    return {"quality": args.quality}


def _write_images(
    records: list[Any], spec: Any, root: Path, args: argparse.Namespace, options: dict[str, Any]
) -> int:
    """Render and write all records in batches; returns the number of image files.

    Pair i (in file order) is drawn with seed i for both its images, so a random background or
    jitter is the same in the input and the output.
    """
    from render.codec import encode
    from render.raster import render_batch
    from vision_bench.data.names import check_component, safe_name
    from vision_bench.errors import ConfigError

    extension = "jpg" if args.format == "jpeg" else "png"
    stems: set[str] = set()
    lines: list[str] = []
    for start in range(0, len(records), BATCH):
        chunk = records[start : start + BATCH]
        seeds = list(range(start, start + len(chunk)))
        inputs = render_batch([record.input for record in chunk], spec, seeds)
        outputs = render_batch([record.output for record in chunk], spec, seeds)
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
            entry = {
                "task_key": record.task_key,
                "split": record.split,
                "index": record.index,
                "sequence": list(record.sequence),
                "seed": seeds[i],
                "input": f"{stem}_input.{extension}",
                "output": f"{stem}_output.{extension}",
                "input_shape": _shape(record.input),
                "output_shape": _shape(record.output),
            }
            (root / entry["input"]).write_bytes(encode(inputs[i], args.format, **options))
            (root / entry["output"]).write_bytes(encode(outputs[i], args.format, **options))
            lines.append(json.dumps(entry))
    (root / "render_spec.yaml").write_text(spec.to_yaml(), encoding="utf-8")
    (root / "images.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return 2 * len(lines)


def _shape(grid: Any) -> list[int]:
    import numpy as np

    return [int(side) for side in np.shape(grid)]
