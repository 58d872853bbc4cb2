"""The files an evaluation leaves behind, and how to read them back.

    OUT/metrics.json      per split: sample count (and with grids `n_unchanged`, the samples whose
                          target equals their input), mean and SEM of every metric, the reasons
                          that hold for that split alone (`status`, when there are some), ID/OOD
                          gaps, for the run's model (top level) and each baseline (under
                          "baselines"); the run's `status` (metric -> why it is unavailable)
    OUT/samples.parquet   one row per (predictor, split, sample): every metric (raw per-sample
                          values: accuracies 0..1), the sequence, the object counts, `unchanged`
    OUT/sheets/PREDICTOR/SPLIT_best.png, SPLIT_worst.png
    OUT/predictions/PREDICTOR/SPLIT/<index:08d>_pred.png   with --save-predictions
    OUT/rollout/rollout.json, sheet_SPLIT.png              with --rollout (`vision_bench.bench.rollout_report`)

Every folder here is made by the evaluation (`output_folder`), never followed as a link placed in OUT.

metrics.json is written last, so its presence means the evaluation finished.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from vision_bench.data.names import safe_name
from vision_bench.errors import UserError
from vision_bench.evaluation.core import SPLIT_REASONS, UNCHANGED, SplitEvaluation
from vision_bench.evaluation.sheets import to_uint8_image, write_sheet
from vision_bench.io.atomic import atomic_output, atomic_write_text, output_folder
from vision_bench.io.documents import JSONDict
from vision_bench.metrics import METRICS, generalization_gap

METRICS_FILE = "metrics.json"
SAMPLES_FILE = "samples.parquet"
SHEETS_DIR = "sheets"
PREDICTIONS_DIR = "predictions"
FORMAT = "vision-bench-evaluation"
VERSION = 1
GAP_SPLITS = (("test_id", "test_ood"), ("val_id", "val_ood"))


class EvaluationFileError(UserError):
    """An evaluation output that is missing or was not written by `vision-bench evaluate`."""


def check_folders(out_dir: Path) -> None:
    """Refuse, before an evaluation starts, a sheets/ or predictions/ in `out_dir` that is a link or a file
    (`publish` moves files into them)."""
    for group in (SHEETS_DIR, PREDICTIONS_DIR):
        output_folder(out_dir, group, make=False)


def publish(stage: Path, out_dir: Path) -> None:
    """Move a finished evaluation from `stage` into `out_dir`: per-predictor folders and the samples
    table replace their earlier versions, and metrics.json (which means "finished") comes last."""
    for group in (SHEETS_DIR, PREDICTIONS_DIR):
        if not (stage / group).is_dir():
            continue
        output_folder(out_dir, group)
        for folder in sorted((stage / group).iterdir()):
            target = out_dir / group / folder.name
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            os.rename(folder, target)
    for name in (SAMPLES_FILE, METRICS_FILE):
        if (stage / name).is_file():
            os.replace(stage / name, out_dir / name)


def prediction_writer(out_dir: Path, split: str) -> Callable[[str, Sequence[int], torch.Tensor], None]:
    """A callback that writes each predicted image as PNG under OUT/predictions/PREDICTOR/SPLIT/."""
    from render.codec import encode
    from vision_bench.io.atomic import atomic_write_bytes

    def write(name: str, indices: Sequence[int], images: torch.Tensor) -> None:
        folder = output_folder(out_dir, PREDICTIONS_DIR, safe_name(name), safe_name(split))
        for index, image in zip(indices, images):
            data = encode(to_uint8_image(image.cpu().numpy()), "png")
            atomic_write_bytes(folder / f"{int(index):08d}_pred.png", data)

    return write


def _finite(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def split_summary(evaluation: SplitEvaluation) -> JSONDict:
    """{'n', 'metrics': name -> mean, 'sem': name -> SEM}; with grids 'n_unchanged': the samples whose target
    equals their input (`stubbornness` leaves them out where a training sequence leaves the input unchanged too);
    'status': name -> why the metric is null on this split alone (`SPLIT_REASONS`), when some is. Non-finite
    numbers become null."""
    summary: JSONDict = {"n": evaluation.n}
    if UNCHANGED in evaluation.columns:
        summary["n_unchanged"] = sum(evaluation.columns[UNCHANGED])
    summary["metrics"] = {name: _finite(value.mean) for name, value in evaluation.aggregates.items()}
    summary["sem"] = {name: _finite(value.sem) for name, value in evaluation.aggregates.items()}
    own = {name: reason for name, reason in evaluation.status.items() if reason in SPLIT_REASONS}
    if own:
        summary["status"] = own
    return summary


def run_status(unavailable: Mapping[str, str],
               results: Mapping[str, Mapping[str, SplitEvaluation]]) -> dict[str, str]:
    """The run's metric -> reason: what the data cannot support (`unavailable`) and every split's statuses, but a
    reason of one split's samples (`SPLIT_REASONS`) only where it holds on every split that computes the metric
    (stubbornness unavailable on val_ood, every sample there left out, still has a value on test_ood)."""
    status = dict(unavailable)
    for splits in results.values():
        for evaluation in splits.values():
            status.update({name: reason for name, reason in evaluation.status.items() if reason not in SPLIT_REASONS})
    for splits in results.values():
        computing: dict[str, list[SplitEvaluation]] = {}
        for evaluation in splits.values():
            for name in evaluation.aggregates:
                computing.setdefault(name, []).append(evaluation)
        for name, evaluations in computing.items():
            reasons = {evaluation.status.get(name) for evaluation in evaluations}
            if len(reasons) == 1 and (reason := next(iter(reasons))) in SPLIT_REASONS:
                status.setdefault(name, str(reason))
    return status


def gaps(splits: Mapping[str, SplitEvaluation]) -> dict[str, dict[str, float | None]]:
    """Per ID/OOD split pair present: metric -> generalization gap (see `vision_bench.metrics.gaps`)."""
    result = {}
    for id_split, ood_split in GAP_SPLITS:
        if id_split in splits and ood_split in splits:
            id_means, ood_means = splits[id_split].means(), splits[ood_split].means()
            result[f"{id_split}/{ood_split}"] = {
                name: _finite(generalization_gap(name, id_means[name], ood_means[name]))
                for name in id_means
                if name in ood_means and METRICS[name].gap is not None
                and math.isfinite(id_means[name]) and math.isfinite(ood_means[name])
            }
    return result


def predictor_entry(splits: Mapping[str, SplitEvaluation], description: JSONDict) -> JSONDict:
    return {
        "describe": dict(description),
        "splits": {name: split_summary(evaluation) for name, evaluation in splits.items()},
        "gaps": gaps(splits),
    }


def write_json(path: Path, data: JSONDict) -> Path:
    """Strict JSON (NaN and inf as null) through a temporary file and an atomic rename."""
    atomic_write_text(path, json.dumps(data, indent=2, allow_nan=False, default=str) + "\n")
    return path


def write_samples(path: Path, results: Mapping[str, Mapping[str, SplitEvaluation]]) -> Path:
    """All predictors' per-sample columns in one Parquet table (columns missing somewhere are null)."""
    tables = []
    for predictor, splits in results.items():
        for split, evaluation in splits.items():
            columns = {"predictor": [predictor] * evaluation.n, "split": [split] * evaluation.n}
            columns.update(evaluation.columns)
            tables.append(pa.table(columns))
    if not tables:
        raise EvaluationFileError("nothing was evaluated; give at least one split and one predictor")
    table = pa.concat_tables(tables, promote_options="default")
    with atomic_output(path) as temporary, open(temporary, "wb") as handle:
        pq.write_table(table, handle)  # an open file: pyarrow cannot encode a non-UTF-8 file name
    return path


def write_sheets(out_dir: Path, results: Mapping[str, Mapping[str, SplitEvaluation]]) -> list[Path]:
    """Best- and worst-case sheets of every predictor and split."""
    paths = []
    for predictor, splits in results.items():
        for split, evaluation in splits.items():
            for kind, rows in (("best", evaluation.best), ("worst", evaluation.worst)):
                if rows:
                    path = output_folder(out_dir, SHEETS_DIR, safe_name(predictor)) / f"{split}_{kind}.png"
                    paths.append(write_sheet(rows, path, title=f"{predictor}: {kind} {split} samples"))
    return paths


def read_metrics(path: str | Path) -> JSONDict:
    """An evaluation's metrics.json (`path` is the file or its folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    if not path.is_file():
        raise EvaluationFileError(f"{path}: no evaluation results; run `vision-bench evaluate` first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise EvaluationFileError(f"{path}: not valid JSON ({error}); evaluate again") from None
    if data.get("format") != FORMAT:
        raise EvaluationFileError(f"{path}: not written by `vision-bench evaluate`; run `vision-bench evaluate RUN` "
                                  "to write it")
    return data


def read_samples(path: str | Path) -> pa.Table:
    """An evaluation's samples.parquet (`path` is the file or its folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / SAMPLES_FILE
    if not path.is_file():
        raise EvaluationFileError(f"{path}: no per-sample table; run `vision-bench evaluate` first")
    with open(path, "rb") as handle:
        return pq.read_table(handle)
