"""Model-level rank agreement (`compare-metrics --bench`) on hand-computed results: all pairs, competent pairs
and per sample."""

import csv
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_errors import cli_error

from vision_bench.bench.correlation import PairCounts, paired_sample_counts
from vision_bench.bench.model_ranks import (
    RankViews,
    SampleAgreement,
    bench_gates,
    competent_rank_agreement,
    competent_runs,
    model_rank_agreement,
    parse_gate,
    rank_views,
    read_results,
    views_markdown,
    write_model_ranks,
)
from vision_bench.errors import ConfigError

COLUMNS = ("model", "study", "experiment", "seed", "split", "metric", "value", "baseline")


def write_results(folder: Path, predictors: dict[tuple[str, str, bool], dict[str, object]]) -> Path:
    folder.mkdir(parents=True)
    with open(folder / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for (model, seed, baseline), metrics in predictors.items():
            for metric, value in metrics.items():
                writer.writerow([model, "envgen/G1", "envgen/G1/1", seed, "test_ood", metric, value,
                                 str(baseline).lower()])
    return folder


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    return write_results(tmp_path / "bench", {
        ("A", "0", False): {"grid_accuracy": 100, "mse": 0.01, "lpips": 0.1},
        ("B", "0", False): {"grid_accuracy": 50, "mse": 0.02, "lpips": 0.2},
        ("C", "0", False): {"grid_accuracy": 0, "mse": 0.005, "lpips": ""},  # LPIPS unavailable for C
        ("copy_input", "", True): {"grid_accuracy": 0, "mse": 0.03, "lpips": 0.4},
        ("ground_truth", "", True): {"grid_accuracy": 100, "mse": 0.0, "lpips": 0.0},  # never ranked
    })


def test_pairwise_agreement_and_kendall_by_hand(bench: Path) -> None:
    results = {r.metric: r for r in model_rank_agreement(read_results([bench]), metrics=["mse", "lpips"])}
    # GA separates A-B, A-C, A-copy, B-C, B-copy; MSE orders A-B, A-copy, B-copy like GA, A-C and B-C against it
    assert results["mse"].pairs == 5
    assert results["mse"].agreement == pytest.approx(3 / 5)
    # tau-b on (-mse, GA): 3 concordant, 2 discordant, 1 pair tied in GA only -> 1 / sqrt(6 * 5)
    assert results["mse"].kendall == pytest.approx(1 / math.sqrt(30))
    assert results["mse"].groups == 1
    # without C, LPIPS orders A > B > copy exactly as GA does
    assert (results["lpips"].pairs, results["lpips"].agreement, results["lpips"].kendall) == (3, 1.0, 1.0)


def test_metric_ties_count_half_and_best_metric_comes_first(tmp_path: Path) -> None:
    folder = write_results(tmp_path / "b", {
        ("A", "0", False): {"grid_accuracy": 100, "mse": 0.01, "ssim": 0.9},
        ("B", "1", False): {"grid_accuracy": 0, "mse": 0.01, "ssim": 0.5},
    })
    results = model_rank_agreement(read_results([folder]), metrics=["mse", "ssim"])
    assert [(r.metric, r.agreement) for r in results] == [("ssim", 1.0), ("mse", 0.5)]
    assert math.isnan(results[0].kendall)  # two predictors: no group of 3
    samples = [SampleAgreement(r.metric, 0, PairCounts()) for r in results]
    assert "n/a (no group of 3)" in views_markdown(RankViews(("b",), {"b": ""}, results, results, samples))


def test_write_model_ranks_outputs(bench: Path, tmp_path: Path) -> None:
    views = rank_views([bench], parse_gate("grid_accuracy:test_ood:100"), metrics=["mse", "lpips"])
    write_model_ranks(views, tmp_path / "out")
    report = (tmp_path / "out" / "model_ranks.md").read_text(encoding="utf-8")
    assert "(model_ranks.png)" in report and "**Competent pairs**" in report and "**Per sample**" in report
    # only A passes: no competent pair, and the view says so instead of a share
    assert "n/a (0 pairs, fewer than 3)" in report
    assert (tmp_path / "out" / "model_ranks.png").stat().st_size > 0
    assert (tmp_path / "out" / "model_ranks.csv").read_text(encoding="utf-8").startswith("metric,pairs,agreement")


def test_missing_results_and_no_separated_pair_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no results.csv"):
        read_results([tmp_path])
    folder = write_results(tmp_path / "tied", {
        ("A", "0", False): {"grid_accuracy": 100, "mse": 0.01},
        ("B", "0", False): {"grid_accuracy": 100, "mse": 0.02},
    })
    with pytest.raises(ConfigError, match="no two predictors"):
        model_rank_agreement(read_results([folder]), metrics=["mse"])


# ----------------------------------------------------------------------------- the competence gate

MODEL = "CNN (unet:test_resnet)"
FOLDER = "CNN_unet_test_resnet"  # how a bench names the model's run folder


def write_rows(folder: Path, rows: list[tuple[str, str, str, str, str, object]], gate: str | None = None) -> Path:
    """A bench folder: results.csv from (model, seed, baseline, split, metric, value) rows of experiment envgen/G1/1,
    and a bench.yaml holding `gate` when given."""
    folder.mkdir(parents=True)
    with open(folder / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for model, seed, baseline, split, metric, value in rows:
            writer.writerow([model, "envgen/G1", "envgen/G1/1", seed, split, metric, value, baseline])
    if gate is not None:
        (folder / "bench.yaml").write_text(f"name: b\ngate: {gate}\n", encoding="utf-8")
    return folder


def ranked(model: str, seed: str, id_ga: float, ood: dict[str, float], baseline: str = "false") -> list:
    """A predictor's rows: its in-distribution GA (what the gate reads) and its OOD values (what is ranked)."""
    return [(model, seed, baseline, "test_id", "grid_accuracy", id_ga)] + [
        (model, seed, baseline, "test_ood", metric, value) for metric, value in ood.items()]


@pytest.fixture
def gated_bench(tmp_path: Path) -> Path:
    """Three models pass ID GA >= 90 (A, B, D), C fails it; copy_input and mean_target never count as competent.
    On OOD, MSE orders A > B > D like GA; C and the baselines would add pairs MSE reverses."""
    return write_rows(tmp_path / "bench", [
        *ranked("A", "0", 100, {"grid_accuracy": 90, "mse": 0.001}),
        *ranked("B", "0", 95, {"grid_accuracy": 60, "mse": 0.002}),
        *ranked("D", "1", 90, {"grid_accuracy": 30, "mse": 0.003}),
        *ranked("C", "0", 89.5, {"grid_accuracy": 95, "mse": 0.01}),  # fails the gate by half a point
        *ranked("copy_input", "", 0, {"grid_accuracy": 0, "mse": 0.0005}, "true"),
        *ranked("mean_target", "", 0, {"grid_accuracy": 0, "mse": 0.0001}, "true"),
    ])


def test_a_run_that_fails_the_gate_and_the_baselines_leave_the_competent_view(gated_bench: Path) -> None:
    rows = read_results([gated_bench])
    competent = competent_runs(rows, bench_gates([gated_bench], parse_gate("grid_accuracy:test_id:90")))
    assert {run[2] for run in competent} == {"A", "B", "D"}
    [view] = competent_rank_agreement(rows, competent, ["mse"])
    # test_id: A, B, D differ in GA (100, 95, 90) and MSE is missing there; test_ood: 3 pairs, all like GA
    assert (view.pairs, view.agreement, view.kendall, view.groups, view.ga_ties) == (3, 1.0, 1.0, 1, 0)
    [everything] = model_rank_agreement(rows, ["mse"])
    # all pairs: 15 predictor pairs on test_ood (6 predictors; the two baselines tie in GA); MSE orders every
    # pair with C or a baseline against GA, so only the 3 competent pairs of the 14 agree
    assert (everything.pairs, everything.ga_ties) == (14, 1)
    assert everything.agreement == pytest.approx(3 / 14)


def test_the_bench_gate_is_the_default_and_a_bench_without_one_has_no_competent_run(tmp_path: Path) -> None:
    rows = ranked("A", "0", 100, {"grid_accuracy": 90}) + ranked("B", "0", 50, {"grid_accuracy": 60})
    stated = write_rows(tmp_path / "stated", rows, gate="{metric: grid_accuracy, split: test_id, at_least: 40}")
    bare = write_rows(tmp_path / "bare", rows)
    gates = bench_gates([stated, bare])
    assert gates[str(stated)] is not None and gates[str(stated)].at_least == 40 and gates[str(bare)] is None
    assert {run[0] for run in competent_runs(read_results([stated, bare]), gates)} == {str(stated)}
    overridden = bench_gates([stated, bare], parse_gate("grid_accuracy:test_id:90"))
    assert {run[2] for run in competent_runs(read_results([stated, bare]), overridden)} == {"A"}


@pytest.mark.parametrize(("text", "needle"), [
    ("grid_accuracy:test_id", "expected METRIC:SPLIT:AT_LEAST"),
    ("grid_accuracy::90", "expected METRIC:SPLIT:AT_LEAST"),
    ("grid_accuracy:test_id:ninety", "'ninety' is not a number"),
    ("grid_acuracy:test_id:90", "unknown metric 'grid_acuracy'"),
    ("grid_accuracy:test_id:inf", "finite number"),
    ("grid_accuracy:test_id:above:90", "expected METRIC:SPLIT:AT_LEAST"),
    ("grid_accuracy:test_id:at_most:90:1", "expected METRIC:SPLIT:AT_LEAST"),
])
def test_a_bad_gate_is_refused_in_one_line(text: str, needle: str, gated_bench: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_gate(text)
    cli_error(["compare-metrics", "--out", tmp_path / "out", "--bench", gated_bench, "--gate", text], capsys,
              "--gate", needle)
    assert not (tmp_path / "out").exists()


def test_a_bare_gate_on_a_metric_that_is_better_lower_is_refused_and_at_most_is_kept(
        gated_bench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mse:test_ood:0.005` would read "MSE at least 0.005": C, the worst by MSE, the only competent run."""
    cli_error(["compare-metrics", "--out", tmp_path / "out", "--bench", gated_bench, "--gate", "mse:test_ood:0.005"],
              capsys, "--gate", "mse is better lower", "mse:test_ood:at_most:0.005")
    assert not (tmp_path / "out").exists()
    at_most = parse_gate("mse:test_ood:at_most:0.005")
    assert (at_most.at_most, at_most.at_least) == (0.005, None)
    rows = read_results([gated_bench])
    assert {run[2] for run in competent_runs(rows, bench_gates([gated_bench], at_most))} == {"A", "B", "D"}
    assert parse_gate("grid_accuracy:test_id:at_least:90") == parse_gate("grid_accuracy:test_id:90")
    assert parse_gate("mse:test_ood:at_least:0.005").at_least == 0.005  # named, as a bench gate may name it


def test_a_gate_on_a_split_or_metric_the_bench_lacks_is_refused(gated_bench: Path) -> None:
    with pytest.raises(ConfigError, match="split 'val_id' is not in .*splits: test_id, test_ood"):
        rank_views([gated_bench], parse_gate("grid_accuracy:val_id:90"), metrics=["mse"])
    with pytest.raises(ConfigError, match="metric 'ssim' is not in"):
        rank_views([gated_bench], parse_gate("ssim:test_id:0.5"), metrics=["mse"])


def test_gate_without_bench_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli_error(["compare-metrics", "--out", tmp_path / "out", "--gate", "grid_accuracy:test_id:90"], capsys,
              "add --bench")


# ----------------------------------------------------------------------------- per sample


def test_paired_sample_counts_by_hand() -> None:
    reference = (np.array([1.0, 0.5, 0.8, 0.3, 0.9, np.nan]), np.array([1.0, 0.6, 0.4, 0.3, 0.2, 0.1]))
    mse = (np.array([0.0, 0.02, 0.01, 0.05, 0.03, 0.0]), np.array([0.0, 0.01, 0.03, 0.02, 0.03, 0.0]))
    # reference ties on samples 0 and 3 (left out, counted); NaN on sample 5 (left out); of 1, 2, 4 MSE orders
    # 1 and 2 like the reference and ties on 4 (half)
    assert paired_sample_counts(mse, reference, lower_is_better=True) == PairCounts(2.5, 3, 1, 2)
    assert paired_sample_counts(mse, reference, lower_is_better=False) == PairCounts(0.5, 3, 1, 2)
    psnr = (np.array([np.inf, np.inf]), np.array([np.inf, 30.0]))
    assert paired_sample_counts(psnr, (np.array([1.0, 1.0]), np.array([0.5, 0.5])),
                                lower_is_better=False) == PairCounts(1.5, 2, 1, 0)  # inf against inf is a tie
    assert math.isnan(PairCounts().agreement)


def write_samples(bench: Path, seed: str, samples: dict[tuple[str, int], tuple[float, float, float]]) -> None:
    """The run's evaluation: samples.parquet rows (split, index) -> (Obj-PPA, MSE, LPIPS), plus a copy_input row on
    every sample whose values would change the answer if it were read as the model's."""
    folder = bench / "runs" / "envgen_G1_1" / FOLDER / f"seed{seed}" / "evaluation"
    folder.mkdir(parents=True)
    keys = list(samples)
    values = np.array([samples[key] for key in keys])
    table = {"predictor": ["unet:test_resnet"] * len(keys) + ["copy_input"] * len(keys),
             "split": [k[0] for k in keys] * 2, "index": [k[1] for k in keys] * 2,
             "sequence": [["translate_up"]] * (2 * len(keys)),
             "object_pixel_accuracy": np.concatenate([values[:, 0], 1 - values[:, 0]]),
             "mse": np.concatenate([values[:, 1], values[:, 1]]), "lpips": np.concatenate([values[:, 2], values[:, 2]])}
    pq.write_table(pa.table(table), folder / "samples.parquet")
    (folder / "metrics.json").write_text(json.dumps({"format": "vision-bench-evaluation",
                                                     "model": "unet:test_resnet"}))


@pytest.fixture
def sampled_bench(tmp_path: Path) -> Path:
    """Seeds 0 and 1 of one model pass the gate, seed 2 fails it; per-sample tables with a known answer."""
    folder = write_rows(tmp_path / "bench", [
        *ranked(MODEL, "0", 100, {"grid_accuracy": 50, "mse": 0.01, "lpips": 0.1}),
        *ranked(MODEL, "1", 100, {"grid_accuracy": 40, "mse": 0.02, "lpips": 0.2}),
        *ranked(MODEL, "2", 10, {"grid_accuracy": 0, "mse": 0.03, "lpips": 0.3}),
    ], gate="{metric: grid_accuracy, split: test_id, at_least: 90}")
    write_samples(folder, "0", {
        ("test_ood", 0): (1.0, 0.00, 0.0), ("test_ood", 1): (0.5, 0.02, 0.2), ("test_ood", 2): (0.8, 0.01, 0.05),
        ("test_ood", 3): (0.3, 0.05, 0.1), ("test_ood", 4): (0.9, 0.03, np.nan),
        ("test_ood", 5): (0.0, 0.09, 0.9),  # seed 1 did not evaluate sample 5: left out
        ("test_id", 0): (1.0, 0.0, 0.0),
    })
    write_samples(folder, "1", {
        ("test_ood", 0): (1.0, 0.00, 0.0), ("test_ood", 1): (0.6, 0.01, 0.3), ("test_ood", 2): (0.4, 0.03, 0.1),
        ("test_ood", 3): (0.3, 0.02, 0.1), ("test_ood", 4): (0.2, 0.03, 0.1),
        ("test_id", 0): (0.5, 0.0, 0.0),  # the test_id pair: Obj-PPA separates it, MSE ties it
    })
    write_samples(folder, "2", {("test_ood", i): (1.0, 0.0, 0.0) for i in range(5)})  # fails the gate: never read
    return folder


def test_per_sample_agreement_on_competent_runs_by_hand(sampled_bench: Path) -> None:
    views = rank_views([sampled_bench], metrics=["mse", "lpips"])
    samples = {s.metric: s for s in views.samples}
    # competent pairs: seeds 0 and 1, on test_id and test_ood
    assert samples["mse"].model_pairs == 2
    # test_ood: Obj-PPA ties samples 0 and 3; of 1, 2, 4 MSE agrees on 1 and 2 and ties 4; test_id: one pair, an
    # MSE tie. Sample 5 (seed 0 only) and seed 2 (failed the gate) are not read.
    assert samples["mse"].counts == PairCounts(agree=3.0, separated=4, metric_ties=2, reference_ties=2)
    # LPIPS: sample 1 reversed, sample 2 agrees, sample 4 is NaN for seed 0 (left out); test_id: a tie
    assert samples["lpips"].counts == PairCounts(agree=1.5, separated=3, metric_ties=1, reference_ties=2)
    table = views_markdown(views)
    assert "| 4 | 75% | 2 |" in table and "| 3 | 50% | 2 |" in table


def test_the_compare_metrics_report_shows_the_three_views_side_by_side(sampled_bench: Path, tmp_path: Path) -> None:
    from vision_bench.bench.compare_report import run_compare_metrics

    result = run_compare_metrics(tmp_path / "out", ranks=rank_views([sampled_bench], metrics=["mse", "lpips"]))
    assert result.report_md is not None
    report = result.report_md.read_text(encoding="utf-8")
    assert "| metric | all: pairs | all: like GA |" in report and "| competent: pairs | competent: like GA |" in report
    assert "per sample: like Obj-PPA | per sample: Obj-PPA ties left out |" in report
    for answer in ("does the metric tell working models from broken ones", "does it rank models that all learned",
                   "does it pick the better of two competent models' predictions"):
        assert answer in report
    assert "(grid_accuracy on test_id >= 90)" in report and "](model_ranks.png)" in report


def test_a_competent_run_without_a_per_sample_table_leaves_its_pairs_out_and_says_so(sampled_bench: Path,
                                                                                     tmp_path: Path) -> None:
    """Seed 3 passes the gate but its folder holds no samples.parquet (a bench copied with results.csv alone): its
    pairs with seeds 0 and 1, on two splits, are left out and counted; seeds 0 and 1 are read as before."""
    from vision_bench.bench.compare_report import run_compare_metrics

    with open(sampled_bench / "results.csv", "a", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for model, seed, baseline, split, metric, value in ranked(MODEL, "3", 100, {"grid_accuracy": 45, "mse": 0.015,
                                                                                    "lpips": 0.15}):
            writer.writerow([model, "envgen/G1", "envgen/G1/1", seed, split, metric, value, baseline])
    views = rank_views([sampled_bench], metrics=["mse", "lpips"])
    samples = {s.metric: s for s in views.samples}
    assert (samples["mse"].model_pairs, samples["mse"].without_samples) == (2, 4)
    assert samples["mse"].counts == PairCounts(agree=3.0, separated=4, metric_ties=2, reference_ties=2)
    result = run_compare_metrics(tmp_path / "out", ranks=views)
    assert result.report_md is not None
    assert "4 competent pairs have a run without a per-sample table" in result.report_md.read_text(encoding="utf-8")
