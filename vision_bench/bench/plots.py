"""Matplotlib figures for bench reports and the metric-comparison study (Agg canvas, no pyplot).

Every function takes plain numbers (already aggregated), draws one figure and saves it as PNG;
none of them reads run folders, so each can be tested on a hand-made input. The drawing rules
every figure follows, so a reader can trust what they see:

- the legend sits below the panels, outside every axes, so it never covers data;
- a metric's values are drawn on its `Scale` (`value_scale`): accuracies in %, errors whose
  generalization gap is a log ratio (MSE, LPIPS, ...) on a log axis (symmetric-log when a value
  is 0, as the ground-truth baseline's is);
- step and epoch axes carry integer ticks only;
- an undefined value is drawn visibly (hatched grey, "n/a"), never left blank.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, PercentFormatter, SymmetricalLogLocator

from vision_bench.bench.figures import Point, Scale
from vision_bench.io.atomic import atomic_output

PERCENT_LIMITS = (-3.0, 103.0)
"""The y range of a percent axis: 0 % to 100 %, with room for markers drawn on either end."""

UNDEFINED_COLOR = "#dddddd"
UNDEFINED_HATCH = "///"


def save_figure(figure: Figure, path: Path) -> Path:
    """Save as PNG through a temporary file so a crash never leaves a truncated image."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary:
        figure.savefig(temporary, format="png")
    return path


def _figure(width: float, height: float) -> Figure:
    """A figure whose constrained layout keeps titles, tick labels and an outside legend from overlapping."""
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


NARROW_LOG_RANGE = 100.0
"""Log axes whose positive values span less than this ratio (two decades) get ticks at 1, 2 and 5 x 10^k."""
LABELLED_STEPS = (1.0, 2.0, 5.0)


def apply_scale(axis: Axes, scale: Scale, values: Sequence[float]) -> None:
    """Set `axis`'s y axis to `scale`. A log axis cannot show 0 (the ground-truth baseline's MSE), so
    when the values include 0 or less it becomes symmetric-log: logarithmic above the smallest
    positive value, linear below it, so no value silently disappears."""
    if scale == "percent":
        axis.yaxis.set_major_formatter(PercentFormatter(xmax=100))
        axis.set_ylim(*PERCENT_LIMITS)
    elif scale == "log":
        finite = [v for v in values if v is not None and math.isfinite(v)]
        positive = [v for v in finite if v > 0]
        if not positive:
            return
        narrow = max(positive) / min(positive) < NARROW_LOG_RANGE
        if min(finite) > 0:
            axis.set_yscale("log")
            if narrow:
                axis.yaxis.set_major_locator(LogLocator(base=10, subs=LABELLED_STEPS))
        else:
            axis.set_yscale("symlog", linthresh=min(positive))
            if narrow:
                axis.yaxis.set_major_locator(SymmetricalLogLocator(base=10, linthresh=min(positive),
                                                                   subs=LABELLED_STEPS))
            if min(finite) == 0:
                axis.set_ylim(bottom=0.0)
        if narrow:  # within two decades a label per decade leaves one or two numbers to read
            axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.2g}"))


def integer_ticks(axis: Axes) -> None:
    """Whole-number ticks on the x axis (steps, epochs): no 2.5 steps. Call after drawing; a range
    narrower than two steps (a single logged point) is widened so that it holds whole numbers."""
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    low, high = axis.get_xlim()
    if high - low < 2:
        middle = (low + high) / 2
        axis.set_xlim(middle - 1, middle + 1)


def legend_below(figure: Figure, axes: Sequence[Axes], columns: int = 3) -> None:
    """One legend for the whole figure, below every panel, so it never covers data."""
    handles: dict[str, Artist] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if handles:
        figure.legend(list(handles.values()), list(handles), loc="outside lower center", fontsize=7,
                      ncols=max(1, min(columns, len(handles))), frameon=False)


def _error(point: Point) -> float:
    return 0.0 if math.isnan(point.sem) else point.sem


def plot_metric_by_setting(
    values: Mapping[str, Mapping[str, Mapping[str, Point]]],
    *,
    metric: str,
    settings: Sequence[str],
    path: Path,
    scale: Scale = "linear",
) -> Path:
    """Grouped bars: one panel per split (ID, OOD) on a shared `scale`, settings on x, one bar per model
    (in the order met), with SEM error bars.

    `values[split][model][setting]` is a `Point`; missing entries leave a gap.
    """
    splits = list(values)
    models = list(dict.fromkeys(model for split in splits for model in values[split]))
    figure = _figure(max(4.0, 1.2 * len(settings) * len(splits) + 2), 3.4 + 0.2 * math.ceil(len(models) / 3))
    axes = figure.subplots(1, len(splits), squeeze=False, sharey=True)[0]
    drawn: list[float] = []
    width = 0.8 / max(1, len(models))
    x = np.arange(len(settings))
    for axis, split in zip(axes, splits):
        for m, model in enumerate(models):
            points = [values[split].get(model, {}).get(s) for s in settings]
            heights = [p.mean if p is not None else np.nan for p in points]
            errors = [_error(p) if p is not None else 0.0 for p in points]
            drawn += heights
            axis.bar(x + (m - (len(models) - 1) / 2) * width, heights, width, label=model,
                     yerr=errors if any(errors) else None, capsize=2)
        axis.set_xticks(x, list(settings), fontsize=8, rotation=30 if len(settings) > 4 else 0)
        axis.set_title(f"{metric} ({split})", fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    apply_scale(axes[0], scale, drawn)  # the panels share y
    legend_below(figure, list(axes))
    return save_figure(figure, path)


def plot_metric_vs_alpha(
    curves: Mapping[str, Mapping[str, Mapping[float, Point]]],
    *,
    metric: str,
    path: Path,
    scale: Scale = "linear",
) -> Path:
    """Metric against the alpha rating (SVIB's Figure 4): `curves[model][split][alpha]`, on `scale`.

    OOD is drawn solid and ID dashed, one color per model.
    """
    lines = sum(len(splits) for splits in curves.values())
    figure = _figure(5.0, 3.6 + 0.2 * math.ceil(lines / 2))
    axis = figure.subplots()
    drawn: list[float] = []
    for m, (model, splits) in enumerate(sorted(curves.items())):
        color = f"C{m % 10}"
        for split, points in splits.items():
            alphas = sorted(points)
            drawn += [points[a].mean for a in alphas]
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
    apply_scale(axis, scale, drawn)
    legend_below(figure, [axis], columns=2)
    return save_figure(figure, path)


def plot_training_curves(
    curves: Mapping[str, Mapping[str, tuple[Sequence[float], Sequence[float]]]],
    *,
    path: Path,
    scales: Mapping[str, Scale] | None = None,
) -> Path:
    """One panel per logged quantity (e.g. train loss, val MSE); one line per run: `curves[quantity][run] = (x, y)`,
    x in optimizer steps (integer ticks). `scales[quantity]` sets a panel's y axis (default linear)."""
    quantities = sorted(curves)
    runs = {run for quantity in quantities for run in curves[quantity]}
    columns = min(3, max(1, len(quantities)))
    rows = max(1, math.ceil(len(quantities) / columns))
    figure = _figure(4.0 * columns, 3.0 * rows + 0.2 * math.ceil(len(runs) / 3))
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for axis, quantity in zip(axes, quantities):
        for run, (x, y) in sorted(curves[quantity].items()):
            axis.plot(x, y, marker="." if len(x) < 30 else None, label=run)
        axis.set_title(quantity, fontsize=9)
        axis.set_xlabel("step", fontsize=8)
        integer_ticks(axis)
        axis.grid(alpha=0.3)
        values = [v for _, series in curves[quantity].values() for v in series]
        apply_scale(axis, (scales or {}).get(quantity, "linear"), values)
    for axis in axes[len(quantities):]:
        axis.set_visible(False)
    legend_below(figure, list(axes[: len(quantities)]))
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
    return save_figure(figure, path)


def plot_correlations(
    values: Mapping[str, Mapping[str, float]],
    *,
    path: Path,
    title: str,
) -> Path:
    """Horizontal bars of `values[group][metric]` in [-1, 1] (e.g. group = 'test_ood vs GA'), one panel per group.

    An undefined value (NaN) is a hatched grey bar across the whole row labelled "n/a", so it reads
    as "not defined" rather than as 0 or as a missing row."""
    groups = list(values)
    figure = _figure(4.0 * max(1, len(groups)), 0.35 * max((len(v) for v in values.values()), default=1) + 1.5)
    axes = figure.subplots(1, max(1, len(groups)), squeeze=False)[0]
    for axis, group in zip(axes, groups):
        metrics = list(values[group])
        scores = [values[group][m] for m in metrics]
        for row, score in enumerate(scores):
            if math.isnan(score):
                axis.barh(row, 2.0, left=-1.0, color=UNDEFINED_COLOR, hatch=UNDEFINED_HATCH, edgecolor="#999999",
                          linewidth=0.0)
                axis.text(0.0, row, "n/a", ha="center", va="center", fontsize=8, color="#444444",
                          bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
            else:
                axis.barh(row, score, color="C0" if score >= 0 else "C3")
        axis.set_yticks(range(len(metrics)), metrics, fontsize=8)
        axis.set_xlim(-1, 1)
        axis.axvline(0, color="black", linewidth=0.5)
        axis.set_title(group, fontsize=9)
        axis.grid(axis="x", alpha=0.3)
    figure.suptitle(title, fontsize=9)
    return save_figure(figure, path)
