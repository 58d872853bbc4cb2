"""Which metric ranks models the way grid accuracy does? Three views over benches' results.

`correlation.py` asks whether a metric orders one run's *samples* like grid accuracy (GA); this
module asks the question a benchmark table raises: whether it orders the *predictors*. Within
each group (one bench, experiment and split) every trained model and seed is a predictor, and so
are the `copy_input` and `mean_target` baselines (`ground_truth` is left out: it is first under
every metric). For each pair of predictors whose GA differs, a metric agrees when it orders them
the same way (its direction taken from the metric registry); a tie in the metric counts as half.

- **All pairs**: the share of agreeing pairs, pooled over groups, with Kendall's tau-b per group (groups
  of 3 or more predictors) averaged beside it. Most such pairs set a working model against a broken
  one or a baseline, so this view asks whether a metric tells working from broken.
- **Competent pairs**: the same, over pairs where both are trained runs that pass a gate (a `Gate`
  from `--gate` or the bench's own); baselines never pass. It asks whether a metric ranks models
  that all learned the in-distribution task, the question users bring to a benchmark table.
- **Per sample**: for the same competent pairs, each sample both runs evaluated (samples.parquet rows
  matched by split and index) is a pair of scores, ordered by the metric and by Obj-PPA. A pair with a run
  whose folder holds no samples.parquet (a bench copied with its results.csv alone) is left out and counted.

A view with fewer than `MIN_PAIRS` pairs reports its count instead of a share.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import yaml
from scipy import stats

from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.cells import experiment_dir
from vision_bench.bench.config import BENCH_FILE
from vision_bench.bench.correlation import PairCounts, evaluation_folder, paired_sample_counts, run_samples
from vision_bench.bench.gate import Gate
from vision_bench.bench.report import Block, Figure, Paragraph, Report, Table, to_markdown
from vision_bench.bench.results import CSV_FILE
from vision_bench.errors import ConfigError
from vision_bench.evaluation.outputs import SAMPLES_FILE, safe_name
from vision_bench.evaluation.run import BASELINES
from vision_bench.io.documents import JSONDict
from vision_bench.metrics.registry import METRICS, listed_in

REFERENCE = "grid_accuracy"
SAMPLE_REFERENCE = "object_pixel_accuracy"
"""The per-sample reference. Per-sample GA is 0 or 1, and two competent models are both right on most samples,
so GA ties nearly every sample pair (on the committed benches it separates 39 of 2,000) and the question has
next to no data. Obj-PPA, the share of object cells right, is still object-aware but graded: it orders two
wrong predictions by how much of the objects each got right (195 of those 2,000). Pixel accuracy would separate
as many but counts the background cells that make up most of a grid, which no object error changes much."""
RANKED_BASELINES = ("copy_input", "mean_target")
"""Baselines ranked with the models; ground_truth is perfect under every metric and would only add easy pairs."""
MIN_PAIRS = 3
"""A view with fewer pairs than this reports its count, not a share."""

Run = tuple[str, str, str, str]
"""(bench, experiment, model, seed): one trained run of a bench, as results.csv names it."""


@dataclass(frozen=True)
class ModelRankAgreement:
    """How one metric orders the predictors GA separates; `ga_ties` pairs of the view GA does not separate."""

    metric: str
    pairs: int
    agreement: float
    kendall: float
    groups: int
    ga_ties: int = 0

    def to_dict(self) -> JSONDict:
        return asdict(self)


@dataclass(frozen=True)
class SampleAgreement:
    """How one metric orders the per-sample scores of competent model pairs, against Obj-PPA; `model_pairs` the
    pairs read, `without_samples` the competent pairs left out because a run has no per-sample table."""

    metric: str
    model_pairs: int
    counts: PairCounts
    without_samples: int = 0


@dataclass(frozen=True)
class RankViews:
    """The three views of every metric, and the benches and gates they come from."""

    benches: tuple[str, ...]
    gates: dict[str, str]
    """bench -> the gate its competent runs passed, in words ('' when it has no gate)."""
    all_pairs: list[ModelRankAgreement]
    competent: list[ModelRankAgreement]
    samples: list[SampleAgreement]


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


GATE_FORMS = "METRIC:SPLIT:AT_LEAST, or METRIC:SPLIT:at_least:BOUND / METRIC:SPLIT:at_most:BOUND"
"""What `--gate` takes: a bench gate's `metric`, `split` and one bound (`gate.Gate`) on one line."""


def parse_gate(text: str) -> Gate:
    """`METRIC:SPLIT:AT_LEAST` (as `--gate grid_accuracy:test_id:90`), or with the bound named as a bench gate names
    it, `METRIC:SPLIT:at_most:BOUND` (as `--gate mse:test_id:at_most:0.001`), as a Gate; a one-line ConfigError if
    not. The bare form on a metric that is better lower is refused: at least a bound would pass its worst runs."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) not in (3, 4) or not all(parts) or (len(parts) == 4 and parts[2] not in ("at_least", "at_most")):
        raise ConfigError(f"--gate {text!r}: expected {GATE_FORMS}, e.g. grid_accuracy:test_id:90")
    metric, split, bound = parts[0], parts[1], parts[-1]
    side = parts[2] if len(parts) == 4 else "at_least"
    try:
        value = float(bound)
    except ValueError:
        raise ConfigError(f"--gate {text!r}: the bound {bound!r} is not a number") from None
    if len(parts) == 3 and metric in METRICS and METRICS[metric].direction == "lower":
        raise ConfigError(f"--gate {text!r}: {metric} is better lower, so at least {bound} would make its worst runs "
                          f"competent; give an upper bound, --gate {metric}:{split}:at_most:{bound}")
    return Gate.from_dict({"metric": metric, "split": split, side: value}, source=f"--gate {text!r}")


def bench_gates(bench_dirs: Sequence[Path], gate: Gate | None = None) -> dict[str, Gate | None]:
    """bench -> the gate its runs must pass: `gate` when given, else the `gate` of the bench's bench.yaml."""
    gates: dict[str, Gate | None] = {}
    for folder in bench_dirs:
        path = Path(folder) / BENCH_FILE
        stated = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("gate") if path.is_file() else None
        gates[str(folder)] = gate or (None if stated is None else Gate.from_dict(stated, source=f"{path}: gate"))
    return gates


def check_gates(gates: dict[str, Gate | None], rows: Iterable[JSONDict]) -> None:
    """Refuse a gate no run of its bench could pass: a split or metric missing from the bench's results."""
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for row in rows:
        seen[row["bench"]].add((row["split"], row["metric"]))
    for bench, gate in gates.items():
        if gate is None:
            continue
        splits = sorted({split for split, _ in seen[bench]})
        if gate.split not in splits:
            raise ConfigError(f"gate split {gate.split!r} is not in {bench}'s results (splits: {', '.join(splits)})")
        if (gate.split, gate.metric) not in seen[bench]:
            raise ConfigError(f"gate metric {gate.metric!r} is not in {bench}'s results on {gate.split}")


def _is_baseline(row: JSONDict) -> bool:
    return str(row["baseline"]).lower() == "true" or row["model"] in BASELINES


def _run(row: JSONDict) -> Run:
    return (row["bench"], row["experiment"], row["model"], str(row["seed"] or ""))


def competent_runs(rows: Iterable[JSONDict], gates: dict[str, Gate | None]) -> set[Run]:
    """The trained runs whose value of their bench's gate metric on its split passes it; baselines never do."""
    passed = set()
    for row in rows:
        gate = gates.get(row["bench"])
        if gate is None or _is_baseline(row) or (row["split"], row["metric"]) != (gate.split, gate.metric):
            continue
        value = math.nan if row["value"] in ("", None) else float(row["value"])
        cell = CellResult(row["model"], row["experiment"], "", None, False, {gate.split: {gate.metric: value}})
        if gate.passes(cell):
            passed.add(_run(row))
    return passed


Groups = dict[tuple[str, str, str], dict[Run, dict[str, float]]]
"""(bench, experiment, split) -> run -> metric -> value."""


def _groups(rows: Iterable[JSONDict], keep: Callable[[JSONDict], bool]) -> Groups:
    """The values of the predictors `keep` accepts, grouped by bench, experiment and split."""
    groups: Groups = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        if row["value"] in ("", None) or not keep(row):
            continue
        groups[(row["bench"], row["experiment"], row["split"])][_run(row)][row["metric"]] = float(row["value"])
    return groups


def _ranked(row: JSONDict) -> bool:
    """Every trained run and the RANKED_BASELINES."""
    return not _is_baseline(row) or row["model"] in RANKED_BASELINES


def _pair_score(metric_a: float, metric_b: float, reference_a: float, reference_b: float,
                lower_is_better: bool) -> float:
    """1 when the metric orders the pair as the reference does, 0 when it reverses it, 0.5 on a metric tie."""
    if metric_a == metric_b:
        return 0.5
    metric_says_a = (metric_a < metric_b) if lower_is_better else (metric_a > metric_b)
    return 1.0 if metric_says_a == (reference_a > reference_b) else 0.0


def _agreement(groups: Groups, metric: str) -> ModelRankAgreement:
    """One metric over the GA-separated pairs of `groups`: pooled share, mean tau-b, and the pairs GA ties."""
    lower_is_better = METRICS[metric].direction == "lower"
    scores: list[float] = []
    taus: list[float] = []
    ties = 0
    for predictors in groups.values():
        values = [(v[metric], v[REFERENCE]) for v in predictors.values() if metric in v and REFERENCE in v]
        for (m_a, r_a), (m_b, r_b) in combinations(values, 2):
            if r_a != r_b:
                scores.append(_pair_score(m_a, m_b, r_a, r_b, lower_is_better))
            else:
                ties += 1
        if len(values) >= 3:
            metric_values, reference = np.array(values).T
            tau = stats.kendalltau(-metric_values if lower_is_better else metric_values, reference).statistic
            if math.isfinite(tau):
                taus.append(float(tau))
    return ModelRankAgreement(metric, len(scores), float(np.mean(scores)) if scores else math.nan,
                              float(np.mean(taus)) if taus else math.nan, len(taus), ties)


def model_rank_agreement(
    rows: Iterable[JSONDict], metrics: Sequence[str] | None = None
) -> list[ModelRankAgreement]:
    """All pairs, per metric: the share of GA-separated predictor pairs it orders like GA, and the mean tau-b;
    best-agreeing metric first."""
    groups = _groups(rows, _ranked)
    metrics = listed_in("rank_study") if metrics is None else tuple(metrics)
    results = [_agreement(groups, metric) for metric in metrics]
    if not any(result.pairs for result in results):
        raise ConfigError("no two predictors of one experiment and split differ in grid accuracy, so no metric can "
                          "be compared with it; add models or seeds to the bench")
    return sorted(results, key=lambda r: (-r.agreement if math.isfinite(r.agreement) else 1.0, r.metric))


def competent_rank_agreement(
    rows: Iterable[JSONDict], competent: set[Run], metrics: Sequence[str] | None = None
) -> list[ModelRankAgreement]:
    """As `model_rank_agreement`, over the pairs of `competent` runs only (in the order of `metrics`)."""
    groups = _groups(rows, lambda row: _run(row) in competent)
    return [_agreement(groups, metric) for metric in (listed_in("rank_study") if metrics is None else metrics)]


def run_folder(run: Run) -> Path:
    """BENCH/runs/EXPERIMENT/MODEL/seedS, where the bench evaluated the run (`cells.run_dir`)."""
    bench, experiment, model, seed = run
    return Path(bench) / "runs" / experiment_dir(experiment) / safe_name(model) / f"seed{seed}"


def competent_pairs(rows: Iterable[JSONDict], competent: set[Run]) -> list[tuple[str, Run, Run]]:
    """(split, run A, run B) for every pair of competent runs of one bench and experiment, per split evaluated."""
    groups = _groups(rows, lambda row: _run(row) in competent)
    return [(split, a, b) for (_, _, split), runs in sorted(groups.items()) for a, b in combinations(sorted(runs), 2)]


Samples = dict[tuple[str, int], dict[str, float]]
"""(split, index) -> metric -> one run's per-sample value."""


def _samples(run: Run) -> Samples | None:
    """The run's per-sample values, from its samples.parquet; None when its folder holds none."""
    folder = run_folder(run)
    if not (evaluation_folder(folder) / SAMPLES_FILE).is_file():
        return None
    columns, splits, _ = run_samples(folder)
    return {(str(split), int(index)): {name: float(values[row]) for name, values in columns.items()}
            for row, (split, index) in enumerate(zip(splits, columns["index"], strict=True))}


def _paired(a: Samples, b: Samples, keys: Sequence[tuple[str, int]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Run A's and run B's values of `name` on the samples `keys` (NaN where a run has no such column)."""
    values_a, values_b = ([run[key].get(name, math.nan) for key in keys] for run in (a, b))
    return np.array(values_a), np.array(values_b)


def sample_agreement(
    pairs: Sequence[tuple[str, Run, Run]], metrics: Sequence[str] | None = None
) -> list[SampleAgreement]:
    """Per metric: how often it orders two competent runs' scores on one sample as Obj-PPA does, pooled over
    `pairs` (samples matched by split and index); Obj-PPA ties are left out and counted, and so are the pairs with a
    run that has no samples.parquet."""
    metrics = listed_in("rank_study") if metrics is None else tuple(metrics)
    cache: dict[Run, Samples | None] = {}
    counts = {metric: PairCounts() for metric in metrics}
    unread = 0
    for split, run_a, run_b in pairs:
        for run in (run_a, run_b):
            if run not in cache:
                cache[run] = _samples(run)
        a, b = cache[run_a], cache[run_b]
        if a is None or b is None:
            unread += 1
            continue
        keys = [key for key in a if key[0] == split and key in b]
        reference = _paired(a, b, keys, SAMPLE_REFERENCE)
        for metric in metrics:
            counts[metric] += paired_sample_counts(_paired(a, b, keys, metric), reference,
                                                   lower_is_better=METRICS[metric].direction == "lower")
    return [SampleAgreement(metric, len(pairs) - unread, counts[metric], unread) for metric in metrics]


def rank_views(bench_dirs: Sequence[Path], gate: Gate | None = None,
               metrics: Sequence[str] | None = None) -> RankViews:
    """All three views over the benches; `gate` replaces each bench's own (benches without either have no
    competent run)."""
    rows = read_results(bench_dirs)
    gates = bench_gates(bench_dirs, gate)
    check_gates(gates, rows)
    competent = competent_runs(rows, gates)
    all_pairs = model_rank_agreement(rows, metrics)
    order = [r.metric for r in all_pairs]
    return RankViews(
        benches=tuple(str(b) for b in bench_dirs),
        gates={bench: "" if g is None else g.describe() for bench, g in gates.items()},
        all_pairs=all_pairs,
        competent=competent_rank_agreement(rows, competent, order),
        samples=sample_agreement(competent_pairs(rows, competent), order),
    )


def _share(agreement: float, pairs: int) -> str:
    """The share as a percentage, or why there is none."""
    if pairs < MIN_PAIRS:
        return f"n/a ({pairs} pair{'' if pairs == 1 else 's'}, fewer than {MIN_PAIRS})"
    return f"{100 * agreement:.0f}%"


def _tau(r: ModelRankAgreement) -> str:
    return f"{r.kendall:+.2f} ({r.groups})" if math.isfinite(r.kendall) else "n/a (no group of 3)"


def views_table(views: RankViews) -> Table:
    """One row per metric: the all-pairs, competent-pairs and per-sample views side by side, with their counts."""
    competent = {r.metric: r for r in views.competent}
    samples = {s.metric: s for s in views.samples}
    rows = []
    for r in views.all_pairs:
        c, s = competent[r.metric], samples[r.metric].counts
        rows.append([METRICS[r.metric].label, str(r.pairs), _share(r.agreement, r.pairs), _tau(r),
                     str(c.pairs), _share(c.agreement, c.pairs), _tau(c),
                     str(s.separated), _share(s.agreement, s.separated), str(s.reference_ties)])
    columns = ["metric", "pairs", "like GA", "mean tau-b (groups)", "pairs", "like GA", "mean tau-b (groups)",
               "sample pairs", "like Obj-PPA", "Obj-PPA ties left out"]
    return Table(columns, rows, groups=[("all:", 3), ("competent:", 3), ("per sample:", 3)])


def _gates_text(views: RankViews) -> str:
    """Which gate made a run competent in each bench, or that a bench had none."""
    stated = {gate for gate in views.gates.values() if gate}
    ungated = [f"`{bench}`" for bench, gate in views.gates.items() if not gate]
    text = f"Competent: a trained run that passes its gate ({'; '.join(sorted(stated))})." if stated else (
        "No bench has a gate.")
    if ungated:
        text += (f" Without a gate, {', '.join(ungated)} add{'s' if len(ungated) == 1 else ''} no competent run "
                 "(`--gate METRIC:SPLIT:AT_LEAST` sets one).")
    return text


def rank_blocks(views: RankViews, figure: Path | None, missing: str | None) -> list[Block]:
    """What each view answers, the side-by-side table and the figure (or the line saying why it is missing)."""
    all_pairs = max(r.pairs for r in views.all_pairs)
    competent = max(r.pairs for r in views.competent)
    ga_ties = max(r.ga_ties for r in views.competent)
    model_pairs, unread = views.samples[0].model_pairs, views.samples[0].without_samples
    left_out = "" if not unread else (
        f" {unread} competent pair{' has a run' if unread == 1 else 's have a run'} without a per-sample table "
        "(evaluation/samples.parquet), left out of this view.")
    blocks: list[Block] = [
        Paragraph(f"From the results of {', '.join(f'`{b}`' for b in views.benches)}. A pair is two predictors of one "
                  "experiment and split; it counts when their grid accuracies (GA) differ, a metric tie as half. "
                  + _gates_text(views)),
        Paragraph("**All pairs** (every trained model and seed, and the copy_input and mean_target baselines; "
                  f"{all_pairs} pairs GA separates): does the metric tell working models from "
                  "broken ones and baselines? "
                  f"**Competent pairs** ({competent} GA-separated pairs and {ga_ties} GA ties among the pairs "
                  "where both pass the gate; baselines never do): does it rank "
                  "models that all learned the in-distribution task, as GA does? "
                  f"**Per sample** ({model_pairs} competent model pairs, each sample both "
                  "evaluated a pair): does it pick the better of two competent models' predictions of one sample, "
                  "as Obj-PPA (the share of object cells right) does? Samples Obj-PPA ties are left out and counted."
                  + left_out),
        views_table(views),
    ]
    if figure is not None:
        blocks.append(Figure(figure, "model rank agreement"))
    elif missing:
        blocks.append(Paragraph(missing))
    return blocks


def _csv_rows(views: RankViews) -> list[list[object]]:
    """One row per metric: the numbers behind `views_table`, shares as fractions (NaN without a pair)."""
    competent = {r.metric: r for r in views.competent}
    samples = {s.metric: s for s in views.samples}
    rows: list[list[object]] = []
    for r in views.all_pairs:
        c, s = competent[r.metric], samples[r.metric]
        rows.append([r.metric, r.pairs, r.agreement, r.kendall, r.groups, c.pairs, c.agreement, c.ga_ties,
                     s.model_pairs, s.counts.separated, s.counts.agreement, s.counts.reference_ties,
                     s.counts.metric_ties])
    return rows


CSV_HEADER = ("metric", "pairs", "agreement", "kendall", "groups", "competent_pairs", "competent_agreement",
              "competent_ga_ties", "sample_model_pairs", "sample_pairs", "sample_agreement", "sample_reference_ties",
              "sample_metric_ties")


TITLE = "Which metric ranks models the way grid accuracy does?"


def views_markdown(views: RankViews) -> str:
    """The side-by-side table as markdown, for the terminal."""
    report = Report(TITLE)
    report.add(views_table(views))
    return to_markdown(report, Path.cwd())


def write_model_ranks(views: RankViews, out_dir: Path) -> list[Block]:
    """model_ranks.csv, model_ranks.png (when matplotlib is there) and model_ranks.md in `out_dir`; returns the
    report blocks, for the compare-metrics report to show the same views."""
    from vision_bench.bench.figures import figures_missing
    from vision_bench.io.atomic import atomic_write_text, output_folder

    output_folder(out_dir)
    lines = [",".join(CSV_HEADER)] + [",".join(str(value) for value in row) for row in _csv_rows(views)]
    atomic_write_text(out_dir / "model_ranks.csv", "\n".join(lines) + "\n")
    missing = figures_missing()
    figure = None if missing is not None else _plot_agreement(views, out_dir / "model_ranks.png")
    report = Report(TITLE)
    blocks = rank_blocks(views, figure, missing)
    report.add(*blocks)
    atomic_write_text(out_dir / "model_ranks.md", to_markdown(report, out_dir))
    return blocks


def _plot_agreement(views: RankViews, path: Path) -> Path:
    """Three bars per metric: the share of pairs it orders like the reference in each view (none under
    MIN_PAIRS pairs) (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    from vision_bench.io.atomic import atomic_output

    competent = {r.metric: r for r in views.competent}
    samples = {s.metric: s.counts for s in views.samples}
    series = [("all pairs vs GA", [(r.agreement, r.pairs) for r in views.all_pairs], "#4c72b0"),
              ("competent pairs vs GA", [(competent[r.metric].agreement, competent[r.metric].pairs)
                                         for r in views.all_pairs], "#dd8452"),
              ("per sample vs Obj-PPA", [(samples[r.metric].agreement, samples[r.metric].separated)
                                         for r in views.all_pairs], "#55a868")]
    figure, axes = plt.subplots(figsize=(6.4, 0.75 * len(views.all_pairs) + 1.6))
    height = 0.27
    for offset, (label, values, color) in enumerate(series):
        rows = np.arange(len(values)) + (offset - 1) * height
        shares = [100 * share if n >= MIN_PAIRS and math.isfinite(share) else 0.0 for share, n in values]
        axes.barh(rows, shares, height=height, color=color, label=label)
        for row, (share, n), share_of_bar in zip(rows, values, shares, strict=True):
            text = f"{100 * share:.0f}% of {n}" if n >= MIN_PAIRS and math.isfinite(share) else f"n/a: {n} pairs"
            axes.text(1, row, text, va="center", ha="left", fontsize=7, color="white" if share_of_bar > 20 else "black")
    axes.set_yticks(np.arange(len(views.all_pairs)), [METRICS[r.metric].label for r in views.all_pairs])
    axes.axvline(50, color="grey", linestyle="--", linewidth=1)
    axes.set_xlim(0, 100)
    axes.xaxis.set_major_formatter(PercentFormatter())
    axes.invert_yaxis()
    axes.set_xlabel("pairs ordered like the reference (50% = chance)")
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=7, frameon=False)
    figure.tight_layout()
    with atomic_output(path) as temp:
        figure.savefig(temp, format="png", dpi=110)
    plt.close(figure)
    return path
