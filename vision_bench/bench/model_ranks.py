"""Which metric ranks models the way grid accuracy does? Pairwise agreement over benches' results.csv.

`correlation.py` asks whether a metric orders one run's *samples* like grid accuracy (GA); this
module asks the question a benchmark table raises: whether it orders the *predictors*. Within
each group (one bench, experiment and split) every trained model and seed is a predictor, and so
are the `copy_input` and `mean_target` baselines (`ground_truth` is left out: it is first under
every metric). For each pair of predictors whose GA differs, a metric agrees when it orders them
the same way (its direction taken from the metric registry); a tie in the metric counts as half.
The share of agreeing pairs, pooled over groups, is the answer; Kendall's tau-b per group (groups
of 3 or more predictors), averaged, is given beside it.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
from scipy import stats

from vision_bench.bench.results import CSV_FILE
from vision_bench.errors import ConfigError
from vision_bench.io.documents import JSONDict
from vision_bench.metrics.registry import METRICS, listed_in

REFERENCE = "grid_accuracy"
RANKED_BASELINES = ("copy_input", "mean_target")
"""Baselines ranked with the models; ground_truth is perfect under every metric and would only add easy pairs."""


@dataclass(frozen=True)
class ModelRankAgreement:
    """How one metric orders the predictors GA separates."""

    metric: str
    pairs: int
    agreement: float
    kendall: float
    groups: int

    def to_dict(self) -> JSONDict:
        return asdict(self)


def read_results(bench_dirs: Sequence[Path]) -> list[JSONDict]:
    """The rows of every bench's results.csv, each tagged with its bench folder."""
    rows = []
    for folder in bench_dirs:
        path = Path(folder) / CSV_FILE
        if not path.is_file():
            raise ConfigError(f"{folder} has no {CSV_FILE}; run or collect the bench first "
                              "(`vision-bench bench CONFIG --out DIR` writes it with the report)")
        with open(path, newline="", encoding="utf-8") as handle:
            rows += [{**row, "bench": str(folder)} for row in csv.DictReader(handle)]
    return rows


def _groups(rows: Iterable[JSONDict]) -> dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]]:
    """(bench, experiment, split) -> predictor (model, seed) -> metric -> value, for the ranked predictors."""
    groups: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        is_baseline = str(row["baseline"]).lower() == "true"
        if is_baseline and row["model"] not in RANKED_BASELINES:
            continue
        if row["value"] in ("", None):
            continue
        predictor = (row["model"], str(row["seed"] or ""))
        groups[(row["bench"], row["experiment"], row["split"])][predictor][row["metric"]] = float(row["value"])
    return groups


def _pair_score(metric_a: float, metric_b: float, reference_a: float, reference_b: float,
                lower_is_better: bool) -> float:
    """1 when the metric orders the pair as the reference does, 0 when it reverses it, 0.5 on a metric tie."""
    if metric_a == metric_b:
        return 0.5
    metric_says_a = (metric_a < metric_b) if lower_is_better else (metric_a > metric_b)
    return 1.0 if metric_says_a == (reference_a > reference_b) else 0.0


def model_rank_agreement(
    rows: Iterable[JSONDict], metrics: Sequence[str] | None = None
) -> list[ModelRankAgreement]:
    """Per metric: the share of GA-separated predictor pairs it orders like GA, and the mean per-group tau-b."""
    groups = _groups(rows)
    metrics = listed_in("rank_study") if metrics is None else tuple(metrics)
    results = []
    for metric in metrics:
        lower_is_better = METRICS[metric].direction == "lower"
        scores: list[float] = []
        taus: list[float] = []
        for predictors in groups.values():
            values = [(v[metric], v[REFERENCE]) for v in predictors.values() if metric in v and REFERENCE in v]
            for (m_a, r_a), (m_b, r_b) in combinations(values, 2):
                if r_a != r_b:
                    scores.append(_pair_score(m_a, m_b, r_a, r_b, lower_is_better))
            if len(values) >= 3:
                metric_values, reference = np.array(values).T
                tau = stats.kendalltau(-metric_values if lower_is_better else metric_values, reference).statistic
                if math.isfinite(tau):
                    taus.append(float(tau))
        results.append(ModelRankAgreement(
            metric=metric,
            pairs=len(scores),
            agreement=float(np.mean(scores)) if scores else math.nan,
            kendall=float(np.mean(taus)) if taus else math.nan,
            groups=len(taus),
        ))
    if not any(result.pairs for result in results):
        raise ConfigError("no two predictors of one experiment and split differ in grid accuracy, so no metric can "
                          "be compared with it; add models or seeds to the bench")
    return sorted(results, key=lambda r: (-r.agreement if math.isfinite(r.agreement) else 1.0, r.metric))


def agreement_table(results: Sequence[ModelRankAgreement]) -> str:
    """A markdown table, best-agreeing metric first."""
    lines = ["| metric | GA-separated pairs | ordered like GA | mean Kendall tau-b (groups) |", "|---|---|---|---|"]
    for r in results:
        share = f"{100 * r.agreement:.0f}%" if math.isfinite(r.agreement) else "n/a (no pair)"
        tau = f"{r.kendall:+.2f} ({r.groups})" if math.isfinite(r.kendall) else "n/a (no group of 3)"
        lines.append(f"| {METRICS[r.metric].label} | {r.pairs} | {share} | {tau} |")
    return "\n".join(lines)


def write_model_ranks(results: Sequence[ModelRankAgreement], out_dir: Path, benches: Sequence[Path]) -> Path:
    """model_ranks.csv, model_ranks.png (a bar per metric, when matplotlib is there) and model_ranks.md (the table
    and the plot, or the line saying how to get it) in `out_dir`."""
    from vision_bench.bench.figures import figures_missing
    from vision_bench.io.atomic import atomic_write_text, output_folder

    output_folder(out_dir)
    header = list(ModelRankAgreement.__dataclass_fields__)
    lines = [",".join(header)] + [",".join(str(r.to_dict()[key]) for key in header) for r in results]
    atomic_write_text(out_dir / "model_ranks.csv", "\n".join(lines) + "\n")
    missing = figures_missing()
    if missing is None:
        _plot_agreement(results, out_dir / "model_ranks.png")
    sources = ", ".join(f"`{b}`" for b in benches)
    report = (f"# Which metric ranks models the way grid accuracy does?\n\nFrom the results of {sources}. "
              "Within each experiment and split, every trained model and seed and the copy_input and mean_target "
              "baselines are ranked; a pair counts when their grid accuracies differ.\n\n"
              f"{agreement_table(results)}\n\n{missing or '![model rank agreement](model_ranks.png)'}\n")
    atomic_write_text(out_dir / "model_ranks.md", report)
    return out_dir / "model_ranks.md"


def _plot_agreement(results: Sequence[ModelRankAgreement], path: Path) -> None:
    """A bar per metric: the share of GA-separated pairs it orders like GA (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    from vision_bench.io.atomic import atomic_output

    figure, axes = plt.subplots(figsize=(6.4, 0.45 * len(results) + 1.2))
    labels = [METRICS[r.metric].label for r in results]
    shares = [100 * r.agreement if math.isfinite(r.agreement) else 0.0 for r in results]
    axes.barh(labels, shares, color="#4c72b0")
    for row, r in enumerate(results):
        text = f"{100 * r.agreement:.0f}% of {r.pairs}" if math.isfinite(r.agreement) else "n/a: no pair"
        axes.text(1, row, text, va="center", ha="left", color="white" if shares[row] > 20 else "black")
    axes.axvline(50, color="grey", linestyle="--", linewidth=1)
    axes.set_xlim(0, 100)
    axes.xaxis.set_major_formatter(PercentFormatter())
    axes.invert_yaxis()
    axes.set_xlabel("predictor pairs ordered like grid accuracy (50% = chance)")
    figure.tight_layout()
    with atomic_output(path) as temp:
        figure.savefig(temp, format="png", dpi=110)
    plt.close(figure)
