"""Batching dataset items: stack images, pad grids with -1, keep names and metadata as lists.

Input and target grids are padded to one common size (the largest side over both), so a batch's
grids can be concatenated and rendered in one call on the training device; -1 marks the cells
outside each grid and `grid_shape` / `target_grid_shape` hold the real sizes. Items and batches
are the types of `vision_bench.data.batch`; keys a Dataset adds beyond them are batched alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import torch

from vision_bench.data.batch import Batch
from vision_bench.errors import DataError

PAD_VALUE = -1
GRID_KEYS = ("input_grid", "target_grid")
_SHAPE_KEYS = {"input_grid": "grid_shape", "target_grid": "target_grid_shape"}


def pad_grids(grids: Sequence[torch.Tensor], height: int, width: int) -> torch.Tensor:
    """(B, height, width) long, each grid in the top-left corner, -1 elsewhere."""
    padded = torch.full((len(grids), height, width), PAD_VALUE, dtype=torch.long)
    for row, grid in enumerate(grids):
        padded[row, : grid.shape[0], : grid.shape[1]] = grid
    return padded


def _stack_values(key: str, values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, torch.Tensor):
        shapes = {tuple(value.shape) for value in values}
        if len(shapes) > 1:
            raise DataError(
                f"cannot batch {key!r}: items have shapes {sorted(shapes)}; "
                "use one render size for the whole dataset"
            )
        return torch.stack(values)
    if isinstance(first, bool) or not isinstance(first, int):
        return values
    return torch.tensor(values, dtype=torch.long)


def collate(items: Sequence[Mapping[str, Any]]) -> Batch:
    """One `Batch` from a list of items (`Item`s or any dicts with more keys), for
    `torch.utils.data.DataLoader(collate_fn=collate)`."""
    if not items:
        raise DataError("cannot collate an empty list of items")
    keys = list(items[0])
    batch: dict[str, Any] = {}
    grid_keys = [key for key in GRID_KEYS if key in items[0] and items[0][key] is not None]
    if grid_keys:
        grids = {key: [item[key] for item in items] for key in grid_keys}
        height = max(grid.shape[0] for values in grids.values() for grid in values)
        width = max(grid.shape[1] for values in grids.values() for grid in values)
        for key, values in grids.items():
            batch[key] = pad_grids(values, height, width)
            batch[_SHAPE_KEYS[key]] = torch.tensor([tuple(grid.shape) for grid in values], dtype=torch.long)
    for key in keys:
        if key not in batch:
            batch[key] = _stack_values(key, [item[key] for item in items])
    return cast(Batch, batch)


def grid_list(batch: Batch, key: Literal["input_grid", "target_grid"] = "input_grid") -> list[torch.Tensor]:
    """The unpadded grids of a batch, each cropped to its real shape."""
    shapes = (batch["grid_shape"] if key == "input_grid" else batch["target_grid_shape"]).tolist()
    return [grid[:h, :w] for grid, (h, w) in zip(batch[key], shapes)]


__all__ = ["GRID_KEYS", "PAD_VALUE", "collate", "grid_list", "pad_grids"]
