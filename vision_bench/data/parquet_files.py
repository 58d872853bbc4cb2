"""Parquet files of an export: written atomically and deterministically, read with damage named.

Shared by the formats that write Parquet (`grids`, `folder`'s metadata, `parquet`), the readers and
the dataset card; `part_name` is the one-file-per-shard naming the `grids`, `parquet` and
`webdataset` formats share.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from vision_bench.data.manifest import FileRecord, digest_bytes
from vision_bench.errors import CorruptFileError
from vision_bench.io.atomic import atomic_write_bytes


def parquet_bytes(table: pa.Table) -> bytes:
    """The table as Parquet file bytes (deterministic for equal tables and library versions)."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def write_parquet_file(root: Path, name: str, table: pa.Table) -> dict[str, FileRecord]:
    """Write `table` atomically to `root/name`; its record for the manifest."""
    data = parquet_bytes(table)
    atomic_write_bytes(root / name, data)
    return {name: digest_bytes(data)}


def read_parquet_table(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """A Parquet file's table; a damaged or truncated file raises `CorruptFileError` naming it."""
    try:
        with open(path, "rb") as handle:  # an open file: pyarrow cannot encode a non-UTF-8 file name
            return pq.read_table(handle, columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise CorruptFileError(f"{path}: not a readable Parquet file ({error}); re-export it") from None


def parquet_rows(path: Path) -> int:
    """Row count from the Parquet footer (no data read)."""
    try:
        with open(path, "rb") as handle:
            return pq.ParquetFile(handle).metadata.num_rows
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise CorruptFileError(f"{path}: not a readable Parquet file ({error}); re-export it") from None


def parquet_schema(path: Path) -> pa.Schema:
    """A Parquet file's schema, with its metadata, from the footer (no data read)."""
    try:
        with open(path, "rb") as handle:
            return pq.read_schema(handle)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise CorruptFileError(f"{path}: not a readable Parquet file ({error}); re-export it") from None


def part_name(split: str, number: int, extension: str = "parquet") -> str:
    """`{split}/part-{number:05d}.{extension}`: the file of one shard in single-file-per-shard formats."""
    return f"{split}/part-{number:05d}.{extension}"


__all__ = [
    "parquet_bytes",
    "parquet_rows",
    "parquet_schema",
    "part_name",
    "read_parquet_table",
    "write_parquet_file",
]
