"""Result tables: COGITAO's Table 1 layout for the report, and a plain-text summary for terminals.

Table 1 of COGITAO lists, per experiment setting (ES) and model, the ID and OOD grid accuracy and
their drop Delta. Here the same three numbers appear for any metric, as mean +- SEM over seeds
and experiments, with one row per predictor (trained models first, then the baselines as the
floor and the ceiling) and one ID | OOD | Delta column group per setting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vision_bench.bench.aggregate import CellResult, Summary, predictors_in_order, summarize_cells
from vision_bench.bench.report import Table, format_mean_sem, format_value
from vision_bench.metrics import METRICS, label, mean_sem, short_label


def title(metric: str) -> str:
    """The metric's table title, from its registry entry."""
    return label(metric)


def short(metric: str) -> str:
    """The metric's column name, from its registry entry."""
    return short_label(metric)


def format_metric(metric: str, mean: float, sem: float = float("nan")) -> str:
    """Accuracies with one decimal (as COGITAO prints them), everything else with 4 significant digits."""
    if METRICS[metric].percent:
        return format_mean_sem(mean, sem, 1, fixed=True)
    return format_mean_sem(mean, sem, 4)


def gap_note(metric: str) -> str:
    spec = METRICS[metric]
    if spec.gap == "log_ratio":
        name = short(metric)
        return f"Δ = log {name}(OOD) − log {name}(ID) (SVIB's generalization gap); positive = worse OOD."
    unit = " in percentage points (COGITAO's drop)" if spec.percent else ""
    return f"Δ = ID − OOD{unit}; positive = worse OOD."


def _display(predictor: str, baselines: set[str]) -> str:
    return f"{predictor} (baseline)" if predictor in baselines else predictor


def _gap_text(metric: str, summary: Summary) -> str:
    if METRICS[metric].gap == "log_ratio":
        return format_mean_sem(summary.gap.mean, summary.gap.sem, 3)
    return format_metric(metric, summary.gap.mean, summary.gap.sem)


def table1(
    cells: Sequence[CellResult],
    metric: str,
    settings: Sequence[str],
    *,
    id_split: str = "test_id",
    ood_split: str | None = "test_ood",
) -> Table:
    """One metric in Table 1's layout: rows = predictors, column groups = settings (ID | OOD | Δ; ID alone
    when the study has no OOD split)."""
    summaries = summarize_cells(cells, metric, id_split=id_split, ood_split=ood_split)
    baselines = {c.predictor for c in cells if c.baseline}
    sides = 3 if ood_split is not None else 1
    rows = []
    for predictor in predictors_in_order(cells):
        row = [_display(predictor, baselines)]
        for setting in settings:
            summary = summaries.get((predictor, setting))
            if summary is None:
                row += ["—"] * sides
                continue
            row.append(format_metric(metric, summary.id.mean, summary.id.sem))
            if ood_split is not None:
                row += [format_metric(metric, summary.ood.mean, summary.ood.sem), _gap_text(metric, summary)]
        rows.append(row)
    columns = ["model"] + ["ID", "OOD", "Δ"][:sides] * len(settings)
    note = "mean ± SEM over seeds and experiments (no ± with a single run)"
    if ood_split is not None:
        note += f"; {gap_note(metric)}"
    return Table(columns, rows, title=title(metric), groups=[(s, sides) for s in settings], note=note)


def summary_rows(cells: Sequence[CellResult], metrics: Sequence[str], *, id_split: str = "test_id",
                 ood_split: str | None = "test_ood") -> tuple[list[str], list[list[str]]]:
    """Header and rows of the overall summary: per predictor, ID and OOD means over every cell (ID alone when
    the study has no OOD split)."""
    pooled = [
        CellResult(c.predictor, c.experiment, "all", c.seed, c.baseline, c.splits) for c in cells
    ]
    summaries = {metric: summarize_cells(pooled, metric, id_split=id_split, ood_split=ood_split) for metric in metrics}
    sides = ("id", "ood") if ood_split is not None else ("id",)
    header = ["model"] + [f"{side.upper()} {short(metric)}" for metric in metrics for side in sides]
    baselines = {c.predictor for c in cells if c.baseline}
    rows = []
    for predictor in predictors_in_order(cells):
        row = [_display(predictor, baselines)]
        for metric in metrics:
            summary = summaries[metric].get((predictor, "all"))
            for side in sides:
                value = getattr(summary, side).mean if summary is not None else float("nan")
                row.append(_plain(metric, value))
        rows.append(row)
    return header, rows


def _plain(metric: str, value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    return format_value(value, 1, fixed=True) if METRICS[metric].percent else format_value(value, 4)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A left-aligned first column and right-aligned numbers, separated by two spaces."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [str(row[0]).ljust(widths[0])] + [str(v).rjust(w) for v, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def error_table(cells: Sequence[CellResult], split: str) -> Table | None:
    """C-ARC's error taxonomy (paper 001, 5.2) on `split`: rows = predictors, columns = the share of samples
    in each class, mean over seeds and experiments; None when no cell has the `error_*` metrics."""
    from vision_bench.metrics.error_taxonomy import ERROR_CLASSES

    names = [f"error_{name}" for name in ERROR_CLASSES]
    baselines = {c.predictor for c in cells if c.baseline}
    rows = []
    for predictor in predictors_in_order(cells):
        mine = [c for c in cells if c.predictor == predictor]
        values = {name: [c.splits.get(split, {}).get(name) for c in mine] for name in names}
        if all(v is None for column in values.values() for v in column):
            continue
        means = {name: mean_sem([float(v) for v in column if v is not None]) for name, column in values.items()}
        rows.append([_display(predictor, baselines), *(format_metric(name, means[name].mean) for name in names)])
    if not rows:
        return None
    columns = ["model", *(METRICS[name].short_label for name in names)]
    return Table(columns, rows, title=f"C-ARC error classes on {split} (% of samples)",
                 note="each column is the share of the split's samples whose decoded query falls in that class; "
                      "the rest are correct (GA); mean over seeds and experiments")
