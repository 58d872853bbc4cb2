"""Per-sample metadata of image exports: one JSON-able record and one Arrow table layout.

Folder, Parquet and WebDataset exports store the same fields next to their images: the grids
(`input_grid`, `target_grid`, every step in `frames`), `sequence`, `task_code`, `task_key`,
`split`, `index`, `seed`, `render_seed` and the generator's per-object metadata (`objects`, JSON).
Readers rebuild dataset items from these fields without regenerating anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from vision_bench.data.sources import render_seed
from vision_bench.io.documents import JSONDict

if TYPE_CHECKING:
    from vision_bench.tasks.sample import TaskSample

GRID_TYPE = pa.list_(pa.list_(pa.int8()))
METADATA_SCHEMA = pa.schema(
    [
        ("split", pa.string()),
        ("index", pa.int64()),
        ("seed", pa.int64()),
        ("render_seed", pa.int64()),
        ("task_key", pa.string()),
        ("sequence", pa.list_(pa.string())),
        ("task_code", pa.list_(pa.int64())),
        ("input_grid", GRID_TYPE),
        ("target_grid", GRID_TYPE),
        ("frames", pa.list_(GRID_TYPE)),
        ("objects", pa.string()),
    ]
)


def _plain(value: object) -> object:
    """numpy scalars and arrays inside object metadata as plain JSON values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in export metadata")


def sample_record(sample: TaskSample) -> JSONDict:
    """The metadata of one generator `TaskSample` as plain JSON values."""
    return {
        "split": sample.split,
        "index": int(sample.index),
        "seed": None if sample.seed is None else int(sample.seed),
        "render_seed": render_seed(sample.seed, sample.split, int(sample.index)),
        "task_key": sample.task_key,
        "sequence": list(sample.sequence),
        "task_code": [int(token) for token in sample.task_code],
        "input_grid": np.asarray(sample.input).tolist(),
        "target_grid": np.asarray(sample.output).tolist(),
        "frames": [np.asarray(frame).tolist() for frame in sample.frames],
        "objects": _objects_json(sample),
    }


def _objects_json(sample: TaskSample) -> str:
    return json.dumps(list(sample.objects), default=_plain, sort_keys=True)


def record_json(record: JSONDict) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def grid_array(grids: Sequence[np.ndarray]) -> pa.ListArray:
    """(h, w) grids as a `list<list<int8>>` Arrow array, built from numpy buffers (no Python lists)."""
    heights = np.array([grid.shape[0] for grid in grids], dtype=np.int32)
    widths = np.repeat(np.array([grid.shape[1] for grid in grids], dtype=np.int32), heights)
    flat = [np.asarray(grid, dtype=np.int8).ravel() for grid in grids]
    values = np.concatenate(flat) if flat else np.zeros(0, np.int8)
    rows = pa.ListArray.from_arrays(pa.array(np.r_[0, np.cumsum(widths)].astype(np.int32)), pa.array(values))
    return pa.ListArray.from_arrays(pa.array(np.r_[0, np.cumsum(heights)].astype(np.int32)), rows)


def _frames_array(samples: Sequence[TaskSample]) -> pa.ListArray:
    counts = np.array([len(sample.frames) for sample in samples], dtype=np.int32)
    frames = grid_array([np.asarray(frame) for sample in samples for frame in sample.frames])
    return pa.ListArray.from_arrays(pa.array(np.r_[0, np.cumsum(counts)].astype(np.int32)), frames)


def metadata_table(samples: Sequence[TaskSample], extra: Mapping[str, pa.Array] | None = None) -> pa.Table:
    """The samples' metadata as an Arrow table in `METADATA_SCHEMA`, then `extra` columns (files, images)."""
    columns = {
        "split": pa.array([sample.split for sample in samples], pa.string()),
        "index": pa.array([int(sample.index) for sample in samples], pa.int64()),
        "seed": pa.array([None if sample.seed is None else int(sample.seed) for sample in samples], pa.int64()),
        "render_seed": pa.array([render_seed(s.seed, s.split, int(s.index)) for s in samples], pa.int64()),
        "task_key": pa.array([sample.task_key for sample in samples], pa.string()),
        "sequence": pa.array([list(sample.sequence) for sample in samples], pa.list_(pa.string())),
        "task_code": pa.array([[int(t) for t in sample.task_code] for sample in samples], pa.list_(pa.int64())),
        "input_grid": grid_array([np.asarray(sample.input) for sample in samples]),
        "target_grid": grid_array([np.asarray(sample.output) for sample in samples]),
        "frames": _frames_array(samples),
        "objects": pa.array([_objects_json(sample) for sample in samples], pa.string()),
    }
    table = pa.Table.from_arrays(list(columns.values()), schema=METADATA_SCHEMA)
    for name, column in (extra or {}).items():
        table = table.append_column(name, column)
    return table


__all__ = ["METADATA_SCHEMA", "grid_array", "metadata_table", "record_json", "sample_record"]
