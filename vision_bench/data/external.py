"""What datasets made elsewhere (Hugging Face datasets, streamed WebDataset shards) share: which
fields hold the images, which of the source's splits stands for each of ours, the items they give,
and the render spec their stored images imply.

Items are RGB float tensors (3, H, W) in [0, 1] under `input` / `target`, like every image source.
A sample that also carries this project's metadata (a vision-bench export pushed to the Hub, or
shards written by `vision-bench export --format webdataset`) gives the full item with grids, so the
object-aware metrics work; any other gives `input`, `target`, `split`, `index` and `key`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from render.spec import RenderSpec
from vision_bench.data.batch import GridItem, Item, PairItem
from vision_bench.data.items import grid_item
from vision_bench.errors import DataError

IMAGE_ROLES = ("input", "target")
_RECORD_KEYS = ("input_grid", "target_grid", "task_code", "sequence", "split", "index", "task_key", "seed")


def image_fields(columns: Mapping[str, str] | None) -> dict[str, str]:
    """Role (`input`, `target`) -> the source's column or field name; both default to the role."""
    given = dict(columns or {})
    unknown = sorted(set(given) - set(IMAGE_ROLES))
    if unknown:
        raise DataError(f"image columns {unknown} are not roles; name the columns of 'input' and 'target' only")
    return {role: str(given.get(role, role)) for role in IMAGE_ROLES}


def source_split(split: str, splits: Mapping[str, str] | None) -> str:
    """The source's name for our `split` (the same name unless `splits` maps it)."""
    return str((splits or {}).get(split, split))


def record_item(record: Mapping[str, Any]) -> GridItem | None:
    """The item (without images) of a sample carrying this project's metadata; None for other samples."""
    if any(key not in record for key in _RECORD_KEYS):
        return None
    return grid_item(
        np.asarray(record["input_grid"]), np.asarray(record["target_grid"]), task_code=record["task_code"],
        sequence=record["sequence"], split=record["split"], index=record["index"], task_key=record["task_key"],
        seed=record["seed"],
    )


def image_item(item: GridItem | None, images: Mapping[str, torch.Tensor], split: str, index: int, key: str) -> Item:
    """`item` with the sample's `input` / `target` images, or, for a sample without metadata (`item`
    None), the `PairItem` of its images."""
    if item is None:
        return PairItem(input=images["input"], target=images["target"], split=split, index=int(index), key=key)
    item["input"], item["target"] = images["input"], images["target"]
    return item


def stored_spec(image: torch.Tensor, spec: RenderSpec | None, source: str) -> RenderSpec:
    """The spec of stored images: `spec` when its size is theirs, else their size with default drawing."""
    size = (int(image.shape[1]), int(image.shape[2]))
    if spec is None:
        return RenderSpec(size=size)
    if tuple(spec.size) != size:
        raise DataError(
            f"{source}: its images are {size[0]}x{size[1]} pixels but dataset.spec.size is "
            f"{spec.size[0]}x{spec.size[1]}; drop dataset.spec.size (the images' own size is used) or resize the data"
        )
    return spec


__all__ = ["IMAGE_ROLES", "image_fields", "image_item", "record_item", "source_split", "stored_spec"]
