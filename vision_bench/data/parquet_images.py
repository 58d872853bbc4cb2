"""The `parquet` export: tables whose image columns Hugging Face `datasets` decodes as `Image` features.

`datasets` stores an image as a struct `{bytes: binary, path: string}` and recognises the column as
an `Image` feature from the `huggingface` key of the Arrow schema metadata
(`{"info": {"features": {column: {"_type": "Image"}}}}`). Columns not named there keep the type
`datasets` infers from Arrow, so the metadata columns load as plain values next to the images.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from vision_bench.data.manifest import FileRecord
from vision_bench.data.parquet_files import parquet_rows, part_name, write_parquet_file
from vision_bench.data.records import metadata_table
from vision_bench.data.shard_images import encode_samples
from vision_bench.io.atomic import output_folder

if TYPE_CHECKING:
    from vision_bench.data.shard_context import ShardContext
    from vision_bench.data.shards import Shard
    from vision_bench.tasks.sample import TaskSample

IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
HF_METADATA_KEY = b"huggingface"


def image_column(encoded: Sequence[bytes], paths: Sequence[str]) -> pa.StructArray:
    """One image per row: the encoded file bytes and the name it would have as a file."""
    return pa.StructArray.from_arrays(
        [pa.array(list(encoded), type=pa.binary()), pa.array(list(paths), type=pa.string())],
        fields=list(IMAGE_TYPE),
    )


def with_image_features(table: pa.Table, image_columns: Sequence[str]) -> pa.Table:
    """Mark `image_columns` as Hugging Face `Image` features in the schema metadata."""
    features = {name: {"_type": "Image"} for name in image_columns}
    metadata = dict(table.schema.metadata or {})
    metadata[HF_METADATA_KEY] = json.dumps({"info": {"features": features}}, sort_keys=True).encode()
    return table.replace_schema_metadata(metadata)


def image_feature_columns(schema: pa.Schema) -> list[str]:
    """Names of the columns a schema marks as Hugging Face `Image` features."""
    raw = (schema.metadata or {}).get(HF_METADATA_KEY)
    if raw is None:
        return []
    features = json.loads(raw).get("info", {}).get("features") or {}
    return [name for name, feature in features.items() if feature.get("_type") == "Image"]


def write_shard(
    root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
) -> dict[str, FileRecord]:
    """One Parquet file per shard: the metadata columns, then `input` / `target` (and mask) images."""
    output_folder(root, shard.split)  # never a folder link placed in the export
    encoded = encode_samples(samples, context)
    stems = [f"{sample.index:08d}" for sample in samples]
    image_names = [name for name in encoded[0]] if encoded else []
    columns = {}
    for name in image_names:
        field = name.split(".")[0]
        columns[field] = image_column([files[name] for files in encoded], [f"{s}_{name}" for s in stems])
    table = with_image_features(metadata_table(samples, columns), list(columns))
    return write_parquet_file(root, part_name(shard.split, shard.number), table)


def count_samples(root: Path, split: str, files: Sequence[str]) -> int:
    return sum(parquet_rows(root / name) for name in files)


__all__ = [
    "IMAGE_TYPE",
    "count_samples",
    "image_column",
    "image_feature_columns",
    "with_image_features",
    "write_shard",
]
