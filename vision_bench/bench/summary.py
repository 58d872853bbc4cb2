"""Assemble a bench report from evaluated cells: tables, plots, training curves and sample sheets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from vision_bench.bench.aggregate import (
    CellResult,
    experiments_by_setting,
    id_ood,
    metric_available,
    summarize_alpha,
    summarize_experiments,
)
from vision_bench.bench.config import (
    BenchConfig,
    ModelEntry,
    experiment_name,
    is_file_reference,
    resolve_experiments,
    task_config,
)
from vision_bench.bench.figures import Point, Scale, figures_missing, value_scale
from vision_bench.bench.gate import failed_runs, gate_table, gated
from vision_bench.bench.report import Figure, Heading, Paragraph, Report, count_of
from vision_bench.bench.sheets import collect_sheets
from vision_bench.bench.tables import (
    error_table,
    experiment_label,
    experiment_table,
    short,
    summary_rows,
    svib_table1,
    table1,
    text_table,
    title,
)
from vision_bench.io.atomic import output_folder
from vision_bench.metrics import METRICS, MeanSem, listed_in
from vision_bench.tasks.families import ERROR_TAXONOMY, family_metrics, study_family
from vision_bench.tasks.studies import STUDIES
from vision_bench.tasks.studies.registry import is_cogitao_study
from vision_bench.train.logging import METRICS_FILE, read_records

PLOTS_DIR = "plots"


def _point(value: MeanSem) -> Point:
    return Point(value.mean, value.sem)


def _settings(cells: Sequence[CellResult]) -> list[str]:
    return list(dict.fromkeys(c.setting for c in cells))


def several_experiments(cells: Sequence[CellResult]) -> bool:
    """True when some setting holds more than one experiment: its numbers are then shown per experiment too."""
    return any(len(experiments) > 1 for experiments in experiments_by_setting(cells).values())


def _unavailable_reason(cells: Sequence[CellResult], metric: str) -> str:
    reasons = {c.status[metric].removeprefix("unavailable: ") for c in cells if c.status.get(metric)}
    return "; ".join(sorted(reasons)) or "no finite value was recorded"


def unavailable_note(cells: Sequence[CellResult], metric: str) -> str | None:
    """One line saying why `metric` shows n/a (the same words as the report), or None when it was
    computed: 'LPIPS unavailable: <reason>' when no cell has a value, 'LPIPS n/a for <predictors>:
    <reason>' when only some lack it."""
    if not metric_available(cells, metric):
        return f"{short(metric)} unavailable: {_unavailable_reason(cells, metric)}"
    missing = [c for c in cells if c.status.get(metric)]
    if not missing:
        return None
    predictors = ", ".join(dict.fromkeys(c.predictor for c in missing))
    return f"{short(metric)} n/a for {predictors}: {_unavailable_reason(missing, metric)}"


def terminal_summary(cells: Sequence[CellResult], metrics: Sequence[str], *, id_split: str,
                     ood_split: str | None) -> str:
    """What `bench` and `quickstart` print: per predictor the ID and OOD means of `metrics` over every experiment
    (`summary_rows`: each experiment's seed mean weighs once; no SEM), then one line per metric that shows n/a,
    saying why."""
    header, rows = summary_rows(cells, metrics, id_split=id_split, ood_split=ood_split)
    notes = [note for metric in metrics if (note := unavailable_note(cells, metric)) is not None]
    return "\n".join([text_table(header, rows), *notes])


def plot_groups(cells: Sequence[CellResult]) -> dict[str, str]:
    """Experiment -> its bar group in the per-setting plot: the setting when the experiment is alone in it, else
    the experiment (its label on two lines), so that no bar pools tasks."""
    return {experiment: setting if len(experiments) == 1 else experiment_label(experiment).replace(" (", "\n(")
            for setting, experiments in experiments_by_setting(cells).items() for experiment in experiments}


def metric_plot(cells: Sequence[CellResult], metric: str, splits: Sequence[str], out_dir: Path) -> Path:
    """Bars of `metric` per setting (per experiment where a setting has several: `plot_groups`) and model, mean
    +- SEM over seeds, one panel per split of `splits` (ID, then OOD when there is one)."""
    from vision_bench.bench.plots import plot_metric_by_setting

    groups = plot_groups(cells)
    ood_split = splits[1] if len(splits) > 1 else None
    summaries = summarize_experiments(cells, metric, id_split=splits[0], ood_split=ood_split)
    values: dict[str, dict[str, dict[str, Point]]] = {split: {} for split in splits}
    for (predictor, experiment), summary in summaries.items():
        for split, side in zip(splits, (summary.id, summary.ood)):
            values[split].setdefault(predictor, {})[groups[experiment]] = _point(side)
    return plot_metric_by_setting(values, metric=short(metric), settings=list(dict.fromkeys(groups.values())),
                                  scale=value_scale(metric), path=out_dir / PLOTS_DIR / f"{metric}_by_setting.png")


def alpha_series(cells: Sequence[CellResult]) -> dict[str, list[CellResult]]:
    """The cells of each alpha sweep, by the experiment id without its alpha (`svib/S-A` for `svib/S-A/0.2`):
    one sweep per task, as SVIB's Figure 4 draws one panel per task."""
    series: dict[str, list[CellResult]] = {}
    for cell in cells:
        if cell.alpha is not None:
            series.setdefault(cell.experiment.rpartition("/")[0], []).append(cell)
    return series


def alpha_plot(cells: Sequence[CellResult], metric: str, splits: Sequence[str], out_dir: Path,
               name: str = "") -> Path | None:
    """`metric` against alpha for the cells of one sweep; `name` (the sweep) goes into the file name."""
    from vision_bench.bench.plots import plot_metric_vs_alpha

    curves = summarize_alpha(cells, metric, splits)
    if not curves:
        return None
    points = {p: {s: {a: _point(v) for a, v in by_alpha.items()} for s, by_alpha in by_split.items()}
              for p, by_split in curves.items()}
    stem = f"{metric}_vs_alpha" + (f"_{name.replace('/', '_')}" if name else "")
    return plot_metric_vs_alpha(points, metric=short(metric), scale=value_scale(metric),
                                path=out_dir / PLOTS_DIR / f"{stem}.png")


def curve_scale(key: str) -> Scale:
    """The y scale of a logged quantity: the metric's own for 'SPLIT/METRIC' keys (validation logs
    fractions; `curve_value` turns accuracies into %), a log axis for losses."""
    metric = key.rsplit("/", 1)[-1]
    return "log" if metric == "loss" else value_scale(metric)


def curve_value(key: str, value: float) -> float:
    """A logged value as the report draws it: accuracies (logged as fractions) in %, the rest as logged."""
    metric = key.rsplit("/", 1)[-1]
    return value * 100.0 if metric in METRICS and METRICS[metric].percent else value


def run_label(cell: CellResult) -> str:
    """A trained cell's name in the training curves, 'MODEL EXPERIMENT sSEED', which `plots.RUN_LABEL` reads back
    to style it: the experiment is one word (a task file's spaces become underscores)."""
    return f"{cell.predictor} {experiment_name(cell.experiment).replace(' ', '_')} s{cell.seed}"


def training_curves(cells: Sequence[CellResult], out_dir: Path) -> Path | None:
    """Step losses and per-epoch validation metrics of every trained cell, from its metrics.jsonl."""
    from vision_bench.bench.plots import plot_training_curves

    curves: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    scales: dict[str, Scale] = {}
    for cell in cells:
        if cell.baseline or cell.run_dir is None:
            continue
        label = run_label(cell)
        for record in read_records(Path(cell.run_dir) / METRICS_FILE):
            kind = record.get("kind")
            keys = ["loss"] if kind == "step" else [k for k in record if "/" in k] if kind == "epoch" else []
            for key in keys:
                value = record.get(key)
                if isinstance(value, (int, float)) and math.isfinite(value):
                    name = "train loss" if key == "loss" else key
                    scales[name] = curve_scale(key)
                    xs, ys = curves.setdefault(name, {}).setdefault(label, ([], []))
                    xs.append(record["step"])
                    ys.append(curve_value(key, float(value)))
    if not curves:
        return None
    return plot_training_curves(curves, scales=scales, path=out_dir / PLOTS_DIR / "training_curves.png")


SELECTION_WORDS = {"loss": "validation loss", "mse": "validation MSE", "grid_accuracy": "validation grid accuracy"}
PAPER_CHECKPOINT = "best by validation loss on val_ood"
"""COGITAO's choice (paper 000, App. J: the checkpoint of lowest OOD validation loss) in `checkpoint_choice`'s words."""
PAPER_CHECKPOINT_NO_OOD = "best by validation loss on val_id"
"""COGITAO's choice where a study has no OOD split (Sample-Efficiency: the release selects on its validation loss)."""


def checkpoint_choice(config: BenchConfig) -> str:
    """Which checkpoint the cells were evaluated on, for the report's first paragraph: 'best by validation loss on
    val_id' or 'last, after 1000 steps', per model where the models' own `train` sections make them differ; where
    the bench runs COGITAO's paper's own studies (`is_cogitao_study`), the paper's choice beside it (the configs here
    mostly take val_id or the last checkpoint)."""
    choices = {model.display: _model_checkpoint(config, model) for model in config.models}
    distinct = set(choices.values())
    studies = [e for e in config.experiments if not is_file_reference(e) and is_cogitao_study(e)]
    without_ood = studies and all(task_config(e, config.data).count("val_ood") == 0
                                  for e in resolve_experiments(tuple(studies), STUDIES.names()))
    paper = PAPER_CHECKPOINT_NO_OOD if without_ood else PAPER_CHECKPOINT
    if distinct == {paper}:
        return f"{paper}, as COGITAO's paper chose" if studies else paper
    per_model = ", ".join(f"{choice} for {name}" for name, choice in choices.items())
    said = distinct.pop() if len(distinct) == 1 else per_model
    return f"{said} (COGITAO's paper: {paper})" if studies else said


def _model_checkpoint(config: BenchConfig, model: ModelEntry) -> str:
    """One model's evaluated checkpoint in words: the selection split and metric of best.pt, or the run length."""
    if config.evaluate.checkpoint == "last":
        training = model.training(config.train)  # max_steps, when set, replaces epochs as the run's length
        count, unit = (training.epochs, "epoch") if training.max_steps is None else (training.max_steps, "step")
        return f"last, after {count_of(count, unit)}"
    checkpoint = model.checkpoint(config.train)
    return f"best by {SELECTION_WORDS[checkpoint.metric]} on {checkpoint.select_on}"


def build_report(config: BenchConfig, cells: Sequence[CellResult], out_dir: Path) -> Report:
    """The whole report; plots and sheets are written under `out_dir` as a side effect."""
    output_folder(out_dir, PLOTS_DIR, make=False)  # the plots never go through a folder link placed there
    id_split, ood_split = id_ood(config.evaluate.splits)
    read = (id_split,) if ood_split is None else (id_split, ood_split)
    settings = _settings(cells)
    report = Report(f"vision-bench: {config.name}")
    models = ", ".join(m.display + (f" (seeds {', '.join(map(str, m.seeds))})" if m.seeds else "")
                       for m in config.models)
    report.add(Paragraph(
        f"Models: {models}. Baselines: {', '.join(config.baselines) or 'none'}. Settings: {', '.join(settings)} "
        f"({count_of(len({c.experiment for c in cells}), 'experiment')}, "
        f"seed{'s' if len(config.seeds) > 1 else ''} {', '.join(map(str, config.seeds))}). "
        f"Samples: {config.data.n_train} train, {config.data.n_test} per test split. "
        f"ID = {id_split}, OOD = {ood_split or 'none (the study has no OOD split)'}; "
        f"checkpoint: {checkpoint_choice(config)}."
    ))
    if config.gate is not None or config.verdict:
        report.add(Heading("Gate and verdict rule (stated in the bench config before the runs)"))
        if config.verdict:
            report.add(Paragraph(f"Verdict rule: {config.verdict}"))
    every_run = list(cells)  # the training curves show failed runs too: whether their loss had stopped falling
    failed: list[CellResult] = []
    if config.gate is not None:
        cells, failed = gated(cells, config.gate)
        report.add(gate_table([*cells, *failed], config.gate))
        report.add(Paragraph("Runs that failed the gate, left out of every table and plot below: "
                             + ("; ".join(failed_runs(failed, config.gate)) or "none") + "."))
    per_experiment = several_experiments(cells)
    layout = "COGITAO's Table 1; per experiment, of its Table 2" if per_experiment else "COGITAO's Table 1"
    report.add(Heading(f"Results (layout of {layout})"))
    # the metrics only some task families support (factor accuracy on SVIB's scenes) join where they were computed
    family_only = [metric for metric in family_metrics() if metric_available(cells, metric)]
    for metric in [*listed_in("report"), *family_only]:
        if not metric_available(cells, metric):
            report.add(Heading(title(metric), 3), Paragraph(str(unavailable_note(cells, metric))))
            continue
        report.add(table1(cells, metric, settings, id_split=id_split, ood_split=ood_split,
                          experiments=experiments_by_setting(every_run)))
        if per_experiment:
            report.add(experiment_table(cells, metric, id_split=id_split, ood_split=ood_split, failed=failed))
    if alpha_series(cells):  # SVIB's Table 1: the OOD value per alpha rating, averaged over the tasks
        report.add(Heading("Per alpha rating (layout of SVIB's Table 1)"))
        for metric in [m for m in listed_in("alpha_plot") if metric_available(cells, m)]:
            table = svib_table1(cells, metric, ood_split or id_split, every_run=every_run)
            if table is not None:
                report.add(table)
    taxonomy = any(ERROR_TAXONOMY in study_family(c.experiment).reports for c in cells)
    errors = error_table(cells, ood_split or id_split) if taxonomy else None
    if errors is not None:  # other studies have the error_* metrics too, in results.csv and metrics.json
        report.add(Heading("C-ARC error taxonomy (paper 001, section 5.2)"), errors)
    report.add(Heading("Plots"))
    missing = figures_missing()
    if missing is not None:
        report.add(Paragraph(missing))
    else:
        _add_plots(report, cells, every_run, read, family_only, out_dir)
    sheets = collect_sheets(cells, read, out_dir)
    if sheets:
        report.add(Heading("Sample sheets (input | target | prediction | error map)"), *sheets)
    return report


def _add_plots(report: Report, cells: Sequence[CellResult], every_run: Sequence[CellResult], read: Sequence[str],
               family_only: Sequence[str], out_dir: Path) -> None:
    """The report's figures (matplotlib): each bench metric per setting and model, `metric` against alpha per
    sweep (the registry's and `family_only`), the training curves of `every_run` (failed runs too)."""
    ood_split = read[1] if len(read) > 1 else None
    id_split = read[0]
    for metric in listed_in("bench"):
        if metric_available(cells, metric):
            path = metric_plot(cells, metric, read, out_dir)
            groups = "experiment" if several_experiments(cells) else "setting"
            report.add(Figure(path, f"{title(metric)} per {groups} and model (mean ± SEM over seeds)"))
    sweeps = alpha_series(cells)
    for metric in [*listed_in("alpha_plot"), *family_only]:
        if not metric_available(cells, metric):
            continue
        for sweep, members in sweeps.items():
            alpha_path = alpha_plot(members, metric, read, out_dir, sweep if len(sweeps) > 1 else "")
            if alpha_path is not None:
                lines = f"solid: {ood_split}, dashed: {id_split}" if ood_split else f"{id_split}"
                report.add(Figure(alpha_path, f"{title(metric)} against alpha, {sweep} ({lines})"))
    curves = training_curves(every_run, out_dir)
    if curves is not None:
        report.add(Figure(curves, "training curves: loss per step and validation metrics per epoch"))
