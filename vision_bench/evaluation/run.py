"""Evaluate a trained run, and the baselines next to it, on the test splits (`vision-bench evaluate`).

Baselines (`copy_input`, `mean_target`, `ground_truth`) go through exactly the same loop as the
model, so every table has its floor and its ceiling: ground_truth renders the true output grid and
must score GA 100 and MSE 0 after render -> decode. (SVIB's Oracle is a trained model, `svib:oracle`.)
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from vision_bench.data.names import safe_name
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.evaluation import outputs
from vision_bench.evaluation.core import SplitEvaluation, evaluate_split
from vision_bench.evaluation.data import MEAN_TARGET_SAMPLES, EvaluationData, run_data
from vision_bench.io.atomic import output_folder, temp_path_for
from vision_bench.io.documents import JSONDict
from vision_bench.models.base import ImageToImageModel
from vision_bench.registry import unknown_name_message

BASELINES = ("copy_input", "mean_target", "ground_truth")
DEFAULT_SPLITS = ("test_id", "test_ood")
OUTPUT_DIR = "evaluation"


@dataclass
class EvaluationResult:
    """What `evaluate_run` / `evaluate_predictors` computed and where it wrote it."""

    out_dir: Path
    results: dict[str, dict[str, SplitEvaluation]]
    metrics: JSONDict
    sheets: list[Path] = field(default_factory=list)

    @property
    def metrics_path(self) -> Path:
        return self.out_dir / outputs.METRICS_FILE

    @property
    def samples_path(self) -> Path:
        return self.out_dir / outputs.SAMPLES_FILE


def pick_device(device: str = "auto") -> torch.device:
    """'auto' = CUDA, then Apple MPS, then CPU; a named device is checked (`train.device.resolve_device`)."""
    from vision_bench.train.device import resolve_device

    return resolve_device(device, setting="--device")


def checkpoint_path(run_dir: Path, checkpoint: str) -> Path:
    """`best` / `last` name RUN_DIR/checkpoints/{best,last}.pt; anything else is a path."""
    if checkpoint in ("best", "last"):
        path = run_dir / "checkpoints" / f"{checkpoint}.pt"
        if checkpoint == "best" and not path.is_file() and (run_dir / "checkpoints" / "last.pt").is_file():
            raise ConfigError(f"{run_dir} has no best.pt (no validation finished); pass --checkpoint last")
        if not path.is_file():
            raise ConfigError(
                f"{path} does not exist; is {run_dir} a training run directory (vision-bench train --out)?"
            )
        return path
    path = Path(checkpoint)
    if not path.is_file():
        raise ConfigError(f"checkpoint {path} does not exist; pass best, last or the path of a .pt file")
    return path


def evaluation_dir(run_dir: Path, out_dir: str | Path | None, *, make: bool = True,
                   data: str | Path | None = None) -> Path:
    """`out_dir`, or when None RUN_DIR/evaluation, and for other `data` than the run's own
    RUN_DIR/evaluation_<data's name>_<8 hex digits of its full source> (so it never replaces the run's own
    evaluation, nor that of another dataset of the same name): made (or with `make=False` only checked) by
    `output_folder`, so it is never a link placed there to send the files elsewhere."""
    if out_dir is not None:
        return output_folder(out_dir, make=make)
    if data is not None:
        source = str(data)
        local = Path(source).expanduser()
        whole = str(local.resolve()) if local.exists() else source
        name = safe_name(Path(source.rstrip("/")).name or "data")[:40]
        digest = hashlib.sha256(whole.encode()).hexdigest()[:8]
        return output_folder(run_dir, f"{OUTPUT_DIR}_{name}_{digest}", make=make)
    return output_folder(run_dir, OUTPUT_DIR, make=make)


def check_baselines(names: Sequence[str]) -> None:
    """An `UnknownNameError` for the first name that is not in `BASELINES` (an old name points to its new one)."""
    from vision_bench.models.registry import check_renamed

    for name in names:
        if name not in BASELINES:
            check_renamed(name)
            raise UnknownNameError(unknown_name_message("baseline", name, BASELINES))


def build_baselines(names: Sequence[str], data: EvaluationData, device: torch.device,
                    batch_size: int) -> tuple[dict[str, ImageToImageModel], list[str]]:
    """The requested baselines, ready to predict; and notes on any that this data cannot support."""
    from vision_bench.data.collate import collate
    from vision_bench.data.device import to_device_batch
    from vision_bench.data.opening import dataset_length
    from vision_bench.models import create_model
    from vision_bench.models.baselines import MeanTargetModel

    size = data.spec.size[0]
    check_baselines(names)
    models: dict[str, ImageToImageModel] = {}
    notes: list[str] = []
    for name in names:
        if name == "mean_target" and data.train is None:
            notes.append("mean_target skipped: the data has no training split to average")
            continue
        if name == "ground_truth" and not data.has_grids:
            notes.append("ground_truth skipped: the data has no grids and sequences to apply")
            continue
        options: dict[str, Any] = {"image_size": size}
        if name == "ground_truth":
            options["render_spec"] = data.spec
            if data.connectivity is not None:
                options["connectivity"] = data.connectivity
            options["episode_setup"] = data.episode_setup
            options["true_targets"] = data.true_targets
        model = create_model(name, **options).to(device)
        if isinstance(model, MeanTargetModel) and data.train is not None:  # (no training split: skipped above)
            count = min(dataset_length(data.train), MEAN_TARGET_SAMPLES)
            loader = torch.utils.data.DataLoader(
                torch.utils.data.Subset(data.train, range(count)), batch_size=batch_size, collate_fn=collate
            )
            model.fit(to_device_batch(batch, data.spec, device) for batch in loader)
        models[name] = model
    return models, notes


def evaluate_predictors(
    predictors: Mapping[str, ImageToImageModel],
    data: EvaluationData,
    out_dir: str | Path,
    *,
    main: str | None = None,
    device: torch.device | None = None,
    batch_size: int = 64,
    lpips: torch.nn.Module | str | None = None,
    sheet_samples: int = 4,
    extra: JSONDict | None = None,
    progress: bool = False,
    save_predictions: bool = False,
) -> EvaluationResult:
    """Evaluate each predictor on each split of `data`; write the files of `outputs` into `out_dir`.

    `main` names the run's own model (reported at the top level of metrics.json); the others are
    reported as baselines. `save_predictions` also writes every predicted image as
    OUT/predictions/PREDICTOR/SPLIT/<index>_pred.png, which `vision-bench score` pairs with an
    export split's `<index>_target.png`.
    """
    out_dir = output_folder(out_dir)
    outputs.check_folders(out_dir)
    stage = temp_path_for(out_dir / "evaluation")  # every file is written here, then moved into place
    stage.mkdir()
    try:
        result = _evaluate_into(predictors, data, stage, main=main, device=device or pick_device(),
                                batch_size=batch_size, lpips=lpips, sheet_samples=sheet_samples, extra=extra,
                                progress=progress, save_predictions=save_predictions)
        outputs.publish(stage, out_dir)
    finally:
        shutil.rmtree(stage, ignore_errors=True)  # after a failure the earlier outputs are left as they were
    sheets = [out_dir / path.relative_to(stage) for path in result.sheets]
    return EvaluationResult(out_dir, result.results, result.metrics, sheets)


def _evaluate_into(
    predictors: Mapping[str, ImageToImageModel],
    data: EvaluationData,
    out_dir: Path,
    *,
    main: str | None,
    device: torch.device,
    batch_size: int,
    lpips: torch.nn.Module | str | None,
    sheet_samples: int,
    extra: JSONDict | None,
    progress: bool,
    save_predictions: bool,
) -> EvaluationResult:
    started = time.perf_counter()
    results: dict[str, dict[str, SplitEvaluation]] = {name: {} for name in predictors}
    for split, dataset in data.splits.items():
        saver = outputs.prediction_writer(out_dir, split) if save_predictions else None
        evaluations = evaluate_split(
            predictors, dataset, split=split, spec=data.spec, device=device, batch_size=batch_size, lpips=lpips,
            id_sequences=data.id_sequences, sheet_samples=sheet_samples, progress=progress, save_predictions=saver,
            canvas=data.canvas, episode_setup=data.episode_setup, connectivity=data.connectivity,
            exclude=frozenset(data.unavailable),
        )
        for name, evaluation in evaluations.items():
            results[name][split] = evaluation
    status = outputs.run_status(data.unavailable, results)
    describe = {name: model.describe() for name, model in predictors.items()}
    metrics: JSONDict = {
        "format": outputs.FORMAT,
        "version": outputs.VERSION,
        **dict(extra or {}),
        "model": main,
        "data": data.source,
        "render_spec": data.spec.to_dict(),
        "status": status,
        "notes": list(data.notes),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if main is not None:
        metrics.update(outputs.predictor_entry(results[main], describe[main]))
    metrics["baselines"] = {
        name: outputs.predictor_entry(splits, describe[name]) for name, splits in results.items() if name != main
    }
    outputs.write_samples(out_dir / outputs.SAMPLES_FILE, results)
    sheets = outputs.write_sheets(out_dir, results)
    outputs.write_json(out_dir / outputs.METRICS_FILE, metrics)
    return EvaluationResult(out_dir, results, metrics, sheets)


def evaluate_run(
    run_dir: str | Path,
    *,
    checkpoint: str = "best",
    splits: Sequence[str] = DEFAULT_SPLITS,
    data: str | Path | None = None,
    n_test: int | None = None,
    baselines: Sequence[str] = BASELINES,
    out_dir: str | Path | None = None,
    device: str = "auto",
    batch_size: int = 64,
    lpips: torch.nn.Module | str | None = None,
    sheet_samples: int = 4,
    progress: bool = False,
    save_predictions: bool = False,
    trust_stored_data: bool = False,
) -> EvaluationResult:
    """Evaluate RUN_DIR's checkpoint (and `baselines`) on `splits`; results go to `out_dir`, by default
    RUN_DIR/evaluation, or RUN_DIR/evaluation_<name> for another dataset `data` (`evaluation_dir`).

    Without `data`, the run's own source is read, as its checkpoint names it: a command, URL or Hub id
    there is refused unless `trust_stored_data` (whoever wrote the run chose it, see `check_stored_source`).
    """
    from vision_bench.data.opening import check_stored_source
    from vision_bench.train import load_checkpoint
    from vision_bench.train.components import resolve_spec

    check_baselines(baselines)
    run_dir = Path(run_dir)
    path = checkpoint_path(run_dir, checkpoint)
    outputs.check_folders(evaluation_dir(run_dir, out_dir, make=False, data=data))  # a link is refused before work
    target = pick_device(device)
    model, config, state = load_checkpoint(path, device=target)
    if data is None:
        check_stored_source(config.dataset.source, f"{path} (dataset.path)", splits=config.dataset.split_names,
                            trusted=trust_stored_data)
    spec = resolve_spec(config)
    evaluation_data = run_data(config, spec, tuple(splits), data=data, n_test=n_test)
    predictors: dict[str, ImageToImageModel] = {config.model.name: model}
    others = [name for name in baselines if name != config.model.name]
    extra_models, notes = build_baselines(others, evaluation_data, target, batch_size)
    predictors.update(extra_models)
    evaluation_data.notes.extend(notes)
    extra = {"run_dir": str(run_dir), "checkpoint": str(path), "step": int(state.get("step", 0))}
    return evaluate_predictors(
        predictors, evaluation_data, evaluation_dir(run_dir, out_dir, data=data),
        main=config.model.name, device=target, batch_size=batch_size, lpips=lpips,
        sheet_samples=sheet_samples, extra=extra, progress=progress, save_predictions=save_predictions,
    )
