"""The `webdataset` export: tar shards written deterministically and indexed for random access.

A WebDataset shard is a plain tar in which the files of one sample are adjacent and share a key
(the file name up to its first dot): `{key}.input.png`, `{key}.target.png`, `{key}.json`. Headers
carry no time, owner or permissions of this machine, so equal samples give equal bytes anywhere.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.data.manifest import FileRecord, digest_bytes
from vision_bench.data.parquet_files import part_name
from vision_bench.data.records import record_json, sample_record
from vision_bench.data.shard_images import encode_samples
from vision_bench.errors import CorruptFileError
from vision_bench.io.atomic import atomic_write_bytes, output_folder

if TYPE_CHECKING:
    from vision_bench.data.shard_context import ShardContext
    from vision_bench.data.shards import Shard
    from vision_bench.tasks.sample import TaskSample

_FILE_MODE = 0o644


def tar_bytes(members: Iterable[tuple[str, bytes]]) -> bytes:
    """A ustar archive of `(name, data)` members in the given order, with fixed headers."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = _FILE_MODE
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sample_members(key: str, files: Mapping[str, bytes]) -> list[tuple[str, bytes]]:
    """`{key}.{suffix}` members of one sample, e.g. suffix `input.png` or `json`."""
    return [(f"{key}.{suffix}", data) for suffix, data in files.items()]


def split_key(name: str) -> tuple[str, str]:
    """WebDataset's rule: the key is the base name up to its first dot, the rest is the field."""
    directory, _, base = name.rpartition("/")
    key, _, field = base.partition(".")
    return (f"{directory}/{key}" if directory else key), field


@dataclass(frozen=True)
class TarEntry:
    offset: int
    size: int


class TarIndex:
    """Byte offsets of every member of one tar, grouped by sample key, for random access."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.samples: dict[str, dict[str, TarEntry]] = {}
        try:
            with tarfile.open(self.path, mode="r:") as archive:
                for member in archive:
                    if not member.isfile():
                        continue
                    key, field = split_key(member.name)
                    self.samples.setdefault(key, {})[field] = TarEntry(member.offset_data, member.size)
        except tarfile.TarError as error:
            raise CorruptFileError(f"{self.path}: not a readable tar shard ({error}); re-export it") from None
        self.keys = list(self.samples)

    def read(self, key: str, field: str) -> bytes:
        entry = self.samples[key].get(field)
        if entry is None:
            raise CorruptFileError(f"{self.path}: sample {key!r} has no {field!r} member; re-export the shard")
        with open(self.path, "rb") as handle:
            handle.seek(entry.offset)
            data = handle.read(entry.size)
        if len(data) != entry.size:
            raise CorruptFileError(f"{self.path}: truncated inside {key}.{field}; re-export the shard")
        return data


def write_shard(
    root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
) -> dict[str, FileRecord]:
    """One tar per shard: `{index:08d}.input.png`, `.target.png`, optional frames and masks, `.json`."""
    output_folder(root, shard.split)  # never a folder link placed in the export
    members: list[tuple[str, bytes]] = []
    for sample, images in zip(samples, encode_samples(samples, context)):
        fields = {**images, "json": record_json(sample_record(sample))}
        members.extend(sample_members(f"{sample.index:08d}", fields))
    data = tar_bytes(members)
    name = part_name(shard.split, shard.number, "tar")
    atomic_write_bytes(root / name, data)
    return {name: digest_bytes(data)}


def count_samples(root: Path, split: str, files: Sequence[str]) -> int:
    return sum(len(TarIndex(root / name).keys) for name in files)


__all__ = [
    "TarEntry", "TarIndex", "count_samples", "sample_members", "split_key", "tar_bytes", "write_shard",
]
