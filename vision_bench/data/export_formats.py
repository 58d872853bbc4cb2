"""The export formats by name: each is a module with the same small set of functions.

A format module defines
- `shard_files(shard, options) -> list[str]`: the files (relative to the export root) one shard writes;
- `write_shard(root, shard, samples, options) -> dict[str, FileRecord]`: write them atomically;
- `count_samples(root, split, files) -> int`: how many samples a split's files hold (for `verify`).
Modules load on first use, so naming a format costs no imports.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from vision_bench.registry import Registry


@dataclass(frozen=True)
class ExportFormat:
    name: str
    module_name: str

    def module(self) -> ModuleType:
        return importlib.import_module(self.module_name)


FORMATS: Registry[ExportFormat] = Registry("export format")
FORMATS.add(
    "grids",
    ExportFormat("grids", "vision_bench.data.grids"),
    "grids and metadata only (the generator's Parquet); images are rendered when read (default)",
)
FORMATS.add(
    "folder",
    ExportFormat("folder", "vision_bench.data.folder"),
    "{split}/{index:08d}_input.png and _target.png files plus metadata Parquet per shard",
)
FORMATS.add(
    "parquet",
    ExportFormat("parquet", "vision_bench.data.parquet_images"),
    "Parquet with Hugging Face Image columns (input, target) next to the metadata columns",
)
FORMATS.add(
    "webdataset",
    ExportFormat("webdataset", "vision_bench.data.webdataset"),
    "WebDataset tar shards: {key}.input.png, {key}.target.png, {key}.json",
)
DEFAULT_FORMAT = "grids"

__all__ = ["DEFAULT_FORMAT", "FORMATS", "ExportFormat"]
