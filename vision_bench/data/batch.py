"""The item and batch types: what every Dataset yields, what `collate` makes, what models read.

Both are `TypedDict`s, not dataclasses: at run time an item or a batch stays a plain dict, so the
default DataLoader machinery (pickling items to workers, `pin_memory`, collation by third-party
code), torchrun / DDP and any code that indexes a batch by key keep working unchanged, while
mypy checks every key and value type. A dataclass would need its own collate, `pin_memory` and
`to` and would break readers that index by key.

Two item kinds: a `GridItem` (every source that knows the grids: on-the-fly generation, the
export formats, shards and Hugging Face datasets written by this project) carries `input` and
`target` only when its images are rendered on the CPU (`render_on="device"` items get them in
`to_device_batch`); a `PairItem` (image-pair imports, images made elsewhere) has images and no
grids. A `Batch` has every field optional; readers check a named field with `in` or use
`target_shapes`.
"""

from __future__ import annotations

from typing import Literal, TypedDict

import torch


class _RenderedImages(TypedDict, total=False):
    input: torch.Tensor
    target: torch.Tensor


class GridItem(_RenderedImages):
    """One sample with grids: long (h, w) grids, long (4,) task code, float (3, H, W) images in [0, 1]
    (absent until rendered)."""

    input_grid: torch.Tensor
    target_grid: torch.Tensor
    task_code: torch.Tensor
    sequence: tuple[str, ...]
    split: str
    index: int
    task_key: str
    render_seed: int


class PairItem(TypedDict):
    """One image pair without grids; `key` names it in its source (file stem, episode, row)."""

    input: torch.Tensor
    target: torch.Tensor
    split: str
    index: int
    key: str


Item = GridItem | PairItem


class Batch(TypedDict, total=False):
    """Collated items: images (B, 3, H, W); grids (B, h, w) padded with -1 and their real sizes
    `grid_shape` / `target_grid_shape` (B, 2); `task_code` (B, 4); `index`, `render_seed` (B,);
    `sequence`, `split`, `task_key`, `key` as lists."""

    input: torch.Tensor
    target: torch.Tensor
    input_grid: torch.Tensor
    target_grid: torch.Tensor
    grid_shape: torch.Tensor
    target_grid_shape: torch.Tensor
    task_code: torch.Tensor
    sequence: list[tuple[str, ...]]
    split: list[str]
    index: torch.Tensor
    task_key: list[str]
    render_seed: torch.Tensor
    key: list[str]


TensorField = Literal[
    "input", "target", "input_grid", "target_grid", "grid_shape", "target_grid_shape", "task_code", "index",
    "render_seed",
]
"""The batch fields that hold tensors."""


def target_shapes(batch: Batch) -> torch.Tensor | None:
    """The real (h, w) of each target grid: `target_grid_shape`, else `grid_shape` (batches whose targets
    share their inputs' sizes may carry only that), else None."""
    if "target_grid_shape" in batch:
        return batch["target_grid_shape"]
    if "grid_shape" in batch:
        return batch["grid_shape"]
    return None


__all__ = ["Batch", "GridItem", "Item", "PairItem", "TensorField", "target_shapes"]
