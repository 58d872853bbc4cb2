"""The encoded image files of a shard's samples: input, target, optional frames and masks.

All grids of a shard are drawn in one `render_batch` call; every image of a sample uses the
sample's render seed, so a random background or jitter is the same in its input, target and
frames. Files are named by field: `input.png`, `target.png`, `frame{t}.png` for the steps
between input and target (t = 1 .. depth - 1), and, with masks, `input_mask.png`,
`target_mask.png`, `frame{t}_mask.png` (always single-channel PNG: labels must stay exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import cv2
import numpy as np

from render.codec import encode
from render.raster import render_batch
from vision_bench.data.masks import label_grids, mask_image
from vision_bench.data.sources import render_seed

if TYPE_CHECKING:
    from vision_bench.data.shard_context import ShardContext
    from vision_bench.tasks.sample import TaskSample

_EXTENSIONS = {"png": "png", "jpeg": "jpg"}
# zlib level 1: on rendered grids (large flat areas) it encodes about 1.5x faster than the default
# level 6 for files about 1.5x larger (under 1 KB at 128 x 128); JPEG keeps the codec's defaults.
_ENCODE_OPTIONS: dict[str, dict[str, int]] = {"png": {"compression": 1}, "jpeg": {}}


def image_extension(image_format: str) -> str:
    return _EXTENSIONS[image_format]


def frame_names(depth: int, frames: bool) -> list[str]:
    """Field names of a sample's frames, input first and target last."""
    middle = [f"frame{t}" for t in range(1, depth)] if frames else []
    return ["input", *middle, "target"]


def encode_samples(samples: Sequence[TaskSample], context: ShardContext) -> list[dict[str, bytes]]:
    """`{field.ext: bytes}` per sample, in sample order (insertion order = file order in tar shards)."""
    extension = image_extension(context.image_format)
    grids: list[np.ndarray] = []
    seeds: list[int] = []
    names: list[list[str]] = []
    for sample in samples:
        seed = render_seed(sample.seed, sample.split, int(sample.index))
        fields = frame_names(len(sample.frames) - 1, context.frames)
        steps = range(len(sample.frames)) if context.frames else (0, len(sample.frames) - 1)
        grids.extend(np.asarray(sample.frames[step]) for step in steps)
        seeds.extend([seed] * len(fields))
        names.append(fields)
    images = iter(render_batch(grids, context.spec, seeds) if grids else [])
    encoded = []
    for sample, fields in zip(samples, names):
        files = {
            f"{field}.{extension}": encode(next(images), context.image_format, **_ENCODE_OPTIONS[context.image_format])
            for field in fields
        }
        if context.masks:
            files.update(_mask_files(sample, fields, context))
        encoded.append(files)
    return encoded


def _mask_files(sample: TaskSample, fields: list[str], context: ShardContext) -> dict[str, bytes]:
    seed = render_seed(sample.seed, sample.split, int(sample.index))
    labels = label_grids(sample)
    chosen = labels if context.frames else [labels[0], labels[-1]]
    return {f"{field}_mask.png": _gray_png(mask_image(grid, context.spec, seed)) for field, grid in zip(fields, chosen)}


def _gray_png(mask: np.ndarray) -> bytes:
    """A single-channel 8-bit PNG (object numbers as gray levels)."""
    ok, data = cv2.imencode(".png", mask)
    if not ok:
        raise ValueError(f"OpenCV could not encode a {mask.shape[0]}x{mask.shape[1]} mask as PNG")
    return data.tobytes()


__all__ = ["encode_samples", "frame_names", "image_extension"]
