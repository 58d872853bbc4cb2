"""Image datasets: export (folder, Parquet, WebDataset, grids), verify, import, and torch loading
(also of Hugging Face datasets and streamed WebDataset shards made elsewhere).

Names load on first use, so `import vision_bench.data` stays cheap (export workers and the command
line need no torch); the torch Datasets and the device renderer import torch. The batching
function lives in its module: `from vision_bench.data.collate import collate`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DataError": "vision_bench.errors",
    "ExportOptions": "vision_bench.data.export_formats",
    "FolderDataset": "vision_bench.data.datasets",
    "GridBatchRenderer": "vision_bench.data.device",
    "HFImageDataset": "vision_bench.data.hf_datasets",
    "GridsDataset": "vision_bench.data.datasets",
    "ImagePairDataset": "vision_bench.data.imports",
    "OnTheFlyDataset": "vision_bench.data.onthefly",
    "ParquetImageDataset": "vision_bench.data.datasets",
    "ReadOptions": "vision_bench.data.external",
    "ShardStreamDataset": "vision_bench.data.streaming",
    "WebDatasetDataset": "vision_bench.data.datasets",
    "export_dataset": "vision_bench.data.export",
    "open_dataset": "vision_bench.data.opening",
    "open_export": "vision_bench.data.export_formats",
    "open_pair_folder": "vision_bench.data.imports",
    "open_svib": "vision_bench.data.imports",
    "read_manifest": "vision_bench.data.manifest",
    "to_device_batch": "vision_bench.data.device",
    "verify_export": "vision_bench.data.verify",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'vision_bench.data' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = sorted(_EXPORTS)
