"""The export formats by name (each entry says which module writes it, which Dataset reads it, and
what it can store), the options that pick one, and `open_export`, which opens an export by its format.

A format is one writer module that satisfies `shard_context.ShardWriter`, one Dataset class that
satisfies `datasets.ShardReader`, and one `FORMATS.add(...)` below. The export rules
(`ExportOptions`), `open_export`, `verify`, the CLI help and the time and size estimate that `export`
prints before it starts all read these entries. Writer and reader load on first use, so naming a
format costs no imports (the command line and export workers never import torch). This registry
sits above the writers and readers it names; what they share (`ShardContext`) is below them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.data.manifest import read_manifest
from vision_bench.data.shard_context import IMAGE_FORMATS, ShardContext, ShardWriter
from vision_bench.data.shards import DEFAULT_SHARD_SIZE, plan_shards
from vision_bench.errors import DataError
from vision_bench.registry import Registry

if TYPE_CHECKING:
    from render.spec import RenderSpec
    from vision_bench.data.datasets import ExportDataset, ShardReader


@dataclass(frozen=True)
class ExportFormat:
    """`writer`: the module implementing `ShardWriter`; `reader`: 'module:Class' of its
    `ShardReader`; `images`: it stores rendered images (else they are drawn when read); `frames`
    / `masks`: it can also store the intermediate frames / per-object label masks;
    `bytes_per_pair`: disk per pair, at 128 x 128 pixels for a format that stores images (scaled by
    image area), as measured on envgen/G1/1; `seconds_per_pair`: one worker's time per pair, start-up
    excluded (docs/benchmarks.md: generating about 1,000 pairs/s, a PNG folder export about 230 pairs/s
    at 128 x 128 on a 2-core laptop-class CPU). `export` prints the estimate they give before it
    starts; the defaults are a PNG image format's."""

    writer: str
    reader: str
    images: bool = True
    frames: bool = False
    masks: bool = False
    bytes_per_pair: float = 2_100
    seconds_per_pair: float = 0.0045

    def module(self) -> ShardWriter:
        """The writer module (imported now)."""
        return importlib.import_module(self.writer)

    def reader_class(self) -> ShardReader:
        """The reader, the Dataset class (its module imported now)."""
        module_name, _, name = self.reader.partition(":")
        reader: ShardReader = getattr(importlib.import_module(module_name), name)
        return reader


FORMATS: Registry[ExportFormat] = Registry("export format")
FORMATS.add(
    "grids",
    ExportFormat("vision_bench.data.grids", "vision_bench.data.datasets:GridsDataset", images=False,
                 bytes_per_pair=150, seconds_per_pair=0.001),
    "grids and metadata only (the generator's Parquet); images are rendered when read (default)",
)
FORMATS.add(
    "folder",
    ExportFormat("vision_bench.data.folder", "vision_bench.data.datasets:FolderDataset", frames=True, masks=True),
    "{split}/{index:08d}_input.png and _target.png files plus metadata Parquet per shard",
)
FORMATS.add(
    "parquet",
    ExportFormat("vision_bench.data.parquet_images", "vision_bench.data.datasets:ParquetImageDataset", masks=True,
                 bytes_per_pair=1_100),
    "Parquet with Hugging Face Image columns (input, target) next to the metadata columns",
)
FORMATS.add(
    "webdataset",
    ExportFormat("vision_bench.data.webdataset", "vision_bench.data.datasets:WebDatasetDataset", frames=True,
                 masks=True),
    "WebDataset tar shards: {key}.input.png, {key}.target.png, {key}.json",
)
DEFAULT_FORMAT = "grids"


def formats_that_store(*, frames: bool = False, masks: bool = False) -> list[str]:
    """The formats able to store what is asked (frames and / or masks)."""
    return [name for name, entry in FORMATS.items() if (entry.frames or not frames) and (entry.masks or not masks)]


@dataclass(frozen=True)
class ExportOptions:
    """What, besides the task config and the render spec, decides an export's bytes."""

    format: str = DEFAULT_FORMAT
    image_format: str = "png"
    frames: bool = False
    masks: bool = False
    shard_size: int = DEFAULT_SHARD_SIZE

    def __post_init__(self) -> None:
        export_format = FORMATS[self.format]
        if self.image_format not in IMAGE_FORMATS:
            raise DataError(f"unknown image format {self.image_format!r}; use one of {', '.join(IMAGE_FORMATS)}")
        unsupported = [flag for flag, asked, stored in (("--frames", self.frames, export_format.frames),
                                                        ("--masks", self.masks, export_format.masks))
                       if asked and not stored]
        if unsupported:
            able = formats_that_store(frames=self.frames, masks=self.masks)
            raise DataError(f"{' and '.join(unsupported)}: need an image format that stores them "
                            f"({', '.join(able)}), not {self.format}")
        plan_shards({}, self.shard_size)

    def context(self, spec: RenderSpec) -> ShardContext:
        """What the format's writer needs besides the samples."""
        return ShardContext(spec, self.image_format, frames=self.frames, masks=self.masks)


def open_export(
    root: str | Path, split: str, spec: RenderSpec | None = None, *, render_on: str = "cpu"
) -> ExportDataset:
    """The Dataset of one split of an export directory, by the format its manifest names."""
    manifest = read_manifest(root)
    if manifest["format"] not in FORMATS:
        raise DataError(f"{root}: unknown export format {manifest['format']!r}; known: {', '.join(FORMATS)}")
    return FORMATS[manifest["format"]].reader_class()(root, split, spec, render_on=render_on, manifest=manifest)


__all__ = [
    "DEFAULT_FORMAT",
    "FORMATS",
    "ExportFormat",
    "ExportOptions",
    "formats_that_store",
    "open_export",
]
