"""Model-level rank agreement (`compare-metrics --bench`) on hand-computed results."""

import csv
import math
from pathlib import Path

import pytest

from vision_bench.bench.model_ranks import agreement_table, model_rank_agreement, read_results, write_model_ranks
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
    assert "n/a (no group of 3)" in agreement_table(results)


def test_write_model_ranks_outputs(bench: Path, tmp_path: Path) -> None:
    results = model_rank_agreement(read_results([bench]), metrics=["mse", "lpips"])
    report = write_model_ranks(results, tmp_path / "out", [bench])
    assert "(model_ranks.png)" in report.read_text(encoding="utf-8")
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
