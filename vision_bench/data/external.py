"""What datasets made elsewhere (Hugging Face datasets, streamed WebDataset shards) share: which
fields hold the images, which of the source's splits stands for each of ours, the items they give,
and the render spec their stored images imply (and, with `dataset.resize`, the square they are brought to).

Items are RGB float tensors (3, H, W) in [0, 1] under `input` / `target`, like every image source.
A sample that also carries this project's metadata (a vision-bench export pushed to the Hub, or
shards written by `vision-bench export --format webdataset`) gives the full item with grids, so the
object-aware metrics work; any other gives `input`, `target`, `split`, `index` and `key`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from render.spec import RenderSpec
from vision_bench.data.batch import GridItem, Item, PairItem
from vision_bench.data.holdout import OOD_SPLIT, TRAIN_SPLIT, KeyFilter, holdout_filter, looks_like_validation
from vision_bench.data.images import fit_square
from vision_bench.data.items import grid_item
from vision_bench.errors import DataError

IMAGE_ROLES = ("input", "target")


@dataclass(frozen=True)
class ReadOptions:
    """How data made elsewhere is read (the `dataset` options of the same names): `columns` (role -> the
    source's column or field), `splits` (our split -> the source's), `resize` (`images.RESIZE_MODES`),
    `val_fraction` of the training split held out as `val_id` with `val_seed` (`holdout`), and `streaming`
    (a Hugging Face dataset read as `hf_streaming` streams it)."""

    columns: Mapping[str, str] | None = None
    splits: Mapping[str, str] | None = None
    resize: str = "refuse"
    val_fraction: float | None = None
    val_seed: int = 0
    streaming: bool = False

    def key_filter(self, split: str) -> KeyFilter | None:
        """The samples of the source's training split our `split` keeps (`holdout.holdout_filter`)."""
        return holdout_filter(split, self.val_fraction, self.val_seed)

    def own_validation(self, names: Iterable[str]) -> list[str]:
        """The source's splits among `names` that a hold-out would duplicate: those named like validation splits
        but the one our val_ood reads (out-of-distribution data comes from the source, hold-out or not)."""
        ood = source_split(OOD_SPLIT, self.splits)
        return [name for name in names if looks_like_validation(name) and name != ood]

    def read_split(self, split: str) -> str:
        """The source's name of the split our `split` is read from: its training split for a split held out of it
        (or what is left of it), else the split's own."""
        return source_split(TRAIN_SPLIT if self.key_filter(split) is not None else split, self.splits)


READ_AS_STORED = ReadOptions()
"""The default: the columns, splits and images as the source has them."""
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


def stored_spec(image: torch.Tensor, spec: RenderSpec | None, source: str, resize: str = "refuse") -> RenderSpec:
    """The spec of stored images, judged on the first (`image`, (3, H, W)): with `resize` "refuse", `spec` when its
    size is theirs, else their size with default drawing, and square images only; with "pad" or "resize" (see
    `fit_square`), `spec` (which must be square), else the square of their longer side."""
    size = (int(image.shape[1]), int(image.shape[2]))
    if resize != "refuse":
        if spec is None:
            return RenderSpec(size=(max(size), max(size)))
        if spec.size[0] != spec.size[1]:
            raise DataError(f"dataset.spec.size is {spec.size[0]}x{spec.size[1]}, but dataset.resize brings images "
                            "to the models' square; give one size for both sides")
        return spec
    if spec is not None and tuple(spec.size) != size:
        raise DataError(
            f"{source}: its images are {size[0]}x{size[1]} pixels but dataset.spec.size is "
            f"{spec.size[0]}x{spec.size[1]}; drop dataset.spec.size (the images' own size is used), or set "
            "dataset.resize: pad (letterboxed on black) or resize (stretched) to bring them to it"
        )
    if size[0] != size[1]:
        raise DataError(
            f"{source}: its images are {size[0]}x{size[1]} pixels, not square, and the models take square images; "
            "set dataset.resize: pad (letterboxed on black) or resize (stretched), or make them square"
        )
    return spec or RenderSpec(size=size)


def square_images(images: Mapping[str, torch.Tensor], spec: RenderSpec, resize: str) -> dict[str, torch.Tensor]:
    """A sample's images brought to `spec`'s square by `resize` ("pad" or "resize"; "refuse" leaves them)."""
    if resize == "refuse":
        return dict(images)
    return {role: fit_square(image, spec.size[0], resize) for role, image in images.items()}


__all__ = [
    "IMAGE_ROLES", "READ_AS_STORED", "ReadOptions", "image_fields", "image_item", "record_item", "source_split",
    "square_images", "stored_spec",
]
