"""The `folder` export: one image file per frame, plus a metadata Parquet per shard.

Layout: `{split}/{index:08d}_input.png`, `{split}/{index:08d}_target.png`, with `--frames` also
`_frame{t}.png` for the steps in between, with `--masks` `_input_mask.png` / `_target_mask.png`
(and per frame), and `{split}/metadata-{shard:05d}.parquet` holding the grids, sequence, task code,
objects and the file names (`input_file`, `target_file`, `files`: every file of the sample,
relative to the export root).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from vision_bench.data.manifest import FileRecord, digest_bytes
from vision_bench.data.parquet_files import parquet_rows, write_parquet_file
from vision_bench.data.records import metadata_table
from vision_bench.data.shard_images import encode_samples
from vision_bench.errors import CorruptFileError
from vision_bench.io.atomic import atomic_write_bytes, output_folder

if TYPE_CHECKING:
    from vision_bench.data.shard_context import ShardContext
    from vision_bench.data.shards import Shard
    from vision_bench.tasks.sample import TaskSample

METADATA_PREFIX = "metadata-"


def metadata_name(split: str, number: int) -> str:
    return f"{split}/{METADATA_PREFIX}{number:05d}.parquet"


def is_metadata_file(name: str) -> bool:
    return Path(name).name.startswith(METADATA_PREFIX) and name.endswith(".parquet")


def write_shard(
    root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
) -> dict[str, FileRecord]:
    """Write every image file of the shard, then its metadata Parquet (which names the files)."""
    output_folder(root, shard.split)  # never a folder link placed in the export
    files: dict[str, FileRecord] = {}
    input_files, target_files, sample_files = [], [], []
    for sample, images in zip(samples, encode_samples(samples, context)):
        names = []
        for field, data in images.items():
            name = f"{shard.split}/{sample.index:08d}_{field}"
            atomic_write_bytes(root / name, data)
            files[name] = digest_bytes(data)
            names.append(name)
        input_files.append(names[0])
        target_files.append(next(n for n in names if Path(n).stem.endswith("_target")))
        sample_files.append(names)
    extra = {
        "input_file": pa.array(input_files, pa.string()),
        "target_file": pa.array(target_files, pa.string()),
        "files": pa.array(sample_files, pa.list_(pa.string())),
    }
    table = metadata_table(samples, extra)
    files.update(write_parquet_file(root, metadata_name(shard.split, shard.number), table))
    return files


def count_samples(root: Path, split: str, files: Sequence[str]) -> int:
    """Rows of the split's metadata files, checked against the number of input images."""
    rows = sum(parquet_rows(root / name) for name in files if is_metadata_file(name))
    inputs = sum(1 for name in files if Path(name).stem.endswith("_input"))
    if rows != inputs:
        raise CorruptFileError(f"{root / split}: metadata lists {rows} samples but there are {inputs} input images; "
                               "re-run the `vision-bench export` command that made it to repair it")
    return rows


__all__ = ["count_samples", "is_metadata_file", "metadata_name", "write_shard"]
