"""`OnTheFlyDataset`: generate and render sample i when asked, deterministically, without files.

Sample i is a pure function of (config, split, i), so any `length` works, including more samples
than the config's count (fresh data every epoch: pass a larger length or shift by epoch). With
`render_on="device"` items carry grids only and `to_device_batch` draws the whole batch on the
training device, so the feed does no image work at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch.utils.data import Dataset

from render.spec import RenderSpec
from vision_bench.data import sources
from vision_bench.data.batch import GridItem
from vision_bench.data.items import add_rendered_images, check_render_on, sample_item
from vision_bench.errors import DataError
from vision_bench.tasks.config import SPLITS, TaskConfig


class OnTheFlyDataset(Dataset):
    """Items of `split` generated from `config` and rendered with `spec` on demand."""

    def __init__(
        self,
        config: TaskConfig,
        split: str,
        spec: RenderSpec | None = None,
        length: int | None = None,
        *,
        render_on: str = "cpu",
        offset: int = 0,
    ) -> None:
        if split not in SPLITS:
            raise DataError(f"unknown split {split!r}; splits are {', '.join(SPLITS)}")
        self.config = config
        self.split = split
        self.spec = spec if spec is not None else RenderSpec()
        self.length = config.count(split) if length is None else int(length)
        if self.length < 0 or offset < 0:
            raise DataError(f"length and offset must be >= 0, got length {self.length} and offset {offset}")
        self.render_on = check_render_on(render_on)
        self.offset = offset

    def __len__(self) -> int:
        return self.length

    def _index(self, index: int) -> int:
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"index {index} out of range for {self.length} items")
        return self.offset + index

    def __getitem__(self, index: int) -> GridItem:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[GridItem]:
        """A whole batch at once (used by `DataLoader`): one batched render for all its images."""
        items = [sample_item(sources.sample(self.config, self.split, self._index(i))) for i in indices]
        if self.render_on == "cpu" and items:
            add_rendered_images(items, self.spec)
        return items


__all__ = ["OnTheFlyDataset"]
