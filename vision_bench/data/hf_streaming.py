"""A Hugging Face dataset streamed (`dataset.streaming: true`): `datasets.load_dataset(..., streaming=True)`
reads its data files as it goes, instead of downloading and preparing the whole dataset first, for Hub
datasets too big for that (a local folder of Parquet files streams the same way, offline).

The split is a `streaming.ShardStreamDataset` whose shards are the dataset's data files (`num_shards`),
so it is dealt to ranks, shuffled, shared by DataLoader workers batch by batch and resumed exactly, as
WebDataset shards are; its length is unknown, so training needs `training.max_steps`. Rows are read with
their images undecoded (bytes) and decoded only in the batches a worker keeps. A row's key (what
`dataset.val_fraction` holds out by) is `SHARD/ROW`: its data file's number and its number in that file.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from render.spec import RenderSpec
from vision_bench.data.external import ReadOptions, image_fields, record_item
from vision_bench.data.hf_datasets import cell_image, check_columns, load_splits, pick_split
from vision_bench.data.streaming import Decoded, Fields, ShardStreamDataset
from vision_bench.errors import DataError

ROWS_AT_ONCE = 256
"""Rows a shard is read by (one Arrow batch)."""


class RowSamples:
    """The rows of a streamed Hugging Face split, shard by shard (`streaming.ShardSamples`)."""

    def __init__(self, table: Any, source: str, columns: Mapping[str, str] | None) -> None:
        self.table = table.decode(False)  # images stay bytes until a worker decodes its batches
        self.source = source
        self.fields = image_fields(columns)

    def samples(self, shard: str) -> Iterator[tuple[str, Fields]]:
        """Shard `shard`'s rows, read with `iter`, which leaves DataLoader workers alone (iterating the dataset
        itself would give each worker only some of the shards, where every worker reads the whole stream)."""
        part = self.table.shard(num_shards=self.table.num_shards, index=int(shard))
        number = itertools.count()
        for batch in part.iter(batch_size=ROWS_AT_ONCE):
            columns = list(batch.items())
            for position in range(len(columns[0][1]) if columns else 0):
                yield f"{shard}/{next(number)}", {name: values[position] for name, values in columns}

    def decode(self, shard: str, key: str, fields: Fields) -> Decoded:
        check_columns(self.source, f"row {key}", self.fields, list(fields))  # a schema that changes between files
        images = {role: cell_image(fields[name], self.source, name, key) for role, name in self.fields.items()}
        return record_item(fields), images


def open_hf_stream(source: str, split: str, spec: RenderSpec | None, options: ReadOptions) -> ShardStreamDataset:
    """Our `split` of a Hugging Face dataset loaded with `streaming=True`, read as `options` say."""
    table, name = pick_split(source, load_splits(source, streaming=True), split, options)
    if table.column_names is not None:  # known from the data files' schema (Parquet, Arrow)
        check_columns(source, f"split {name!r}", image_fields(options.columns), list(table.column_names))
    if table.num_shards < 1:
        raise DataError(f"{source}: split {name!r} has no data files to stream; check the dataset")
    shards = [str(number) for number in range(table.num_shards)]
    return ShardStreamDataset(f"{source} (split {name}, streamed)", split, shards,
                              RowSamples(table, source, options.columns), spec=spec, resize=options.resize,
                              keep=options.key_filter(split))


__all__ = ["ROWS_AT_ONCE", "RowSamples", "open_hf_stream"]
