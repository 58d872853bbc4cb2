"""World-model rollouts in a bench: compute them per cell, draw their sample sheets and per-step plots.

An experiment whose task family lists the rollout report (`worldmodel/...`, the `world_model` family)
trains on one-step transitions; each of its cells is also rolled out (`vision_bench.evaluation.rollout`)
before it is evaluated, into CELL/rollout/: `rollout.json` (per split, predictor, mode and step: GA, MSE, LPIPS)
and `sheet_<split>.png` (true frames above closed-loop predictions, step by step). A bench's report
adds OUT/rollout.md: per-step tables and one plot per setting, split and metric
(OUT/plots/rollout_*.png), GA in percent, MSE and LPIPS on a log axis, the rollout step on the x
axis, closed loop solid and one step dashed, scales and legend (below the axes) as every bench plot
(`vision_bench.bench.plots`). `vision-bench evaluate RUN --rollout` rolls one run out into
OUT/rollout/ (OUT: its --out, by default RUN/evaluation), never outside the evaluation's folder.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from PIL import Image, ImageDraw

from render.spec import RenderSpec
from vision_bench.bench.figures import figures_missing, value_scale
from vision_bench.errors import ConfigError
from vision_bench.evaluation.rollout import (
    METRICS,
    MODES,
    ROLLOUT_DIR,
    ROLLOUT_FILE,
    RolloutFrames,
    SplitRollout,
    read_rollout,
    rollout_baselines,
    rollout_metrics,
    rollout_predictors,
    write_rollout,
)
from vision_bench.io.atomic import atomic_output, atomic_write_text, output_folder
from vision_bench.tasks.families import ROLLOUTS, study_family

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REPORT_FILE = "rollout.md"
LABELS = {"grid_accuracy": "GA", "mse": "MSE", "lpips": "LPIPS"}
MODE_STYLES = {"closed_loop": "-", "one_step": "--"}
MODE_LABELS = {"closed_loop": "closed loop", "one_step": "one step"}
GAP = 4
LABEL_HEIGHT = 14
MIN_TILE = 96
"""Tiles smaller than this are enlarged by a whole factor (nearest neighbour), so cells stay readable."""
SHEET_BACKGROUND = "#d9d9d9"


def is_rollout_experiment(experiment: str) -> bool:
    """Experiments that are rolled out: those whose task family has the rollout report (the world-model studies)."""
    return ROLLOUTS in study_family(experiment).reports


def roll_out(predictors: Mapping[str, torch.nn.Module], task_config: Any, spec: RenderSpec, out_dir: Path, *,
             splits: Sequence[str], device: torch.device | str, batch_size: int, sheet_samples: int,
             feedback: str = "image", extra: Mapping[str, Any] | None = None) -> Path:
    """Roll `predictors` out on `splits` of `task_config`; write OUT_DIR/rollout/rollout.json and one sheet per
    split beside it (the rollout folder is made, never followed as a link, once the rollout is computed)."""
    status: dict[str, str] = {}
    results = {split: rollout_predictors(predictors, task_config, split, spec, device=device, batch_size=batch_size,
                                         feedback=feedback, sheet_samples=sheet_samples, status=status)
               for split in splits}
    out_dir = output_folder(out_dir, ROLLOUT_DIR)
    for split, by_name in results.items():
        write_rollout_sheet(by_name, out_dir / f"sheet_{split}.png")
    return write_rollout(out_dir, rollout_metrics(results, feedback=feedback, status=status, extra=extra))


def rollout_study(config: Any, run_folder: Path) -> str:
    """The world-model study a run (its `TrainConfig`) was trained on; a `ConfigError` when it has none."""
    dataset = config.dataset
    if dataset.study is None:
        raise ConfigError(f"{run_folder} was trained on {dataset.path or 'an inline task'}, not a study; rollouts "
                          "regenerate whole sequences from a study id (dataset.study: worldmodel/...)")
    if not is_rollout_experiment(dataset.study):
        raise ConfigError(f"{run_folder} was trained on {dataset.study}, not a world-model study; rollouts need "
                          "one-step training (dataset.study: worldmodel/...)")
    return str(dataset.study)


def check_rollout_run(run_folder: Path, checkpoint: str = "best") -> None:
    """Refuse a run that cannot be rolled out, from its checkpoint's config alone (no model is built), so that
    `evaluate --rollout` fails before it evaluates anything."""
    from vision_bench.evaluation.run import checkpoint_path
    from vision_bench.train.checkpoint import config_of, read_checkpoint

    path = checkpoint_path(run_folder, checkpoint)
    rollout_study(config_of(read_checkpoint(path), path), run_folder)


def roll_out_run(run_folder: Path, *, out_dir: Path, checkpoint: str = "best",
                 splits: Sequence[str] = ("test_id", "test_ood"), n_test: int | None = None, device: str = "auto",
                 batch_size: int = 32, sheet_samples: int = 2, feedback: str = "image") -> Path:
    """The trained model of RUN_FOLDER rolled out on its study's sequences (`n_test` per split; by default
    as many as `evaluate` tests, see `default_test_size`), into OUT_DIR/rollout/ (`evaluate --rollout`:
    the evaluation's folder; a bench: the cell's folder)."""
    from vision_bench.data.sources import load_config
    from vision_bench.evaluation.data import default_test_size
    from vision_bench.evaluation.run import checkpoint_path, pick_device
    from vision_bench.train import load_checkpoint
    from vision_bench.train.components import resolve_spec

    target = pick_device(device)
    path = checkpoint_path(run_folder, checkpoint)
    model, config, _ = load_checkpoint(path, device=target)
    study = rollout_study(config, run_folder)
    dataset = config.dataset
    if n_test is None:
        n_test = default_test_size(dataset.n_val)
    task = load_config(study, n_train=dataset.n_train, n_val=dataset.n_val, n_test=n_test)
    return roll_out({config.model.name: model}, task, resolve_spec(config), out_dir, splits=splits,
                    device=target, batch_size=batch_size, sheet_samples=sheet_samples, feedback=feedback,
                    extra={"model": config.model.name, "checkpoint": str(path), "study": study})


def roll_out_baselines(folder: Path, experiment: str, names: Sequence[str], spec: RenderSpec, *,
                       n_train: int | None, n_val: int | None, n_test: int | None, splits: Sequence[str],
                       device: str, batch_size: int, sheet_samples: int) -> Path | None:
    """The rollout baselines among `names` on `experiment`, into FOLDER/rollout/ (None when there are none)."""
    from vision_bench.data.sources import load_config
    from vision_bench.evaluation.run import pick_device

    predictors = rollout_baselines(names, spec)
    if not predictors:
        return None
    task = load_config(experiment, n_train=n_train, n_val=n_val, n_test=n_test)
    return roll_out(predictors, task, spec, folder, splits=splits, device=pick_device(device),
                    batch_size=batch_size, sheet_samples=sheet_samples, extra={"study": experiment})


def write_rollout_sheet(results: Mapping[str, SplitRollout], path: Path) -> Path | None:
    """Per sequence: a row of true frames (input, then after each action), then a row of closed-loop
    predictions per predictor, aligned under the frame they predict. None when no frames were kept."""
    rows: list[tuple[str, list[np.ndarray | None]]] = []
    names = list(results)
    if not names or not results[names[0]].frames:
        return None
    for position, frames in enumerate(results[names[0]].frames):
        rows.append((f"sequence #{frames.index}, true frames: " + " > ".join(frames.actions), list(frames.truth)))
        for name in names:
            predicted: RolloutFrames = results[name].frames[position]
            rows.append((f"{name}, closed loop", [None, *predicted.predicted]))
    return _save_image(_draw_rows(rows), path)


def _draw_rows(rows: Sequence[tuple[str, Sequence[np.ndarray | None]]]) -> Image.Image:
    """A header of step numbers, then labelled rows of equally sized images; None leaves a blank cell."""
    tile = next(image for _, images in rows for image in images if image is not None)
    factor = max(1, -(-MIN_TILE // max(tile.shape[:2])))
    height, width = tile.shape[0] * factor, tile.shape[1] * factor
    columns = max(len(images) for _, images in rows)
    sheet = Image.new("RGB", (columns * (width + GAP) + GAP,
                              LABEL_HEIGHT + len(rows) * (height + LABEL_HEIGHT + GAP) + GAP), SHEET_BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    for column in range(columns):
        draw.text((GAP + column * (width + GAP), 2), "input (t = 0)" if column == 0 else f"step {column}",
                  fill="black")
    for number, (label, images) in enumerate(rows):
        top = LABEL_HEIGHT + GAP + number * (height + LABEL_HEIGHT + GAP)
        draw.text((GAP, top), label, fill="black")
        for column, image in enumerate(images):
            if image is not None:
                enlarged = Image.fromarray(image).resize((width, height), Image.Resampling.NEAREST)
                sheet.paste(enlarged, (GAP + column * (width + GAP), top + LABEL_HEIGHT))
    return sheet


def _save_image(image: Image.Image, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary:
        image.save(temporary, format="png")
    return path


Curve = dict[int, list[float]]
"""Step -> the per-cell means at that step."""


Curves = dict[tuple[str, str, str], dict[str, dict[str, Curve]]]
"""(setting, split, metric) -> predictor -> mode -> its curve."""


def collect_rollouts(folders: Sequence[tuple[str, str | None, Path]]) -> Curves:
    """Every cell's per-step means, grouped for plotting, from (experiment, model label or None for the
    baselines, cell folder) triples; cells without a rollout are skipped."""
    from vision_bench.bench.config import setting_of

    curves: Curves = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    for experiment, label, folder in folders:
        if not (folder / ROLLOUT_DIR / ROLLOUT_FILE).is_file():
            continue
        document = read_rollout(folder / ROLLOUT_DIR)
        for split, by_name in document["splits"].items():
            for name, modes in by_name.items():
                for mode, steps in modes.items():
                    for metric in METRICS:
                        curve = curves[setting_of(experiment), split, metric][label or name][mode]
                        for row in steps:
                            value = row["metrics"].get(metric, {}).get("mean")
                            if value is not None:
                                curve[int(row["step"])].append(float(value))
    return curves


def plot_rollout(curves: Mapping[str, Mapping[str, Curve]], metric: str, title: str) -> Figure:
    """One metric against the rollout step: a line per predictor and mode (the mean over cells); needs matplotlib."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from vision_bench.bench.plots import apply_scale, integer_ticks, legend_below

    figure = Figure(figsize=(6.4, 3.4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axis = figure.add_subplot()
    values: list[float] = []
    for predictor, modes in curves.items():
        color = None
        for mode in MODES:
            curve = modes.get(mode)
            if not curve:
                continue
            steps = sorted(curve)
            means = [float(np.mean(curve[step])) for step in steps]
            values += means
            (line,) = axis.plot(steps, means, MODE_STYLES[mode], marker="o", color=color,
                                label=f"{predictor}, {MODE_LABELS[mode]}")
            color = line.get_color()
    axis.set_xlabel("rollout step")
    axis.set_ylabel(LABELS[metric])
    axis.set_title(title, fontsize=9)
    apply_scale(axis, value_scale(metric), values)
    integer_ticks(axis)
    axis.grid(alpha=0.3)
    legend_below(figure, [axis], columns=2)
    return figure


def write_rollout_report(out_dir: Path, folders: Sequence[tuple[str, str | None, Path]]) -> Path | None:
    """OUT/rollout.md and OUT/plots/rollout_*.png from the cells' rollouts; None when no cell has one."""
    from vision_bench.data.names import safe_name

    grouped = collect_rollouts(folders)
    if not grouped:
        return None
    lines = ["# World-model rollouts", "",
             "Per rollout step: closed loop (each prediction fed back) and one step (the true frame as input), "
             "the mean over experiments and seeds. GA in percent.", ""]
    missing = figures_missing()
    if missing is not None:
        lines += [missing, ""]
    for (setting, split, metric), by_predictor in sorted(grouped.items()):
        if not any(curve for modes in by_predictor.values() for curve in modes.values()):
            continue  # LPIPS was unavailable
        lines += [f"## {setting}, {split}: {LABELS[metric]}", ""]
        if missing is None:
            name = safe_name(f"rollout_{setting}_{split}_{metric}")
            figure = plot_rollout(by_predictor, metric, f"{setting}, {split}: {LABELS[metric]} per step")
            path = output_folder(out_dir, "plots") / f"{name}.png"
            with atomic_output(path) as temporary:
                figure.savefig(temporary, format="png")
            lines += [f"![{name}](plots/{name}.png)", ""]
        lines += [_table(by_predictor), ""]
    report = out_dir / REPORT_FILE
    atomic_write_text(report, "\n".join(lines))
    return report


def _table(by_predictor: Mapping[str, Mapping[str, Curve]]) -> str:
    steps = sorted({step for modes in by_predictor.values() for curve in modes.values() for step in curve})
    header = "| predictor | mode | " + " | ".join(f"step {step}" for step in steps) + " |"
    rule = "|---|---|" + "---:|" * len(steps)
    rows = []
    for predictor, modes in by_predictor.items():
        for mode in MODES:
            if mode in modes:
                cells = [_number(modes[mode].get(step)) for step in steps]
                rows.append(f"| {predictor} | {MODE_LABELS[mode]} | " + " | ".join(cells) + " |")
    return "\n".join([header, rule, *rows])


def _number(values: Sequence[float] | None) -> str:
    if not values:
        return ""
    mean = float(np.mean(values))
    return "nan" if math.isnan(mean) else f"{mean:.4g}"


__all__ = [
    "check_rollout_run",
    "is_rollout_experiment",
    "plot_rollout",
    "roll_out",
    "roll_out_baselines",
    "roll_out_run",
    "rollout_study",
    "write_rollout_report",
    "write_rollout_sheet",
]
