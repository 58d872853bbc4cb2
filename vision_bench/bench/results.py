"""OUT/results.csv and OUT/results.json: every evaluated number of a bench as one tidy table.

For people who make their own figures: one row per (model, study, experiment, seed, split,
metric), read from each finished cell's evaluation `metrics.json`. Columns:

    model       the model's report label (its `label`, else its name), or the baseline's name
    study       the setting the experiment belongs to, as the report groups it: `envgen/G1` for
                `envgen/G1/1`, the whole id of an alpha experiment, a task-config file's stem
    experiment  the study id, or a task-config file's stem
    seed        the training seed; empty (JSON: null) for a baseline, which does not train
    split       the evaluated split (`test_id`, `test_ood`, ...)
    metric      a metric name (`vision-bench metrics`)
    value       the split's mean as metrics.json holds it (accuracies in percent); empty (JSON:
                null) when the metric was unavailable
    baseline    true for the baselines (copy_input, mean_target, ground_truth), else false
    gate        `passed` or `failed` for a trained run of a bench with a `gate` (its report leaves failed
                runs out of every table); empty for baselines and for benches without a gate

Rows are sorted by model, study, experiment, seed (baselines first), split and metric, so the same
results give the same bytes however they were computed (one run, or shards and a collect run).
results.json holds the same rows as a list of objects under a small header: the vision-bench
version, the bench's name and `config_sha256`, the SHA-256 of the resolved config (OUT/bench.yaml)
as canonical JSON, so equal configs give equal hashes whatever the order of their keys.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterable
from pathlib import Path

import yaml

from vision_bench import __version__
from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.config import experiment_name
from vision_bench.bench.gate import Gate
from vision_bench.data.manifest import canonical_json
from vision_bench.io.atomic import atomic_write_text
from vision_bench.io.documents import JSONDict

CSV_FILE = "results.csv"
JSON_FILE = "results.json"
COLUMNS = ("model", "study", "experiment", "seed", "split", "metric", "value", "baseline", "gate")
KIND = "vision-bench bench results"
FORMAT_VERSION = 1


def result_rows(cells: Iterable[CellResult], gate: Gate | None = None) -> list[JSONDict]:
    """One row per (predictor, split, metric) of every cell, sorted (see the module docstring)."""
    rows = [
        {
            "model": cell.predictor,
            "study": cell.setting,
            "experiment": experiment_name(cell.experiment),
            "seed": cell.seed,
            "split": split,
            "metric": metric,
            "value": value if math.isfinite(value) else None,
            "baseline": cell.baseline,
            "gate": None if gate is None or cell.baseline else ("passed" if gate.passes(cell) else "failed"),
        }
        for cell in cells
        for split, metrics in cell.splits.items()
        for metric, value in metrics.items()
    ]
    return sorted(rows, key=_order)


def _order(row: JSONDict) -> tuple:
    seed = -1 if row["seed"] is None else row["seed"]
    return row["model"], row["study"], row["experiment"], seed, row["split"], row["metric"]


def results_csv(rows: Iterable[JSONDict]) -> str:
    """The rows as CSV text: values written exactly (shortest round-trip form), missing ones empty."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_csv_cell(row[column]) for column in COLUMNS])
    return buffer.getvalue()


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def config_sha256(bench_file: Path) -> str:
    """SHA-256 of the resolved config in `bench_file` as canonical JSON (sorted keys)."""
    config = yaml.safe_load(bench_file.read_text(encoding="utf-8"))
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()


def results_json(rows: Iterable[JSONDict], *, bench_name: str, bench_file: Path) -> str:
    """The rows as JSON objects under a header naming the version, the bench and its config's hash."""
    document = {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "vision_bench_version": __version__,
        "bench": bench_name,
        "config_sha256": config_sha256(bench_file),
        "columns": list(COLUMNS),
        "rows": list(rows),
    }
    return json.dumps(document, indent=1, allow_nan=False) + "\n"


def write_results(
    cells: Iterable[CellResult], out_dir: Path, *, bench_name: str, bench_file: Path, gate: Gate | None = None
) -> tuple[Path, Path]:
    """Write OUT/results.csv and OUT/results.json (each atomically); return both paths."""
    rows = result_rows(cells, gate)
    csv_path, json_path = out_dir / CSV_FILE, out_dir / JSON_FILE
    atomic_write_text(csv_path, results_csv(rows))
    atomic_write_text(json_path, results_json(rows, bench_name=bench_name, bench_file=bench_file))
    return csv_path, json_path
