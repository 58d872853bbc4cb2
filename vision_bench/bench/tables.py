"""Result tables: COGITAO's Table 1 and Table 2 layouts and SVIB's Table 1 for the report, and a plain-text summary
for terminals.

Table 1 of COGITAO lists, per experiment setting (ES) and model, the ID and OOD grid accuracy and
their drop Delta; its Table 2 (Sample-Efficiency) one row per setting and transformation. Here the
same three numbers appear for any metric, with one row per setting (`table1`) or per experiment
(`experiment_table`) and one ID | OOD | Delta column group per predictor (trained models first, then
the baselines as the floor and the ceiling). SVIB's Table 1 has one row per model and one column per alpha rating
(its Easy, Medium and Hard splits), each the OOD value averaged over the tasks rated so. The +- is an SEM over
seeds, never across experiments (`vision_bench.bench.aggregate`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from vision_bench.bench.aggregate import (
    CellResult,
    Summary,
    experiments_by_setting,
    predictors_in_order,
    summarize_cells,
    summarize_experiments,
)
from vision_bench.bench.config import experiment_name
from vision_bench.bench.report import Table, format_mean_sem, format_value
from vision_bench.metrics import METRICS, label, mean_sem, short_label
from vision_bench.tasks.studies.builder import STUDIES
from vision_bench.tasks.studies.registry import get_study

SETTING_NOTE = ("mean over the setting's experiments; ± SEM over seeds of each seed's mean over them, never across "
                "experiments; no ± with one seed or unequal seeds; n/a where some experiment of the setting has no "
                "(passing) run")
EXPERIMENT_NOTE = "mean ± SEM over the experiment's seeds (no ± with one seed)"


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


def _group(metric: str, summary: Summary, sides: int) -> list[str]:
    """One predictor's ID | OOD | Δ cells (the first `sides` of them)."""
    texts = [format_metric(metric, summary.id.mean, summary.id.sem)]
    if sides == 3:
        texts += [format_metric(metric, summary.ood.mean, summary.ood.sem), _gap_text(metric, summary)]
    return texts


def _by_predictor(cells: Sequence[CellResult], metric: str, rows: Sequence[tuple[str, str]],
                  texts: Mapping[tuple[str, str], list[str]], *, first: str, sides: int, title: str,
                  note: str) -> Table:
    """Rows (key, label) against a column group per predictor of `cells`; `texts[(predictor, key)]` fills a
    group ('—' where it is missing). The note ends with the gap's definition when there is a Δ column."""
    predictors = predictors_in_order(cells)
    baselines = {c.predictor for c in cells if c.baseline}
    body = [[name, *(text for p in predictors for text in texts.get((p, key), ["—"] * sides))] for key, name in rows]
    columns = [first] + ["ID", "OOD", "Δ"][:sides] * len(predictors)
    groups = [(_display(p, baselines), sides) for p in predictors]
    if sides == 3:
        note += f"; {gap_note(metric)}"
    return Table(columns, body, title=title, groups=groups, note=note)


def table1(
    cells: Sequence[CellResult],
    metric: str,
    settings: Sequence[str],
    *,
    id_split: str = "test_id",
    ood_split: str | None = "test_ood",
    experiments: Mapping[str, Sequence[str]] | None = None,
) -> Table:
    """One metric in COGITAO's Table 1 layout: rows = settings, a column group per predictor (ID | OOD | Δ; ID
    alone when the study has no OOD split), values by `summarize_cells` (no SEM across experiments; n/a where a
    predictor has no passing run in one of the setting's `experiments`)."""
    sides = 3 if ood_split is not None else 1
    summaries = summarize_cells(cells, metric, id_split=id_split, ood_split=ood_split, experiments=experiments)
    texts = {key: _group(metric, summary, sides) for key, summary in summaries.items()}
    return _by_predictor(cells, metric, [(s, s) for s in settings], texts, first="setting", sides=sides,
                         title=title(metric), note=SETTING_NOTE)


SVIB_SPLITS = {0.6: "Easy", 0.4: "Medium", 0.2: "Hard"}
"""SVIB's names for its training splits by alpha rating (paper 003, section 2.3); alpha 0.0 has none."""


def svib_table1(cells: Sequence[CellResult], metric: str, split: str, *,
                every_run: Sequence[CellResult] | None = None) -> Table | None:
    """One metric on `split` in SVIB's Table 1 layout: rows = predictors, one column per alpha rating (highest
    first: Easy 0.6, Medium 0.4, Hard 0.2, then the others), each the mean over the tasks rated so (each task's seed
    mean once, ± SEM over seeds of each seed's mean over them; `summarize_cells`). `every_run` (default `cells`)
    are the runs before any gate: a predictor without a passing run on one of an alpha's tasks gets n/a there.
    None when no cell has an alpha rating."""
    def by_alpha(group: Sequence[CellResult]) -> list[CellResult]:
        return [replace(c, setting=str(c.alpha)) for c in group if c.alpha is not None]

    rated, everything = by_alpha(cells), by_alpha(every_run if every_run is not None else cells)
    if not rated:
        return None
    covered = experiments_by_setting(everything)
    alphas = sorted(covered, key=float, reverse=True)
    summaries = summarize_cells(rated, metric, id_split=split, ood_split=None, experiments=covered)
    ran = {(c.predictor, c.setting) for c in everything}  # a predictor whose runs there all failed the gate: n/a

    def text(predictor: str, alpha: str) -> str:
        summary = summaries.get((predictor, alpha))
        if summary is not None:
            return format_metric(metric, summary.id.mean, summary.id.sem)
        return "n/a" if (predictor, alpha) in ran else "—"

    baselines = {c.predictor for c in cells if c.baseline}
    rows = [[_display(p, baselines), *(text(p, a) for a in alphas)] for p in predictors_in_order(cells)]
    columns = ["model", *(f"{SVIB_SPLITS[float(a)]} (α = {a})" if float(a) in SVIB_SPLITS else f"α = {a}"
                          for a in alphas)]
    tasks = ", ".join(sorted({c.experiment.rpartition("/")[0] for c in everything}))
    return Table(columns, rows, title=f"{title(metric)} on {split}, per alpha rating (layout of SVIB's Table 1)",
                 note=f"mean over the tasks of each alpha rating ({tasks}); ± SEM over seeds of each seed's mean over "
                      "them, never across tasks; n/a where some task of the rating has no (passing) run; — where the "
                      "model did not run")


def experiment_label(experiment: str) -> str:
    """The experiment id, with the transformation sequence it tests in parentheses when its study has exactly
    one (`sample-efficiency/S3/2 (rot90)`); the id alone for studies of several sequences, rules, episodes or
    scenes, and for task files."""
    if experiment not in STUDIES:
        return experiment
    sequences = get_study(experiment, n_train=1, n_val=1, n_test=1).sequences
    if sequences is None or len(sequences) != 1:
        return experiment
    return f"{experiment} ({' → '.join(sequences[0])})"


def experiment_table(
    cells: Sequence[CellResult],
    metric: str,
    *,
    id_split: str = "test_id",
    ood_split: str | None = "test_ood",
    failed: Sequence[CellResult] = (),
) -> Table:
    """One metric in COGITAO's Table 2 layout: rows = experiments, a column group per predictor, values mean ±
    SEM over the experiment's seeds. `failed` are the runs a gate left out of `cells`: where a predictor lost
    some, its ID cell ends in '(k of n passed)'."""
    sides = 3 if ood_split is not None else 1
    summaries = summarize_experiments(cells, metric, id_split=id_split, ood_split=ood_split)
    texts = {key: _group(metric, summary, sides) for key, summary in summaries.items()}
    passed = Counter((c.predictor, c.experiment) for c in cells)
    for key, lost in Counter((c.predictor, c.experiment) for c in failed).items():
        group = texts.setdefault(key, ["—"] * sides)
        group[0] += f" ({passed[key]} of {passed[key] + lost} passed)"
    note = EXPERIMENT_NOTE
    if failed:
        note += "; (k of n passed): the gate left out n − k of the n runs, the numbers are over the k that passed"
    every = [*cells, *failed]
    rows = [(e, experiment_label(experiment_name(e))) for experiments in experiments_by_setting(every).values()
            for e in experiments]
    return _by_predictor(every, metric, rows, texts, first="experiment", sides=sides,
                         title=f"{title(metric)}, per experiment", note=note)


def summary_rows(cells: Sequence[CellResult], metrics: Sequence[str], *, id_split: str = "test_id",
                 ood_split: str | None = "test_ood") -> tuple[list[str], list[list[str]]]:
    """Header and rows of the overall summary, a one-line view per predictor without SEM: the ID and OOD means over
    every experiment of the bench, each experiment weighing its seed mean once (the mean over every cell when
    the experiments have the same seeds); ID alone when the study has no OOD split."""
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
