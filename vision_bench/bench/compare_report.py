"""`vision-bench compare-metrics`: where the targets come from, and the files the study writes.

    OUT/perturbations.csv, perturbations.json   each perturbation x metric: mean, SEM, penalty share
    OUT/correlations.csv, correlations.json     with --run: Spearman / Kendall per split and metric
    OUT/model_ranks.csv, model_ranks.md, .png   with --bench: model rank agreement, all / competent / per sample
    OUT/plots/*.png, OUT/report.md, OUT/report.html
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from render.spec import RenderSpec
from vision_bench.bench.compare_metrics import (
    DEFAULT_STUDY,
    PerturbationStudy,
    Target,
    correlation_study,
    findings,
    perturbation_study,
)
from vision_bench.bench.correlation import RankCorrelation, run_samples
from vision_bench.bench.figures import figures_missing
from vision_bench.bench.model_ranks import TITLE as RANKS_TITLE
from vision_bench.bench.model_ranks import RankViews, write_model_ranks
from vision_bench.bench.perturbations import PERTURBATIONS
from vision_bench.bench.report import (
    Figure,
    Heading,
    Paragraph,
    Report,
    Table,
    format_value,
    write_report,
)
from vision_bench.bench.tables import short
from vision_bench.errors import UserError
from vision_bench.evaluation.outputs import write_json
from vision_bench.io.atomic import atomic_output, output_folder

if TYPE_CHECKING:
    import torch

PLOTS_DIR = "plots"


@dataclass
class CompareResult:
    out_dir: Path
    study: PerturbationStudy | None
    correlations: list[RankCorrelation] = field(default_factory=list)
    report_md: Path | None = None
    report_html: Path | None = None


def study_targets(study: str = DEFAULT_STUDY, n: int = 32, split: str = "test_id") -> list[Target]:
    """`n` true pairs generated on the fly from a study (render seeds as the datasets use them)."""
    from vision_bench.data.sources import load_config, render_seed
    from vision_bench.tasks.sampling import generate_sample

    config = load_config(study)
    samples = [generate_sample(config, split, i) for i in range(n)]
    return [Target(s.input, s.output, render_seed(s.seed, split, s.index)) for s in samples]


def export_targets(path: str | Path, n: int = 32, split: str = "test_id") -> tuple[list[Target], RenderSpec]:
    """Up to `n` pairs of an export directory's split, with the export's render spec."""
    from vision_bench.data.manifest import read_manifest
    from vision_bench.data.opening import dataset_length, open_dataset

    manifest = read_manifest(path)
    spec = RenderSpec.from_dict(manifest["settings"]["render_spec"])
    dataset = open_dataset(str(path), split, spec=spec, render_on="device")
    items = [dataset[i] for i in range(min(n, dataset_length(dataset)))]
    if not items or "target_grid" not in items[0]:
        raise UserError(f"{path}: split {split} holds no grids; the perturbation study needs an export with grids")
    targets = [
        Target(item["input_grid"].numpy().astype(np.uint8), item["target_grid"].numpy().astype(np.uint8),
               int(item["render_seed"]))
        for item in items
    ]
    return targets, spec


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> Path:
    with atomic_output(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _value_text(value: float) -> str:
    return "unavailable" if math.isnan(value) else format_value(value, 4)


def write_perturbations(study: PerturbationStudy, out_dir: Path, report: Report) -> None:
    names = list(study.values)
    metrics = list(study.metrics)
    header = ["perturbation", "kind", "n"] + [f"{m}{suffix}" for m in metrics for suffix in ("", "_sem", "_share")]
    rows = []
    for name in names:
        row: list[object] = [name, PERTURBATIONS[name].kind, study.n[name]]
        for metric in metrics:
            value = study.values[name][metric]
            row += [_number(value.mean), _number(value.sem), _number(study.penalty_share(name, metric))]
        rows.append(row)
    _write_csv(out_dir / "perturbations.csv", header, rows)
    write_json(out_dir / "perturbations.json", {
        "metrics": metrics,
        "status": study.status,
        "findings": findings(study),
        "perturbations": {
            name: {
                "kind": PERTURBATIONS[name].kind,
                "description": PERTURBATIONS.description(name),
                "n": study.n[name],
                "values": {m: {"mean": _number(study.values[name][m].mean), "sem": _number(study.values[name][m].sem)}
                           for m in metrics},
                "penalty_share": {m: _number(study.penalty_share(name, m)) for m in metrics},
            }
            for name in names
        },
    })
    report.add(Heading("Controlled perturbations of true targets"))
    report.add(Paragraph(
        "Semantic perturbations edit the target grid and are rendered; pixel perturbations edit the rendered "
        "image. GA and Obj-PPA decode the perturbed image with the render spec. Values are means over the "
        "targets each perturbation applied to (n)."
    ))
    value_rows = [[n, PERTURBATIONS.description(n), str(study.n[n])]
                  + [_value_text(study.values[n][m].mean) for m in metrics] for n in names]
    report.add(Table(["perturbation", "what changes", "n"] + [short(m) for m in metrics], value_rows,
                     title="Metric values per perturbation"))
    share_rows = [[n] + [format_value(study.penalty_share(n, m), 2, fixed=True) for m in metrics]
                  for n in names if n not in ("identity",)]
    report.add(Table(["perturbation"] + [short(m) for m in metrics], share_rows,
                     title="Penalty as a share of a blank prediction's (0 = unnoticed, 1 = as bad as blank)",
                     note="n/a: undefined (metric unavailable, or a perfect prediction scores its cap, as PSNR does)."))
    missing = figures_missing()
    if missing is not None:
        report.add(Paragraph(missing))
    else:
        from vision_bench.bench.plots import plot_sensitivity_heatmap

        matrix = np.array([[study.penalty_share(n, m) for m in metrics] for n in names if n != "identity"])
        heatmap = plot_sensitivity_heatmap(
            np.clip(matrix, 0.0, 1.0), rows=[n for n in names if n != "identity"],
            columns=[short(m) for m in metrics], path=out_dir / PLOTS_DIR / "perturbation_penalty.png",
            title="penalty / blank-prediction penalty",
        )
        report.add(Figure(heatmap, "which metrics notice which perturbation (clipped to [0, 1])"))
    report.add(Heading("Findings", 3))
    report.add(*[Paragraph(line) for line in findings(study)])


def write_correlations(run: str | Path, out_dir: Path, report: Report) -> list[RankCorrelation]:
    columns, splits, who = run_samples(run)
    results = correlation_study(columns, splits)
    header = list(results[0].to_dict())
    _write_csv(out_dir / "correlations.csv", header, [[_csv(v) for v in r.to_dict().values()] for r in results])
    write_json(out_dir / "correlations.json", {"model": who, "correlations": [
        {k: _csv(v) for k, v in r.to_dict().items()} for r in results]})
    report.add(Heading(f"Rank agreement with object-level correctness ({who})"))
    report.add(Paragraph(
        "Spearman's rho and Kendall's tau-b of each pixel / perceptual metric with GA and Obj-PPA over the "
        "run's predictions. 'agreement' is rho oriented so that +1 means the metric ranks predictions exactly "
        "like correctness does (a lower-is-better metric should correlate negatively)."
    ))
    rows = [[r.split, r.reference, r.metric, str(r.n), format_value(r.spearman, 3), format_value(r.kendall, 3),
             format_value(r.agreement, 3), r.note] for r in results]
    report.add(Table(["split", "vs", "metric", "n", "Spearman", "Kendall", "agreement", "note"], rows,
                     title="Rank correlations"))
    groups: dict[str, dict[str, float]] = {f"{r.split} vs {short(r.reference)}": {} for r in results}
    for r in results:
        groups[f"{r.split} vs {short(r.reference)}"][short(r.metric)] = r.agreement
    missing = figures_missing()
    if missing is not None:
        report.add(Paragraph(missing))
        return results
    from vision_bench.bench.plots import plot_correlations

    report.add(Figure(plot_correlations(groups, path=out_dir / PLOTS_DIR / "rank_agreement.png",
                                        title="agreement with correctness (oriented Spearman)"),
                      "oriented Spearman rho per split and correctness measure (hatched grey, n/a: undefined)"))
    return results


def _csv(value: object) -> object:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def run_compare_metrics(
    out_dir: str | Path,
    *,
    targets: Sequence[Target] | None = None,
    spec: RenderSpec | None = None,
    run: str | Path | None = None,
    lpips: torch.nn.Module | str | None = None,
    seed: int = 0,
    ranks: RankViews | None = None,
) -> CompareResult:
    """The model rank views of `ranks` (when given), the perturbation study on `targets` (skipped when None) and,
    with `run`, the correlation study."""
    out_dir = output_folder(Path(out_dir).resolve())  # figures are linked relative to the report, whatever the cwd
    output_folder(out_dir, PLOTS_DIR, make=False)  # the plots never go through a folder link placed there
    report = Report("Which metric should I trust?")
    study = None
    if ranks is not None:
        report.add(Heading(RANKS_TITLE), *write_model_ranks(ranks, out_dir))
    if targets is not None:
        if spec is None:
            raise ValueError("the perturbation study needs the targets' render spec")
        study = perturbation_study(targets, spec, lpips=lpips, seed=seed)
        write_perturbations(study, out_dir, report)
    correlations = write_correlations(run, out_dir, report) if run is not None else []
    report_md, report_html = write_report(report, out_dir)
    return CompareResult(out_dir, study, correlations, report_md, report_html)


__all__ = ["CompareResult", "export_targets", "run_compare_metrics", "study_targets"]
