"""Matplotlib figures for bench reports and the metric-comparison study (Agg canvas, no pyplot).

Every function takes plain numbers (already aggregated), draws one figure and saves it as PNG;
none of them reads run folders, so each can be tested on a hand-made input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from vision_bench.data.atomic import atomic_output


@dataclass(frozen=True)
class Point:
    """A mean with its standard error (NaN when there is a single value)."""

    mean: float
    sem: float = float("nan")


def save_figure(figure: Figure, path: Path) -> Path:
    """Save as PNG through a temporary file so a crash never leaves a truncated image."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary:
        figure.savefig(temporary, format="png")
    return path


def _figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _error(point: Point) -> float:
    return 0.0 if math.isnan(point.sem) else point.sem


def plot_metric_by_setting(
    values: Mapping[str, Mapping[str, Mapping[str, Point]]],
    *,
    metric: str,
    settings: Sequence[str],
    path: Path,
) -> Path:
    """Grouped bars: one panel per split (ID, OOD) on a shared scale, settings on x, one bar per model
    (in the order met), with SEM error bars.

    `values[split][model][setting]` is a `Point`; missing entries leave a gap.
    """
    splits = list(values)
    models = list(dict.fromkeys(model for split in splits for model in values[split]))
    figure = _figure(max(4.0, 1.2 * len(settings) * len(splits) + 2), 3.4)
    axes = figure.subplots(1, len(splits), squeeze=False, sharey=True)[0]
    width = 0.8 / max(1, len(models))
    x = np.arange(len(settings))
    for axis, split in zip(axes, splits):
        for m, model in enumerate(models):
            points = [values[split].get(model, {}).get(s) for s in settings]
            heights = [p.mean if p is not None else np.nan for p in points]
            errors = [_error(p) if p is not None else 0.0 for p in points]
            axis.bar(x + (m - (len(models) - 1) / 2) * width, heights, width, label=model,
                     yerr=errors if any(errors) else None, capsize=2)
        axis.set_xticks(x, list(settings), fontsize=8, rotation=30 if len(settings) > 4 else 0)
        axis.set_title(f"{metric} ({split})", fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    axes[-1].legend(fontsize=7, loc="best")
    figure.tight_layout()
    return save_figure(figure, path)


def plot_metric_vs_alpha(
    curves: Mapping[str, Mapping[str, Mapping[float, Point]]],
    *,
    metric: str,
    path: Path,
) -> Path:
    """Metric against the alpha rating (SVIB's Figure 4): `curves[model][split][alpha]`.

    OOD is drawn solid and ID dashed, one color per model.
    """
    figure = _figure(5.0, 3.6)
    axis = figure.subplots()
    for m, (model, splits) in enumerate(sorted(curves.items())):
        color = f"C{m % 10}"
        for split, points in splits.items():
            alphas = sorted(points)
            axis.errorbar(
                alphas,
                [points[a].mean for a in alphas],
                yerr=[_error(points[a]) for a in alphas],
                color=color,
                linestyle="--" if "id" in split.split("_") else "-",
                marker="o",
                capsize=2,
                label=f"{model} ({split})",
            )
    axis.set_xlabel("alpha (share of non-core combinations seen in training)")
    axis.set_ylabel(metric)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    return save_figure(figure, path)


def plot_training_curves(
    curves: Mapping[str, Mapping[str, tuple[Sequence[float], Sequence[float]]]],
    *,
    path: Path,
) -> Path:
    """One panel per logged quantity (e.g. train loss, val MSE); one line per run: `curves[quantity][run] = (x, y)`."""
    quantities = sorted(curves)
    columns = min(3, max(1, len(quantities)))
    rows = max(1, math.ceil(len(quantities) / columns))
    figure = _figure(4.0 * columns, 3.0 * rows)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for axis, quantity in zip(axes, quantities):
        for run, (x, y) in sorted(curves[quantity].items()):
            axis.plot(x, y, marker="." if len(x) < 30 else None, label=run)
        axis.set_title(quantity, fontsize=9)
        axis.set_xlabel("step", fontsize=8)
        axis.grid(alpha=0.3)
        if "loss" in quantity or "mse" in quantity:
            positive = [v for series in curves[quantity].values() for v in series[1] if v is not None]
            if positive and min(positive) > 0:
                axis.set_yscale("log")
    for axis in axes[len(quantities):]:
        axis.set_visible(False)
    if quantities:
        axes[0].legend(fontsize=6)
    figure.tight_layout()
    return save_figure(figure, path)


def plot_sensitivity_heatmap(
    matrix: np.ndarray,
    *,
    rows: Sequence[str],
    columns: Sequence[str],
    path: Path,
    title: str,
) -> Path:
    """A rows x columns heatmap of values in [0, 1] (NaN drawn grey), each cell labelled."""
    figure = _figure(1.0 * len(columns) + 2.5, 0.45 * len(rows) + 1.6)
    axis = figure.subplots()
    masked = np.ma.masked_invalid(np.asarray(matrix, dtype=float))
    image = axis.imshow(masked, cmap=colormaps["viridis"].with_extremes(bad="#cccccc"), vmin=0.0, vmax=1.0,
                        aspect="auto")
    for (r, c), value in np.ndenumerate(np.asarray(matrix, dtype=float)):
        text = "n/a" if math.isnan(value) else f"{value:.2f}"
        axis.text(c, r, text, ha="center", va="center", fontsize=7, color="white" if value < 0.6 else "black")
    axis.set_xticks(range(len(columns)), list(columns), fontsize=8, rotation=30, ha="right")
    axis.set_yticks(range(len(rows)), list(rows), fontsize=8)
    axis.set_title(title, fontsize=9)
    figure.colorbar(image, ax=axis, fraction=0.04)
    figure.tight_layout()
    return save_figure(figure, path)


def plot_correlations(
    values: Mapping[str, Mapping[str, float]],
    *,
    path: Path,
    title: str,
) -> Path:
    """Horizontal bars of `values[group][metric]` (e.g. group = 'test_ood vs GA'), one panel per group."""
    groups = list(values)
    figure = _figure(4.0 * max(1, len(groups)), 0.35 * max((len(v) for v in values.values()), default=1) + 1.5)
    axes = figure.subplots(1, max(1, len(groups)), squeeze=False)[0]
    for axis, group in zip(axes, groups):
        metrics = list(values[group])
        scores = [values[group][m] for m in metrics]
        axis.barh(range(len(metrics)), [0.0 if math.isnan(s) else s for s in scores],
                  color=["#bbbbbb" if math.isnan(s) else ("C0" if s >= 0 else "C3") for s in scores])
        axis.set_yticks(range(len(metrics)), metrics, fontsize=8)
        axis.set_xlim(-1, 1)
        axis.axvline(0, color="black", linewidth=0.5)
        axis.set_title(group, fontsize=9)
        axis.grid(axis="x", alpha=0.3)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    return save_figure(figure, path)
