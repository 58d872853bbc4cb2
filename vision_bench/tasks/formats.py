"""Grid tasks on disk: generated Parquet (written atomically), COGITAO Parquet and ARC JSON (read).

Generated Parquet has COGITAO's public columns (`input`, `output` as lists of int lists,
`transformation_suite`, `task_key`) plus this project's (`split`, `index`, `seed`, `task_code`,
`frames`, `objects` as JSON, `height`, `width`), so COGITAO tooling can read it and `read_tasks`
recovers every `TaskSample` field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from render.errors import UserError
from render.grid import validate_grid
from vision_bench.io.atomic import atomic_output
from vision_bench.tasks.config import SPLITS
from vision_bench.tasks.sample import CHUNK, TaskSample
from vision_bench.tasks.task_code import encode_task_code

ROW_GROUP = 4096
PUBLIC_COLUMNS = ("input", "output", "transformation_suite", "task_key")
PROJECT_COLUMNS = ("split", "index", "seed", "task_code", "frames", "objects", "height", "width")

_GRID = pa.list_(pa.list_(pa.int8()))
SCHEMA = pa.schema([
    ("input", _GRID),
    ("output", _GRID),
    ("transformation_suite", pa.list_(pa.string())),
    ("task_key", pa.string()),
    ("split", pa.string()),
    ("index", pa.int64()),
    ("seed", pa.int64()),
    ("task_code", pa.list_(pa.int8())),
    ("frames", pa.list_(_GRID)),
    ("objects", pa.string()),
    ("height", pa.int16()),
    ("width", pa.int16()),
])


class TaskFileError(UserError):
    """A task file (Parquet or ARC JSON) that cannot be read as grid tasks."""


def write_parquet(samples: Iterable[TaskSample], path: str | Path) -> int:
    """Write samples to `path` in row groups of `ROW_GROUP`; returns the row count (see `write_tables`)."""
    return write_tables(map(table_of, _batches(samples, CHUNK)), path)


def write_tables(tables: Iterable[pa.Table], path: str | Path) -> int:
    """Write tables made by `table_of` to `path` as one Parquet file in row groups of `ROW_GROUP` rows;
    returns the row count. The bytes depend only on the rows, not on how they were split into tables.

    The file appears only when complete: rows go to a hidden temporary file next to `path`,
    which is renamed at the end (and removed if anything fails).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    pending: list[pa.Table] = []
    pending_rows = 0
    # pyarrow is given open files, not paths: it cannot encode a file name that is not valid UTF-8
    with atomic_output(path) as temporary, open(temporary, "wb") as handle, \
            pq.ParquetWriter(handle, SCHEMA, compression="zstd") as writer:
        for table in tables:
            pending.append(table)
            pending_rows += table.num_rows
            rows += table.num_rows
            while pending_rows >= ROW_GROUP:
                combined = pa.concat_tables(pending)
                writer.write_table(combined.slice(0, ROW_GROUP).combine_chunks(), row_group_size=ROW_GROUP)
                pending, pending_rows = [combined.slice(ROW_GROUP)], pending_rows - ROW_GROUP
        if pending_rows:
            writer.write_table(pa.concat_tables(pending).combine_chunks(), row_group_size=ROW_GROUP)
    return rows


def _batches(samples: Iterable[TaskSample], size: int) -> Iterator[list[TaskSample]]:
    batch: list[TaskSample] = []
    for sample in samples:
        batch.append(sample)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _grid_lists(grids: list[np.ndarray]) -> pa.Array:
    """Grids as list<list<int8>>, built from flat buffers (no per-cell Python objects)."""
    heights = np.array([grid.shape[0] for grid in grids], dtype=np.int64)
    widths = np.array([grid.shape[1] for grid in grids], dtype=np.int64)
    values = np.concatenate([grid.ravel() for grid in grids]).astype(np.int8)
    row_offsets = np.concatenate([[0], np.cumsum(np.repeat(widths, heights))]).astype(np.int32)
    grid_offsets = np.concatenate([[0], np.cumsum(heights)]).astype(np.int32)
    rows = pa.ListArray.from_arrays(pa.array(row_offsets), pa.array(values, type=pa.int8()))
    return pa.ListArray.from_arrays(pa.array(grid_offsets), rows, type=_GRID)


def table_of(batch: list[TaskSample]) -> pa.Table:
    """Samples as rows of `SCHEMA` (module-level, so generation workers can build tables themselves)."""
    frame_counts = np.array([len(sample.frames) for sample in batch], dtype=np.int64)
    frames = _grid_lists([frame for sample in batch for frame in sample.frames])
    columns = {
        "input": _grid_lists([sample.input for sample in batch]),
        "output": _grid_lists([sample.output for sample in batch]),
        "transformation_suite": pa.array([list(sample.sequence) for sample in batch], type=pa.list_(pa.string())),
        "task_key": pa.array([sample.task_key for sample in batch], type=pa.string()),
        "split": pa.array([sample.split for sample in batch], type=pa.string()),
        "index": pa.array([sample.index for sample in batch], type=pa.int64()),
        "seed": pa.array([sample.seed for sample in batch], type=pa.int64()),
        "task_code": pa.array([list(sample.task_code) for sample in batch], type=pa.list_(pa.int8())),
        "frames": pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(frame_counts)]).astype(np.int32)),
                                           frames, type=pa.list_(_GRID)),
        "objects": pa.array([json.dumps(list(sample.objects), separators=(",", ":")) for sample in batch]),
        "height": pa.array([sample.input.shape[0] for sample in batch], type=pa.int16()),
        "width": pa.array([sample.input.shape[1] for sample in batch], type=pa.int16()),
    }
    return pa.table(columns, schema=SCHEMA)


def read_tasks(path: str | Path) -> list[TaskSample]:
    """Tasks from a generated or COGITAO Parquet file, an ARC JSON file, or a folder of such files
    (a `manifest.json` in the folder, as `vision-bench generate` writes, is not a task file).

    ARC pairs become records with task_key = the file stem, split "train" / "test" and index = the
    pair's position; COGITAO records keep only the public columns (split = the file stem when it
    names a split, else "train"; index = the row).
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".parquet") and not p.name.startswith(".")
                       and p.name != "manifest.json")
        if not files:
            raise TaskFileError(f"{path}: no .json or .parquet task files in this folder; give a task file or "
                                "a folder of them")
        return [sample for file in files for sample in read_tasks(file)]
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if path.suffix == ".json":
        return _read_arc(path)
    if path.suffix == ".parquet":
        return _read_parquet(path)
    raise TaskFileError(f"{path}: unknown task file type; expected .parquet or .json (ARC)")


def _read_arc(path: Path) -> list[TaskSample]:
    try:
        task = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise TaskFileError(f"{path}: not valid JSON ({error}); fix the file or fetch it again") from None
    except RecursionError:
        raise TaskFileError(
            f"{path}: nested too deeply to be an ARC task (grids are lists of rows of integers)"
        ) from None
    if not isinstance(task, dict) or not isinstance(task.get("train"), list) or not isinstance(task.get("test"), list):
        raise TaskFileError(f"{path}: an ARC task needs 'train' and 'test' lists of {{'input', 'output'}} pairs")
    samples = []
    for split in ("train", "test"):
        for index, pair in enumerate(task[split]):
            if not isinstance(pair, dict) or "input" not in pair or "output" not in pair:
                raise TaskFileError(f"{path}: {split}[{index}] must be an object with 'input' and 'output' grids")
            grids = [validate_grid(pair[key], name=f"{path}: {split}[{index}].{key}") for key in ("input", "output")]
            samples.append(TaskSample(grids[0], grids[1], task_key=path.stem, split=split, index=index))
    return samples


def _read_parquet(path: Path) -> list[TaskSample]:
    try:
        with open(path, "rb") as handle:  # an open file: pyarrow cannot encode a non-UTF-8 file name
            table = pq.read_table(handle)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise TaskFileError(f"{path}: not a readable Parquet file ({error}); re-create it (`vision-bench generate` "
                            "writes task files)") from None
    missing = [name for name in PUBLIC_COLUMNS if name not in table.column_names]
    if missing:
        raise TaskFileError(
            f"{path}: missing column(s) {', '.join(missing)}; expected at least {', '.join(PUBLIC_COLUMNS)}"
        )
    try:
        inputs = _grids_of(table.column("input"))
        outputs = _grids_of(table.column("output"))
        suites = [tuple(suite or ()) for suite in table.column("transformation_suite").to_pylist()]
        keys = table.column("task_key").to_pylist()
        if all(name in table.column_names for name in PROJECT_COLUMNS):
            return _generated(table, inputs, outputs, suites, keys)
    except (pa.ArrowException, TypeError, ValueError) as error:
        raise TaskFileError(f"{path}: malformed task columns ({error}); re-create the file with `vision-bench "
                            "generate`, or fix its input / output columns") from None
    split = path.stem if path.stem in SPLITS else "train"
    samples = []
    for row, (grid_in, grid_out, suite, key) in enumerate(zip(inputs, outputs, suites, keys)):
        try:
            code = tuple(encode_task_code(suite))
        except UserError as error:
            raise TaskFileError(f"{path}: row {row}: transformation_suite {list(suite)}: {error}") from None
        samples.append(TaskSample(grid_in, grid_out, suite, task_code=code, task_key=key or "-".join(suite),
                                  split=split, index=row))
    return samples


def _generated(table: pa.Table, inputs: list[np.ndarray], outputs: list[np.ndarray], suites: list[tuple[str, ...]],
               keys: list[str]) -> list[TaskSample]:
    frames_column = table.column("frames").combine_chunks()
    counts = np.diff(frames_column.offsets.to_numpy())
    frames = _grids_of(frames_column.flatten())
    starts = np.concatenate([[0], np.cumsum(counts)])
    columns = {name: table.column(name).to_pylist() for name in ("split", "index", "seed", "task_code", "objects")}
    if not pa.types.is_integer(table.column("index").type):
        raise ValueError(f"the index column must hold integers, found {table.column('index').type}")
    return [
        TaskSample(inputs[row], outputs[row], suites[row], tuple(frames[starts[row] : starts[row + 1]]),
                   tuple(json.loads(columns["objects"][row])), tuple(columns["task_code"][row]), keys[row],
                   columns["seed"][row], columns["split"][row], columns["index"][row])
        for row in range(table.num_rows)
    ]


def _grids_of(column: pa.ChunkedArray | pa.Array) -> list[np.ndarray]:
    """A list<list<int>> column as validated uint8 grids (rows of one grid must have equal lengths)."""
    grids_array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not (pa.types.is_list(grids_array.type) and pa.types.is_list(grids_array.type.value_type)
            and pa.types.is_integer(grids_array.type.value_type.value_type)):
        raise ValueError(f"grids must be lists of rows of integers, found a column of {grids_array.type}")
    if grids_array.null_count:
        raise ValueError("a grid is missing (null)")
    grid_offsets = grids_array.offsets.to_numpy()
    rows_array = grids_array.flatten()
    row_offsets = rows_array.offsets.to_numpy()
    values = rows_array.flatten().to_numpy(zero_copy_only=False)
    grid_offsets = grid_offsets - grid_offsets[0]
    row_offsets = row_offsets - row_offsets[0]
    grids = []
    for number in range(len(grid_offsets) - 1):
        first_row, end_row = grid_offsets[number], grid_offsets[number + 1]
        lengths = np.diff(row_offsets[first_row : end_row + 1])
        if len(lengths) == 0 or (lengths != lengths[0]).any():
            raise ValueError(f"grid {number} is empty or not rectangular")
        cells = values[row_offsets[first_row] : row_offsets[end_row]].reshape(len(lengths), lengths[0])
        grids.append(validate_grid(cells, name=f"grid {number}"))
    return grids
