"""Torch Datasets over export directories, one per format, all yielding the same items.

Item i of a split is sample i of that split whatever the format: `grids` exports render it on read
(or leave it to the training device with `render_on="device"`), image exports decode the stored
files. `export_formats.open_export(root, split)` reads `manifest.json` and picks the class its format names.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa
from torch.utils.data import Dataset

from render.spec import RenderSpec
from vision_bench.data.batch import GridItem
from vision_bench.data.folder import is_metadata_file
from vision_bench.data.images import load_image_tensor
from vision_bench.data.items import add_rendered_images, check_render_on, grid_item, sample_item
from vision_bench.data.manifest import read_manifest, shard_file_records
from vision_bench.data.parquet_files import read_parquet_table
from vision_bench.data.webdataset import TarIndex
from vision_bench.errors import DataError

_GRID_COLUMNS = ("input_grid", "target_grid")
_VALUE_COLUMNS = ("split", "index", "seed", "task_key", "sequence", "task_code")
_METADATA_COLUMNS = (*_VALUE_COLUMNS, *_GRID_COLUMNS)


class GridColumn:
    """Random access to a `list<list<int>>` Arrow column as (h, w) numpy grids, without Python lists."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        rows = array.flatten()
        outer, inner = np.asarray(array.offsets), np.asarray(rows.offsets)
        self.outer = outer - outer[0]
        self.inner = inner - inner[0]
        self.values = np.asarray(rows.flatten())

    def __getitem__(self, index: int) -> np.ndarray:
        first, last = self.outer[index], self.outer[index + 1]
        start, stop = self.inner[first], self.inner[last]
        height = int(last - first)
        return self.values[start:stop].reshape(height, -1) if height else np.zeros((0, 0), self.values.dtype)


class ExportDataset(Dataset, ABC):
    """Common part: the split's files in shard order, the manifest's spec, the render mode."""

    def __init__(self, root: str | Path, split: str, spec: RenderSpec | None = None, *,
                 render_on: str = "cpu", manifest: dict[str, Any] | None = None) -> None:
        self.root = Path(root)
        self.manifest = manifest if manifest is not None else read_manifest(self.root)
        splits = self.manifest["splits"]
        if split not in splits:
            raise DataError(f"{self.root} has no split {split!r}; it has {', '.join(splits)}")
        self.split = split
        self.render_on = check_render_on(render_on)
        self.export_spec = RenderSpec.from_dict(self.manifest["settings"]["render_spec"])
        self.spec = spec if spec is not None else self.export_spec
        shards = shard_file_records(self.manifest)
        self.files = [
            name
            for shard, entry in self.manifest["shards"].items()
            if entry["split"] == split
            for name in sorted(shards[shard])
        ]
        self.length = int(splits[split]["count"])

    def __len__(self) -> int:
        return self.length

    def _check_index(self, index: int) -> int:
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"index {index} out of range for {self.length} items of {self.root} {self.split}")
        return index

    def _check_images_match_spec(self) -> None:
        if self.render_on == "cpu" and self.spec != self.export_spec:
            raise DataError(
                f"{self.root}: its images were drawn with the render spec in its manifest, not with the one asked "
                "for; drop the other spec (dataset.spec) to use the export's images, export the grids format "
                "(`vision-bench export --format grids`) to draw them on the training device with any spec, or "
                "re-export the images with the spec you want"
            )

    def __getitem__(self, index: int) -> GridItem:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[GridItem]:
        """Items of a whole batch (used by `DataLoader`); images only when `render_on="cpu"`."""
        rows = [self._check_index(i) for i in indices]
        items = [self._grid_item(row) for row in rows]
        if self.render_on == "cpu" and items:
            self._add_images(items, rows)
        return items

    @abstractmethod
    def _grid_item(self, row: int) -> GridItem:
        """Item `row` without images."""

    @abstractmethod
    def _add_images(self, items: list[GridItem], rows: list[int]) -> None:
        """Set `input` and `target` of each item (decoded from the export or rendered)."""


class _MetadataTable:
    """The metadata columns of a split's Parquet files, read once, accessed per row."""

    def __init__(self, table: pa.Table) -> None:
        self.columns = {name: table.column(name) for name in _VALUE_COLUMNS}
        self.input_grids = GridColumn(table.column("input_grid"))
        self.target_grids = GridColumn(table.column("target_grid"))

    def item(self, row: int) -> GridItem:
        value = {name: column[row].as_py() for name, column in self.columns.items()}
        return grid_item(
            self.input_grids[row], self.target_grids[row], task_code=value["task_code"], sequence=value["sequence"],
            split=value["split"], index=value["index"], task_key=value["task_key"], seed=value["seed"],
        )


def _concat_tables(paths: list[Path], columns: Sequence[str] | None = None) -> pa.Table:
    tables = [read_parquet_table(path, columns) for path in paths]
    return pa.concat_tables(tables) if tables else pa.table({})


class FolderDataset(ExportDataset):
    """A `folder` export: images from `{split}/{index:08d}_input.png` / `_target.png`."""

    def __init__(self, root: str | Path, split: str, spec: RenderSpec | None = None, **options: Any) -> None:
        super().__init__(root, split, spec, **options)
        self._check_images_match_spec()
        paths = [self.root / name for name in self.files if is_metadata_file(name)]
        table = _concat_tables(paths, [*_METADATA_COLUMNS, "input_file", "target_file"])
        self.metadata = _MetadataTable(table)
        self.input_files = table.column("input_file").to_pylist()
        self.target_files = table.column("target_file").to_pylist()

    def _grid_item(self, row: int) -> GridItem:
        return self.metadata.item(row)

    def _add_images(self, items: list[GridItem], rows: list[int]) -> None:
        for item, row in zip(items, rows):
            item["input"] = load_image_tensor(self.root / self.input_files[row])
            item["target"] = load_image_tensor(self.root / self.target_files[row])


class ParquetImageDataset(ExportDataset):
    """A `parquet` export: images from the `input` / `target` image columns."""

    def __init__(self, root: str | Path, split: str, spec: RenderSpec | None = None, **options: Any) -> None:
        super().__init__(root, split, spec, **options)
        self._check_images_match_spec()
        images: list[Literal["input", "target"]] = ["input", "target"] if self.render_on == "cpu" else []
        table = _concat_tables([self.root / name for name in self.files], [*_METADATA_COLUMNS, *images])
        self.metadata = _MetadataTable(table)
        self.images = {name: table.column(name).combine_chunks().field("bytes") for name in images}

    def _grid_item(self, row: int) -> GridItem:
        return self.metadata.item(row)

    def _add_images(self, items: list[GridItem], rows: list[int]) -> None:
        for item, row in zip(items, rows):
            for name, column in self.images.items():
                item[name] = load_image_tensor(column[row].as_py())


class WebDatasetDataset(ExportDataset):
    """A `webdataset` export: random access into its tar shards through a member index."""

    def __init__(self, root: str | Path, split: str, spec: RenderSpec | None = None, **options: Any) -> None:
        super().__init__(root, split, spec, **options)
        self._check_images_match_spec()
        tars = [TarIndex(self.root / name) for name in self.files]
        self.entries = [(tar, key) for tar in tars for key in tar.keys]

    def _grid_item(self, row: int) -> GridItem:
        tar, key = self.entries[row]
        record = json.loads(tar.read(key, "json"))
        return grid_item(
            np.asarray(record["input_grid"]), np.asarray(record["target_grid"]), task_code=record["task_code"],
            sequence=record["sequence"], split=record["split"], index=record["index"],
            task_key=record["task_key"], seed=record["seed"],
        )

    def _add_images(self, items: list[GridItem], rows: list[int]) -> None:
        for item, row in zip(items, rows):
            tar, key = self.entries[row]
            for field in ("input", "target"):
                name = next(name for name in tar.samples[key] if name.split(".")[0] == field)
                item[field] = load_image_tensor(tar.read(key, name))


class GridsDataset(ExportDataset):
    """A `grids` export: the generator's Parquet, rendered on read (or on the device)."""

    def __init__(self, root: str | Path, split: str, spec: RenderSpec | None = None, **options: Any) -> None:
        from vision_bench.tasks.formats import read_tasks

        super().__init__(root, split, spec, **options)
        self.samples = [sample for name in self.files for sample in read_tasks(self.root / name)]

    def _grid_item(self, row: int) -> GridItem:
        return sample_item(self.samples[row])

    def _add_images(self, items: list[GridItem], rows: list[int]) -> None:
        add_rendered_images(items, self.spec)


class ShardReader(Protocol):
    """A format's Dataset class: opens one split of an export directory."""

    def __call__(
        self,
        root: str | Path,
        split: str,
        spec: RenderSpec | None = None,
        *,
        render_on: str = "cpu",
        manifest: dict[str, Any] | None = None,
    ) -> ExportDataset:
        """The Dataset of `split`."""


__all__ = [
    "ExportDataset",
    "FolderDataset",
    "GridColumn",
    "GridsDataset",
    "ParquetImageDataset",
    "ShardReader",
    "WebDatasetDataset",
]
