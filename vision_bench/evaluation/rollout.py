"""World-model evaluation: one-step predictions and closed-loop rollouts, scored step by step.

A world model predicts frame t+1 from frame t and the action taken at t (the transformation, given
as a one-token task code). For every sequence sample of a split:

- **one step** (teacher forcing): at step k the model sees the true frame k-1 and predicts frame k;
- **closed loop**: the model sees the true first frame only; from then on each prediction is fed
  back as the next input. `feedback="image"` (the default, faithful to an image world model) feeds
  the predicted image back as it is; `feedback="grid"` decodes it to a grid and feeds back that
  grid's clean rendering, which removes pixel noise but not a wrong cell.

A model that predicts grids itself (`predict_grids`, the `cogitao:` family) is scored and fed back
on its own grids, as the evaluation scores it: a cell it predicts as no colour counts wrong, and the
grid fed back draws it as background (`as_drawn`), as its image does; read as grids (`input: grid`), both
feedbacks give it the same input.

Every step is scored against the true frame k: grid accuracy (the model's own grid, or the
prediction decoded at the true grid's shape), MSE and, where its weights are present, LPIPS.
Sequences shorter than k do not count at step k, and every step records how many sequences it holds,
so error accumulation reads off the per-step curve. Images of one sequence share the render seed of
its sample, as the one-step training items (`worldmodel/...` studies) do.

Baselines (`rollout_baselines`): `copy_input` (the input image: in the loop it never moves past the
first frame) and `ground_truth`, here the true next frame rendered (`NextFrameOracle`), perfect at
every step. It is not the evaluation's `ground_truth`, which applies the action to the input grid:
objects may touch after a step, and a grid alone then no longer tells them apart, so re-extracting
them from an intermediate frame can give another next frame than the generator's (28 of 1,200
test_id transitions of `worldmodel/depth4/1`, 90 of 1,200 on its 3-4-object test_ood). The next
frame is a function of the objects, not always of the frame's pixels.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from render.raster import render_batch
from render.spec import RenderSpec
from vision_bench.data.batch import Batch
from vision_bench.data.collate import pad_grids
from vision_bench.data.images import batch_tensor
from vision_bench.data.sources import render_seed
from vision_bench.errors import ConfigError
from vision_bench.io.atomic import atomic_write_text, output_folder
from vision_bench.io.documents import JSONDict
from vision_bench.metrics import MeanSem, decode_predictions, mean_sem
from vision_bench.metrics.grids import grid_accuracy
from vision_bench.metrics.inputs import as_drawn, lay_on_targets
from vision_bench.metrics.perceptual import LpipsScorer, resolve_lpips, size_problem
from vision_bench.metrics.pixel import mse
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.task_code import encode_task_code

FEEDBACK = ("image", "grid")
MODES = ("closed_loop", "one_step")
METRICS = ("grid_accuracy", "mse", "lpips")
PERCENT = {"grid_accuracy"}
ROLLOUT_BASELINES = ("copy_input", "ground_truth")
ROLLOUT_DIR = "rollout"
ROLLOUT_FILE = "rollout.json"
FORMAT = "vision-bench-rollout"


@dataclass
class RolloutFrames:
    """One sequence for a sample sheet: its actions, true frames and closed-loop predictions (uint8 (H, W, 3))."""

    index: int
    actions: tuple[str, ...]
    truth: list[np.ndarray]
    predicted: list[np.ndarray] = field(default_factory=list)


@dataclass
class SplitRollout:
    """One predictor on one split: per mode, per step (1-based), per metric, the per-sequence values."""

    values: dict[str, dict[int, dict[str, list[float]]]] = field(
        default_factory=lambda: {mode: {} for mode in MODES})
    frames: list[RolloutFrames] = field(default_factory=list)

    def add(self, mode: str, step: int, metric: str, scores: torch.Tensor) -> None:
        column = self.values[mode].setdefault(step, {}).setdefault(metric, [])
        column.extend(float(value) for value in scores.double().cpu().reshape(-1))

    def aggregates(self, mode: str) -> list[JSONDict]:
        """[{step, n, metrics: {name: {mean, sem}}}] in step order; accuracies in percent."""
        rows = []
        for step in sorted(self.values[mode]):
            columns = self.values[mode][step]
            means: dict[str, MeanSem] = {
                name: mean_sem(np.asarray(values) * (100.0 if name in PERCENT else 1.0))
                for name, values in columns.items()
            }
            count = len(next(iter(columns.values())))
            rows.append({"step": step, "n": count,
                         "metrics": {name: {"mean": value.mean, "sem": value.sem} for name, value in means.items()}})
        return rows


@dataclass
class _Prediction:
    """One predictor's output on a batch: its images (B, 3, H, W) in [0, 1] on the CPU, and its own grids (long,
    padded with -1) for a model that predicts grids, else None."""

    images: torch.Tensor
    grids: torch.Tensor | None


@dataclass
class _State:
    """Where one predictor's closed loop stands: the image and grid it will see next, per sequence."""

    images: torch.Tensor
    grids: list[np.ndarray]


class NextFrameOracle(torch.nn.Module):
    """The perfect world model: the true next frame (`batch['target_grid']`), drawn with the batch's render seeds."""

    name = "ground_truth"
    trainable = False

    def __init__(self, spec: RenderSpec) -> None:
        super().__init__()
        self.spec = spec

    def predict(self, batch: Batch) -> torch.Tensor:
        shapes = batch["grid_shape"].tolist()
        grids = [grid[:height, :width].cpu().numpy().astype(np.uint8)
                 for grid, (height, width) in zip(batch["target_grid"], shapes)]
        return _render(grids, self.spec, batch["render_seed"].tolist())

    def describe(self) -> JSONDict:
        return {"family": "ground_truth", "what": "the true next frame, rendered"}


def rollout_baselines(names: Sequence[str], spec: RenderSpec) -> dict[str, torch.nn.Module]:
    """The requested rollout baselines (`ROLLOUT_BASELINES`; others are left out: they have no rollout meaning)."""
    from vision_bench.models import create_model

    models: dict[str, torch.nn.Module] = {}
    for name in names:
        if name == "copy_input":
            models[name] = create_model("copy_input", image_size=spec.size[0])
        elif name == "ground_truth":
            models[name] = NextFrameOracle(spec)
    return models


def check_feedback(feedback: str) -> str:
    if feedback not in FEEDBACK:
        raise ConfigError(f"rollout feedback must be 'image' (the prediction as it is) or 'grid' (decoded and "
                          f"re-rendered), got {feedback!r}")
    return feedback


def sequence_samples(config: TaskConfig, split: str, count: int | None = None) -> list[TaskSample]:
    """The whole sequence samples of `split` (a world-model study's transitions come from these)."""
    total = config.count(split) if count is None else min(count, config.count(split))
    return [generate_sample(config, split, index) for index in range(total)]


def _render(grids: Sequence[np.ndarray], spec: RenderSpec, seeds: Sequence[int]) -> torch.Tensor:
    return batch_tensor(render_batch(list(grids), spec, list(seeds)))


def _batch(images: torch.Tensor, grids: Sequence[np.ndarray], targets: Sequence[np.ndarray],
           actions: Sequence[str], seeds: Sequence[int], device: torch.device, code_length: int) -> Batch:
    """A model batch: the current images and grids, the action as a one-token task code (padded to the
    study's code length), the true next grids."""
    height = max(grid.shape[0] for grid in grids)
    width = max(grid.shape[1] for grid in grids)
    as_long = [torch.from_numpy(np.asarray(grid, dtype=np.int64)) for grid in grids]
    return {
        "input": images.to(device),
        "input_grid": pad_grids(as_long, height, width).to(device),
        "target_grid": pad_grids([torch.from_numpy(np.asarray(t, dtype=np.int64)) for t in targets],
                                 height, width).to(device),
        "grid_shape": torch.tensor([list(grid.shape) for grid in grids], dtype=torch.long),
        "task_code": torch.tensor([encode_task_code((action,), code_length) for action in actions],
                                  dtype=torch.long).to(device),
        "sequence": [(action,) for action in actions],
        "render_seed": torch.tensor(list(seeds), dtype=torch.long),
    }


class _Scorer:
    """Scores predictions against the true frames: GA after decoding, MSE, LPIPS when it is available."""

    def __init__(self, spec: RenderSpec, lpips: LpipsScorer | None) -> None:
        self.spec = spec
        self.lpips = lpips

    def __call__(self, record: SplitRollout, mode: str, step: int, predicted: _Prediction, truth: torch.Tensor,
                 targets: Sequence[np.ndarray], seeds: Sequence[int]) -> list[np.ndarray]:
        """Record the scores; return the predicted grids as drawn (the model's own, or its images decoded)."""
        shapes = [list(grid.shape) for grid in targets]
        height, width = max(h for h, _ in shapes), max(w for _, w in shapes)
        target_grids = pad_grids([torch.from_numpy(np.asarray(t, dtype=np.int64)) for t in targets], height, width)
        if predicted.grids is None:
            grids = decode_predictions(predicted.images, self.spec, shapes, seeds=list(seeds)).cpu()
        else:
            grids = lay_on_targets(predicted.grids, target_grids)
        record.add(mode, step, "grid_accuracy", grid_accuracy(grids, target_grids))
        record.add(mode, step, "mse", mse(predicted.images, truth))
        if self.lpips is not None:
            device = self.lpips.device
            record.add(mode, step, "lpips", self.lpips(predicted.images.to(device), truth.to(device)))
        return [as_drawn(grid[:h, :w].numpy()) for grid, (h, w) in zip(grids, shapes)]


def _lpips_scorer(lpips: torch.nn.Module | str | None, device: torch.device, spec: RenderSpec,
                  status: dict[str, str]) -> LpipsScorer | None:
    """LPIPS when its weights load and the images are large enough; `status['lpips']` says which."""
    load = resolve_lpips(lpips, device)
    if load.module is None:
        status["lpips"] = load.status
        return None
    problem = size_problem(load.module, *spec.size)
    status["lpips"] = problem or load.status
    return None if problem else load.module


@torch.no_grad()
def rollout_predictors(
    predictors: Mapping[str, torch.nn.Module],
    config: TaskConfig,
    split: str,
    spec: RenderSpec,
    *,
    device: torch.device | str = "cpu",
    batch_size: int = 32,
    feedback: str = "image",
    count: int | None = None,
    lpips: torch.nn.Module | str | None = None,
    use_lpips: bool = True,
    sheet_samples: int = 2,
    status: dict[str, str] | None = None,
) -> dict[str, SplitRollout]:
    """Roll every predictor out over the first `count` sequences of `split` (all by default).

    `lpips` names the LPIPS network (alex by default) or gives a module; `use_lpips=False` leaves it
    out. `status` (when given) receives LPIPS's status; the first `sheet_samples` sequences keep their
    frames for a sample sheet.
    """
    check_feedback(feedback)
    device = torch.device(device)
    status = {} if status is None else status
    status["lpips"] = "off"
    scorer = _Scorer(spec, _lpips_scorer(lpips, device, spec, status) if use_lpips else None)
    for model in predictors.values():
        model.eval()
    records = {name: SplitRollout() for name in predictors}
    samples = sequence_samples(config, split, count)
    for start in range(0, len(samples), batch_size):
        chunk = samples[start:start + batch_size]
        _roll_chunk(predictors, records, chunk, config.seed, spec, scorer, device, feedback,
                    keep=max(0, sheet_samples - start))
    return records


def _roll_chunk(predictors: Mapping[str, torch.nn.Module], records: dict[str, SplitRollout],
                chunk: Sequence[TaskSample], seed: int, spec: RenderSpec, scorer: _Scorer, device: torch.device,
                feedback: str, keep: int) -> None:
    """Both modes for every predictor on one chunk of sequences, step by step."""
    seeds = [render_seed(seed, sample.split, sample.index) for sample in chunk]
    length = len(chunk[0].task_code)
    first = _render([sample.frames[0] for sample in chunk], spec, seeds)
    states = {name: _State(first.clone(), [sample.frames[0] for sample in chunk]) for name in predictors}
    sheets = {name: [RolloutFrames(sample.index, sample.sequence, [_uint8(first[row])])
                     for row, sample in enumerate(chunk[:keep])] for name in predictors}
    for step in range(max(len(sample.sequence) for sample in chunk)):
        rows = [row for row, sample in enumerate(chunk) if len(sample.sequence) > step]
        actions = [chunk[row].sequence[step] for row in rows]
        row_seeds = [seeds[row] for row in rows]
        inputs = [chunk[row].frames[step] for row in rows]
        targets = [chunk[row].frames[step + 1] for row in rows]
        true_in, truth = _render(inputs, spec, row_seeds), _render(targets, spec, row_seeds)
        for name, model in predictors.items():
            state, record = states[name], records[name]
            if step > 0:
                one_step = _predict(model, _batch(true_in, inputs, targets, actions, row_seeds, device, length))
                scorer(record, "one_step", step + 1, one_step, truth, targets, row_seeds)
            current = state.images[rows]
            predicted = _predict(model, _batch(current, [state.grids[row] for row in rows], targets, actions,
                                               row_seeds, device, length))
            decoded = scorer(record, "closed_loop", step + 1, predicted, truth, targets, row_seeds)
            if step == 0:
                scorer(record, "one_step", 1, predicted, truth, targets, row_seeds)
            fed_back = predicted.images if feedback == "image" else _render(decoded, spec, row_seeds)
            state.images[rows] = fed_back
            for position, row in enumerate(rows):
                state.grids[row] = decoded[position]
                if row < len(sheets[name]):
                    sheets[name][row].truth.append(_uint8(truth[position]))
                    sheets[name][row].predicted.append(_uint8(predicted.images[position]))
    for name in predictors:
        records[name].frames.extend(sheets[name])


def _predict(model: torch.nn.Module, batch: Batch) -> _Prediction:
    """`predict_with_grids` where the model has it (every project model), else `predict` (`NextFrameOracle`)."""
    predict_with_grids = getattr(model, "predict_with_grids", None)
    if predict_with_grids is not None:
        images, grids = predict_with_grids(batch)
    else:
        images, grids = model.predict(batch), None  # type: ignore[operator]
    return _Prediction(images.float().cpu().clamp(0.0, 1.0), None if grids is None else grids.cpu())


def _uint8(image: torch.Tensor) -> np.ndarray:
    return (image.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()


def rollout_metrics(results: Mapping[str, Mapping[str, SplitRollout]], *, feedback: str,
                    status: Mapping[str, str], extra: Mapping[str, Any] | None = None) -> JSONDict:
    """The JSON document of a rollout: per split, per predictor, per mode, the per-step aggregates."""
    return {
        "format": FORMAT,
        **dict(extra or {}),
        "feedback": feedback,
        "status": dict(status),
        "splits": {
            split: {name: {mode: record.aggregates(mode) for mode in MODES} for name, record in by_name.items()}
            for split, by_name in results.items()
        },
    }


def write_rollout(out_dir: Path, metrics: JSONDict) -> Path:
    """OUT_DIR/rollout.json (written atomically)."""
    output_folder(out_dir)
    path = out_dir / ROLLOUT_FILE
    atomic_write_text(path, json.dumps(metrics, indent=2, allow_nan=True) + "\n")
    return path


def read_rollout(out_dir: Path) -> JSONDict:
    return dict(json.loads((out_dir / ROLLOUT_FILE).read_text(encoding="utf-8")))


__all__ = [
    "FEEDBACK",
    "ROLLOUT_BASELINES",
    "NextFrameOracle",
    "RolloutFrames",
    "SplitRollout",
    "check_feedback",
    "read_rollout",
    "rollout_baselines",
    "rollout_metrics",
    "rollout_predictors",
    "sequence_samples",
    "write_rollout",
]
