"""The `grids` export (default): the generator's Parquet per shard, no images.

Compact and exact: `{split}/part-{shard:05d}.parquet` as `vision_bench.tasks.formats.write_parquet`
writes it (COGITAO's public columns plus this project's), rendered when read, on the CPU by
`GridsDataset` or on the training device by `to_device_batch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.data.manifest import FileRecord, digest_file
from vision_bench.data.parquet_files import parquet_rows, part_name
from vision_bench.io.atomic import atomic_output, output_folder

if TYPE_CHECKING:
    from vision_bench.data.shard_context import ShardContext
    from vision_bench.data.shards import Shard
    from vision_bench.tasks.sample import TaskSample


def write_shard(
    root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
) -> dict[str, FileRecord]:
    from vision_bench.tasks.formats import write_parquet

    output_folder(root, shard.split)  # never a folder link placed in the export
    name = part_name(shard.split, shard.number)
    with atomic_output(root / name) as temp:
        write_parquet(list(samples), temp)
    return {name: digest_file(root / name)}


def count_samples(root: Path, split: str, files: Sequence[str]) -> int:
    return sum(parquet_rows(root / name) for name in files)


__all__ = ["count_samples", "write_shard"]
