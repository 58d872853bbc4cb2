"""What an export format's writer is given and must provide: `ShardContext` and the `ShardWriter` protocol.

Below the writer modules and the format registry (`export_formats`) that names them, so a writer
imports this and never the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from render.spec import RenderSpec
    from vision_bench.data.manifest import FileRecord
    from vision_bench.data.shards import Shard
    from vision_bench.tasks.sample import TaskSample

IMAGE_FORMATS = ("png", "jpeg")


@dataclass(frozen=True)
class ShardContext:
    """Everything a format's `write_shard` needs besides the samples: how to draw them (`spec`, the
    `image_format` files are encoded in), and whether to store the intermediate frames and object masks."""

    spec: RenderSpec
    image_format: str = "png"
    frames: bool = False
    masks: bool = False


class ShardWriter(Protocol):
    """A format's writer module: the functions `export` and `verify` call."""

    def write_shard(
        self, root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
    ) -> dict[str, FileRecord]:
        """Write one shard's files under `root` atomically; their records by path relative to `root`."""

    def count_samples(self, root: Path, split: str, files: Sequence[str]) -> int:
        """How many samples a split's `files` (relative to `root`) hold."""


__all__ = ["IMAGE_FORMATS", "ShardContext", "ShardWriter"]
