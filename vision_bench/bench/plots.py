"""Matplotlib figures for bench reports and the metric-comparison study (Agg canvas, no pyplot).

Every function takes plain numbers (already aggregated), draws one figure and saves it as PNG;
none of them reads run folders, so each can be tested on a hand-made input. The drawing rules
every figure follows, so a reader can trust what they see:

- the legend sits below the panels, outside every axes, so it never covers data;
- a metric's values are drawn on its `Scale` (`value_scale`): accuracies in %, errors whose
  generalization gap is a log ratio (MSE, LPIPS, ...) on a log axis (symmetric-log when a value
  is 0, as the ground-truth baseline's is);
- step and epoch axes carry integer ticks only;
- an undefined value is drawn visibly (hatched grey, "n/a"), never left blank, and a bar of value 0
  is drawn too (an outline on the baseline, labelled "0"), so the two never look alike;
- the legend fits the figure: fewer columns, or a wider figure, rather than labels cut off.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, PercentFormatter, SymmetricalLogLocator
from matplotlib.transforms import blended_transform_factory

from vision_bench.bench.figures import Point, Scale
from vision_bench.io.atomic import atomic_output

PERCENT_LIMITS = (-3.0, 103.0)
"""The y range of a percent axis: 0 % to 100 %, with room for markers drawn on either end."""

UNDEFINED_COLOR = "#dddddd"
UNDEFINED_HATCH = "///"
ZERO_EDGE_WIDTH = 2.0
"""The outline, in points, that draws a bar of height 0 as a line on the baseline."""
LEGEND_MARGIN = 8.0
"""Pixels kept free on each side of a legend below the panels."""


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
    """One legend for the whole figure, below every panel, so it never covers data. It takes at most `columns`
    columns, fewer when they would run past the figure's edges (a figure too narrow for even one column is
    widened), and the figure grows by the legend's height so the panels keep their size."""
    handles: dict[str, Artist] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if not handles:
        return
    room = figure.bbox.width - 2 * LEGEND_MARGIN
    for ncols in range(max(1, min(columns, len(handles))), 0, -1):
        legend = figure.legend(list(handles.values()), list(handles), loc="outside lower center", fontsize=7,
                               ncols=ncols, frameon=False)
        box = legend.get_window_extent()  # in pixels, from the figure's own renderer
        if box.width <= room or ncols == 1:
            break
        legend.remove()
    if box.width > room:
        figure.set_figwidth((box.width + 2 * LEGEND_MARGIN) / figure.dpi)
    figure.set_figheight(figure.get_figheight() + box.height / figure.dpi)


def _error(point: Point) -> float:
    return 0.0 if math.isnan(point.sem) else point.sem


def _mark_zero_bars(axis: Axes, bars: BarContainer) -> None:
    """Draw each bar of height 0 as an outline on the baseline in its colour, labelled "0": an empty slot would
    read as a missing value."""
    for patch in bars.patches:
        if patch.get_height() == 0:
            patch.set_edgecolor(patch.get_facecolor())
            patch.set_linewidth(ZERO_EDGE_WIDTH)
            axis.annotate("0", (patch.get_x() + patch.get_width() / 2, 0.0), xytext=(0, 2), textcoords="offset points",
                          ha="center", va="bottom", fontsize=7)


def _mark_undefined_bar(axis: Axes, x: float, width: float) -> None:
    """A hatched grey slot the panel's full height, labelled "n/a", where a bar has no value."""
    spans = blended_transform_factory(axis.transData, axis.transAxes)  # x in data, y from bottom (0) to top (1)
    axis.add_patch(Rectangle((x - width / 2, 0.0), width, 1.0, transform=spans, facecolor=UNDEFINED_COLOR,
                             hatch=UNDEFINED_HATCH, edgecolor="#999999", linewidth=0.0))
    axis.text(x, 0.5, "n/a", transform=spans, rotation=90, ha="center", va="center", fontsize=7, color="#444444",
              bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})


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

    `values[split][model][setting]` is a `Point`; a missing entry or a NaN mean is a hatched "n/a" slot, a mean
    of 0 an outline on the baseline labelled "0".
    """
    splits = list(values)
    models = list(dict.fromkeys(model for split in splits for model in values[split]))
    figure = _figure(max(4.0, 1.2 * len(settings) * len(splits) + 2), 3.4)
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
            offsets = x + (m - (len(models) - 1) / 2) * width
            bars = axis.bar(offsets, heights, width, label=model, yerr=errors if any(errors) else None, capsize=2)
            _mark_zero_bars(axis, bars)
            for offset, height in zip(offsets, heights):
                if math.isnan(height):
                    _mark_undefined_bar(axis, float(offset), width)
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
    figure = _figure(5.0, 3.6)
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


LineStyle = str | tuple[int, tuple[int, ...]]
RUN_LABEL = re.compile(r"(?P<model>.+) (?P<experiment>\S+) s(?P<seed>\d+)")
"""A bench run's label, 'MODEL EXPERIMENT sSEED' (the model's display name may hold spaces)."""
RUN_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
RUN_LINESTYLES: tuple[LineStyle, ...] = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)))
LONG_SERIES = 30
"""A line with this many points or more carries markers on some of them only (`MARKED_POINTS`)."""
MARKED_POINTS = 8


@dataclass(frozen=True)
class RunStyle:
    """How one run is drawn in every panel of the training curves."""

    color: str
    marker: str
    linestyle: LineStyle


def _run_parts(run: str) -> tuple[str, str, int]:
    """(model, experiment, seed) of a bench run's label; any other label is a model of its own."""
    match = RUN_LABEL.fullmatch(run)
    return (match["model"], match["experiment"], int(match["seed"])) if match else (run, "", 0)


def run_order(runs: Sequence[str]) -> list[str]:
    """`runs` by model (in the order met, as the bar charts order them), then experiment, then seed."""
    models = list(dict.fromkeys(_run_parts(run)[0] for run in runs))
    return sorted(dict.fromkeys(runs), key=lambda run: (models.index(_run_parts(run)[0]), *_run_parts(run)[1:]))


def run_styles(runs: Sequence[str]) -> dict[str, RunStyle]:
    """A distinct look per run that reads as a key: the colour names the model (the first met is C0, as in the bar
    charts), the marker the experiment and the dash pattern the seed. Where that look is taken already (more than
    ten models, eight experiments or six seeds), the run gets the next free (colour, marker, dash) combination in a
    fixed order, so no two runs look alike up to 480 runs."""
    parts = {run: _run_parts(run) for run in run_order(runs)}
    models = list(dict.fromkeys(model for model, _, _ in parts.values()))
    experiments = sorted({experiment for _, experiment, _ in parts.values()})
    seeds = sorted({seed for _, _, seed in parts.values()})
    looks = [(c, m, d) for c in range(10) for m in range(len(RUN_MARKERS)) for d in range(len(RUN_LINESTYLES))]
    taken: set[tuple[int, int, int]] = set()
    styles = {}
    for run, (model, experiment, seed) in parts.items():
        wanted = (models.index(model) % 10, experiments.index(experiment) % len(RUN_MARKERS),
                  seeds.index(seed) % len(RUN_LINESTYLES))
        start = looks.index(wanted)
        look = next((looks[(start + i) % len(looks)] for i in range(len(looks))
                     if looks[(start + i) % len(looks)] not in taken), wanted)
        taken.add(look)
        styles[run] = RunStyle(f"C{look[0]}", RUN_MARKERS[look[1]], RUN_LINESTYLES[look[2]])
    return styles


def _draw_lines(axis: Axes, series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                styles: Mapping[str, RunStyle]) -> None:
    """A line per run against the step, a marker on every point of a short series (validation: one per epoch)
    and on `MARKED_POINTS` points of a long one, staggered between runs so they do not pile up."""
    for index, run in enumerate(run_order(list(series))):
        x, y = series[run]
        style = styles[run]
        every = max(1, len(x) // MARKED_POINTS) if len(x) >= LONG_SERIES else 1
        axis.plot(x, y, color=style.color, linestyle=style.linestyle, marker=style.marker, markersize=4,
                  markevery=(index % every, every), linewidth=1.0, label=run)
    axis.set_xlabel("step", fontsize=8)
    integer_ticks(axis)


def _wrapped(name: str) -> str:
    """A model's name in lines of about 18 characters, broken at spaces only, for a tick label."""
    return textwrap.fill(name, 18, break_long_words=False, break_on_hyphens=False)


def _draw_strip(axis: Axes, series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                styles: Mapping[str, RunStyle]) -> None:
    """A run's single value as its marker in its model's slot on x, the model's runs side by side (by experiment,
    then seed), so that no run hides another as they would all at one step."""
    groups: dict[str, list[str]] = {}
    for run in run_order(list(series)):
        groups.setdefault(_run_parts(run)[0], []).append(run)
    for m, runs in enumerate(groups.values()):
        for i, run in enumerate(runs):
            _, y = series[run]
            style = styles[run]
            axis.plot([m + (i - (len(runs) - 1) / 2) * 0.8 / len(runs)] * len(y), y, color=style.color,
                      linestyle="none", marker=style.marker, markersize=5, label=run)
    axis.set_xticks(range(len(groups)), [_wrapped(model) for model in groups], fontsize=7)
    axis.set_xlim(-0.5, len(groups) - 0.5)
    steps = {step for x, _ in series.values() for step in x}
    axis.set_xlabel(f"one value per run, at step {int(next(iter(steps)))}" if len(steps) == 1 else
                    "one value per run", fontsize=8)


def plot_training_curves(
    curves: Mapping[str, Mapping[str, tuple[Sequence[float], Sequence[float]]]],
    *,
    path: Path,
    scales: Mapping[str, Scale] | None = None,
) -> Path:
    """One panel per logged quantity (e.g. train loss, val MSE); one line per run: `curves[quantity][run] = (x, y)`,
    x in optimizer steps (integer ticks). `scales[quantity]` sets a panel's y axis (default linear).

    Runs are told apart by colour (model), marker (experiment) and dash pattern (seed), the same in every panel
    (`run_styles`). A validation series has a point per epoch, each drawn as a marker. When every run logged a
    quantity once (a one-epoch study), its lines would be single dots stacked at one step, hiding each other:
    that panel is a strip instead, the models on x and each run's value beside its model's other runs. (Folding
    such a validation loss into the train loss panel would still stack its dots at the last step, and other
    metrics do not share the loss's axis.) Two or more points per run make lines that read as they are."""
    quantities = sorted(curves)
    styles = run_styles([run for quantity in quantities for run in curves[quantity]])
    columns = min(3, max(1, len(quantities)))
    rows = max(1, math.ceil(len(quantities) / columns))
    figure = _figure(4.0 * columns, 3.0 * rows)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for axis, quantity in zip(axes, quantities):
        series = curves[quantity]
        if all(len(x) <= 1 for x, _ in series.values()):
            _draw_strip(axis, series, styles)
        else:
            _draw_lines(axis, series, styles)
        axis.set_title(quantity, fontsize=9)
        axis.grid(alpha=0.3)
        values = [v for _, ys in series.values() for v in ys]
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
