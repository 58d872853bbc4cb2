"""Dataset items with grids (`vision_bench.data.batch.GridItem`), built the same way from every source.

`render_seed` is the seed that draws the sample's images; `input` and `target` are added unless
images are rendered later on the training device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from render.raster import render_batch
from render.spec import RenderSpec
from vision_bench.data.batch import GridItem
from vision_bench.data.images import batch_tensor
from vision_bench.data.sources import render_seed
from vision_bench.errors import DataError

RENDER_ON = ("cpu", "device")


def check_render_on(render_on: str) -> str:
    if render_on not in RENDER_ON:
        raise DataError(f"render_on must be 'cpu' (images in every item) or 'device' (grids only), got {render_on!r}")
    return render_on


def grid_item(
    input_grid: np.ndarray,
    target_grid: np.ndarray,
    *,
    task_code: Sequence[int],
    sequence: Sequence[str],
    split: str,
    index: int,
    task_key: str,
    seed: int | None,
) -> GridItem:
    """An item without images; `render_seed` follows from (seed, split, index)."""
    return {
        "input_grid": torch.from_numpy(np.array(input_grid, dtype=np.int64)),
        "target_grid": torch.from_numpy(np.array(target_grid, dtype=np.int64)),
        "task_code": torch.as_tensor(list(task_code), dtype=torch.long),
        "sequence": tuple(sequence),
        "split": split,
        "index": int(index),
        "task_key": task_key,
        "render_seed": render_seed(seed, split, int(index)),
    }


def sample_item(sample: Any) -> GridItem:
    """An item without images from a generator `TaskSample`."""
    return grid_item(
        sample.input,
        sample.output,
        task_code=sample.task_code,
        sequence=sample.sequence,
        split=sample.split,
        index=sample.index,
        task_key=sample.task_key,
        seed=sample.seed,
    )


def add_rendered_images(items: Sequence[GridItem], spec: RenderSpec) -> None:
    """Render every item's input and target grid with its own seed, in one batched call."""
    grids = [item["input_grid"].numpy() for item in items] + [item["target_grid"].numpy() for item in items]
    seeds = [item["render_seed"] for item in items] * 2
    images = batch_tensor(render_batch(grids, spec, seeds))
    count = len(items)
    for i, item in enumerate(items):
        item["input"], item["target"] = images[i], images[count + i]


__all__ = ["RENDER_ON", "add_rendered_images", "check_render_on", "grid_item", "sample_item"]
