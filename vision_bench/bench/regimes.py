"""COGITAO's Table 3 from finished benches: one row per experiment, model and training regime (samples x epochs).

COGITAO (paper 000, appendix H, Table 3) trains one model under four regimes (100k samples x 100 epochs, 250k x 50,
500k x 20, 1M x 10) on CompGen experiments and its translation-only Experiment 0, and prints GA, PPA and Obj-PPA in
and out of distribution with stubbornness. One bench holds one regime (`configs/paper/regime_*.yaml`), so the table
merges several bench folders: each bench's regime is its `data.n_train` and each model's epochs (or max_steps), read
from its bench.yaml; its numbers come from its results.csv. PPA and Obj-PPA are COGITAO's own forms (`paper_ppa`,
`paper_obj_ppa`); stubbornness is read on the OOD split. Each value is the mean +- SEM over the seeds of one
experiment that passed the bench's gate (failed runs are counted, never averaged).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vision_bench.bench.aggregate import id_ood
from vision_bench.bench.config import BenchConfig, experiment_name, stored_bench
from vision_bench.bench.model_ranks import read_results
from vision_bench.bench.report import Paragraph, Report, Table, count_of, to_markdown
from vision_bench.bench.tables import format_metric
from vision_bench.errors import ConfigError
from vision_bench.io.atomic import atomic_write_text, output_folder
from vision_bench.metrics import MeanSem, mean_sem

COLUMNS: tuple[tuple[str, str], ...] = (
    ("grid_accuracy", "id"), ("grid_accuracy", "ood"), ("paper_ppa", "id"), ("paper_ppa", "ood"),
    ("paper_obj_ppa", "id"), ("paper_obj_ppa", "ood"), ("stubbornness", "ood"),
)
"""(metric, side) of each value column, in Table 3's order."""
HEADERS = ("GA ID", "GA OOD", "PPA ID", "PPA OOD", "Obj-PPA ID", "Obj-PPA OOD", "Stubbornness OOD")


@dataclass(frozen=True)
class RegimeRow:
    """One experiment, model and regime: the runs counted and each column's mean +- SEM over their seeds."""

    experiment: str
    model: str
    samples: int
    length: str
    passed: int
    runs: int
    values: tuple[MeanSem | None, ...]


def _splits(config: BenchConfig) -> tuple[str, str]:
    """The bench's ID and OOD splits, as its report reads them (`aggregate.id_ood`); refused without an OOD split."""
    id_split, ood_split = id_ood(config.evaluate.splits)
    if ood_split is None:
        raise ConfigError(f"bench {config.name!r} evaluates no OOD split ({', '.join(config.evaluate.splits)}); "
                          "COGITAO's Table 3 compares ID with OOD: add test_ood to evaluate.splits")
    return id_split, ood_split


def _length(config: BenchConfig, model_index: int) -> str:
    """A model's run length as Table 3 states it: its epochs, or its steps when max_steps replaces them."""
    training = config.models[model_index].training(config.train)
    count, unit = (training.epochs, "epoch") if training.max_steps is None else (training.max_steps, "step")
    return count_of(count, unit)


def regime_rows(bench_dirs: Sequence[Path]) -> list[RegimeRow]:
    """Every (experiment, trained model) of every bench, with its regime and values, sorted by experiment, model and
    then samples (a bench folder without bench.yaml or results.csv is refused in one line)."""
    rows: list[RegimeRow] = []
    for folder in bench_dirs:
        config = stored_bench(folder)
        id_split, ood_split = _splits(config)
        results = [r for r in read_results([Path(folder)]) if r["baseline"] != "true"]
        for index, model in enumerate(config.models):
            for experiment in config.experiments:
                name = experiment_name(experiment)  # results.csv names a task file by its stem
                mine = [r for r in results if r["model"] == model.display and r["experiment"] == name]
                seeds = {r["seed"] for r in mine}
                kept = [r for r in mine if r.get("gate", "") in ("", "passed")]
                passed = {r["seed"] for r in kept}
                values = tuple(_value(kept, metric, id_split if side == "id" else ood_split)
                               for metric, side in COLUMNS)
                rows.append(RegimeRow(name, model.display, config.data.n_train, _length(config, index),
                                      len(passed), len(seeds), values))
    return sorted(rows, key=lambda r: (r.experiment, r.model, r.samples))


def _value(rows: Sequence[dict[str, str]], metric: str, split: str) -> MeanSem | None:
    """Mean +- SEM over the seeds of `metric` on `split`; None when no run has a finite value."""
    values = [float(value) for r in rows if r["metric"] == metric and r["split"] == split
              and (value := r["value"]) not in ("", None)]  # results.csv leaves an unavailable value empty
    values = [v for v in values if math.isfinite(v)]
    return mean_sem(values) if values else None


def regime_table(rows: Sequence[RegimeRow]) -> Table:
    """The rows in COGITAO's Table 3 layout: experiment, model, samples, length, runs, then the seven values."""
    body = [[r.experiment, r.model, f"{r.samples:,}", r.length,
             f"{r.passed} of {r.runs}" if r.passed != r.runs else str(r.runs),
             *("—" if v is None else format_metric(metric, v.mean, v.sem) for v, (metric, _) in zip(r.values, COLUMNS))]
            for r in rows]
    return Table(["experiment", "model", "samples", "length", "runs", *HEADERS], body,
                 title="Training regimes (layout of COGITAO's Table 3)",
                 note="mean ± SEM over the seeds of one experiment that passed the bench's gate ('k of n': the gate "
                      "left out n − k runs); PPA and Obj-PPA in COGITAO's forms (paper_ppa, paper_obj_ppa); "
                      "stubbornness on the OOD split; — where no run has the metric")


def _number(value: float) -> str:
    """A CSV number as results.csv writes one: empty when not finite (the SEM of one seed)."""
    return repr(value) if math.isfinite(value) else ""


def regimes_csv(rows: Sequence[RegimeRow]) -> str:
    """The rows as CSV, one column per value and one per SEM."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [f"{metric}_{side}" for metric, side in COLUMNS]
    writer.writerow(["experiment", "model", "samples", "length", "passed", "runs",
                     *(f"{n}{suffix}" for n in names for suffix in ("", "_sem"))])
    for r in rows:
        cells = [x for v in r.values for x in (("", "") if v is None else (_number(v.mean), _number(v.sem)))]
        writer.writerow([r.experiment, r.model, r.samples, r.length, r.passed, r.runs, *cells])
    return buffer.getvalue()


TITLE = "Training regimes"


def regimes_markdown(rows: Sequence[RegimeRow], bench_dirs: Sequence[Path]) -> str:
    """The table as a Markdown page naming the bench folders it merges."""
    report = Report(TITLE)
    report.add(Paragraph("Benches: " + ", ".join(str(folder) for folder in bench_dirs) + "."), regime_table(rows))
    return to_markdown(report, Path.cwd())


def write_regimes(bench_dirs: Sequence[Path], out_dir: Path) -> tuple[Path, Path]:
    """regimes.md and regimes.csv in `out_dir` (made when missing); returns their paths."""
    rows = regime_rows(bench_dirs)
    folder = output_folder(out_dir)
    markdown, table = folder / "regimes.md", folder / "regimes.csv"
    atomic_write_text(markdown, regimes_markdown(rows, bench_dirs))
    atomic_write_text(table, regimes_csv(rows))
    return markdown, table
