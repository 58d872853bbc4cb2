"""Evaluation: baselines as floor and ceiling, per-sample tables, sheets, and `vision-bench evaluate`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from render.spec import RenderSpec  # noqa: E402
from vision_bench.data.onthefly import OnTheFlyDataset  # noqa: E402
from vision_bench.evaluation import EvaluationData, build_baselines, evaluate_predictors, pick_device  # noqa: E402
from vision_bench.evaluation.core import Extremes, aggregate  # noqa: E402
from vision_bench.evaluation.data import training_sequences  # noqa: E402
from vision_bench.tasks.config import TaskConfig, experiment_canvas  # noqa: E402
from vision_bench.tasks.grid import extract_objects  # noqa: E402
from vision_bench.tasks.sampling import generate_sample  # noqa: E402

SPLITS = ("test_id", "test_ood")
TRANSLATE = {
    "transformations": ["translate_up"],
    "grid_height": [10, 12],
    "grid_width": [10, 12],
    "n_objects": [1, 2],
    "splits": {"test_ood": {"n_objects": [3, 3]}},
    "samples": {"train": 12, "val_id": 4, "val_ood": 4, "test_id": 6, "test_ood": 6},
}
SPEC = RenderSpec(size=(64, 64))


@pytest.fixture(scope="module")
def translate_config() -> TaskConfig:
    return TaskConfig.from_dict(TRANSLATE)


@pytest.fixture(scope="module")
def baseline_evaluation(translate_config: TaskConfig, tmp_path_factory: pytest.TempPathFactory):
    sequences, _ = training_sequences(translate_config)
    data = EvaluationData(
        SPEC,
        {split: OnTheFlyDataset(translate_config, split, SPEC) for split in SPLITS},
        OnTheFlyDataset(translate_config, "train", SPEC),
        sequences,
        canvas=experiment_canvas(translate_config),
    )
    device = pick_device("cpu")
    models, notes = build_baselines(("copy_input", "mean_target", "ground_truth"), data, device, batch_size=4)
    assert notes == []
    out = tmp_path_factory.mktemp("evaluation")
    return evaluate_predictors(models, data, out, device=device, batch_size=4, sheet_samples=2)


def test_ground_truth_is_perfect_after_render_and_decode(baseline_evaluation) -> None:
    for split in SPLITS:
        metrics = baseline_evaluation.metrics["baselines"]["ground_truth"]["splits"][split]["metrics"]
        assert metrics["grid_accuracy"] == 100.0 and metrics["object_pixel_accuracy"] == 100.0
        assert metrics["mse"] == 0.0 and metrics["ssim"] == pytest.approx(1.0)
        assert metrics["psnr"] == 100.0  # identical images: +inf, capped for the aggregate


def test_paper_metrics_pad_grids_of_several_sizes_to_the_experiment_canvas(
    baseline_evaluation, translate_config: TaskConfig
) -> None:
    """Grids of 10-12 cells a side share batches; G.2 counts every cell of the experiment's 12x12 canvas."""
    assert experiment_canvas(translate_config) == (12, 12)
    for split in SPLITS:
        perfect = baseline_evaluation.metrics["baselines"]["ground_truth"]["splits"][split]["metrics"]
        assert (perfect["paper_ppa"], perfect["paper_obj_ppa"]) == (100.0, 100.0)
        # copy_input predicts the input grid: count by hand on the canvas, padding cells always right
        samples = [generate_sample(translate_config, split, index) for index in range(6)]
        ppa = [(np.sum(s.input == s.output) + 144 - s.output.size) / 144 for s in samples]
        objects = [np.sum((s.input == s.output) & (s.output > 0)) / np.sum(s.output > 0) for s in samples]
        copied = baseline_evaluation.metrics["baselines"]["copy_input"]["splits"][split]["metrics"]
        assert copied["paper_ppa"] == pytest.approx(100 * np.mean(ppa))
        assert copied["paper_obj_ppa"] == pytest.approx(100 * np.mean(objects))


def test_copy_input_never_solves_a_translation(baseline_evaluation) -> None:
    for split in SPLITS:
        entry = baseline_evaluation.metrics["baselines"]["copy_input"]["splits"][split]
        assert entry["n"] == 6 and entry["metrics"]["grid_accuracy"] == 0.0 and entry["metrics"]["mse"] > 0
    # on OOD inputs, copying the input is not "translate_up applied" (the only training sequence)
    copy_input = baseline_evaluation.metrics["baselines"]["copy_input"]["splits"]
    assert copy_input["test_ood"]["metrics"]["stubbornness"] == 0.0
    assert "stubbornness" not in copy_input["test_id"]["metrics"]


def test_metrics_json_means_equal_the_per_sample_table(baseline_evaluation) -> None:
    table = pq.read_table(baseline_evaluation.samples_path).to_pydict()
    assert set(table["predictor"]) == {"copy_input", "mean_target", "ground_truth"}
    assert len(table["index"]) == 3 * 12
    for predictor in ("copy_input", "mean_target"):
        rows = [i for i, (p, s) in enumerate(zip(table["predictor"], table["split"]))
                if p == predictor and s == "test_ood"]
        mse = np.mean([table["mse"][i] for i in rows])
        ga = 100 * np.mean([table["grid_accuracy"][i] for i in rows])
        entry = baseline_evaluation.metrics["baselines"][predictor]["splits"]["test_ood"]["metrics"]
        assert entry["mse"] == pytest.approx(mse) and entry["grid_accuracy"] == pytest.approx(ga)
    gaps = baseline_evaluation.metrics["baselines"]["copy_input"]["gaps"]["test_id/test_ood"]
    copy_mse = {s: baseline_evaluation.metrics["baselines"]["copy_input"]["splits"][s]["metrics"]["mse"]
                for s in SPLITS}
    assert gaps["mse"] == pytest.approx(np.log(copy_mse["test_ood"]) - np.log(copy_mse["test_id"]))


def test_per_sample_table_records_sequences_and_object_counts(baseline_evaluation, translate_config) -> None:
    table = pq.read_table(baseline_evaluation.samples_path).to_pydict()
    for row, (split, index) in enumerate(zip(table["split"], table["index"])):
        sample = generate_sample(translate_config, split, index)
        assert table["sequence"][row] == ["translate_up"]
        assert table["n_objects"][row] == len(extract_objects(sample.input))
        assert table["n_target_objects"][row] == len(extract_objects(sample.output))
    assert {n for n, s in zip(table["n_objects"], table["split"]) if s == "test_ood"} == {3}


def test_sheets_show_best_and_worst_cases(baseline_evaluation) -> None:
    names = {p.relative_to(baseline_evaluation.out_dir).as_posix() for p in baseline_evaluation.sheets}
    for predictor in ("copy_input", "mean_target", "ground_truth"):
        for split in SPLITS:
            assert {f"sheets/{predictor}/{split}_best.png", f"sheets/{predictor}/{split}_worst.png"} <= names
    best = baseline_evaluation.results["ground_truth"]["test_id"].best
    assert len(best) == 2 and all("GA 100" in row.label for row in best)


def test_extremes_keep_highest_accuracy_then_lowest_error() -> None:
    extremes = Extremes(2)
    for key, label in [((1.0, -0.1), "a"), ((0.0, -0.5), "b"), ((1.0, -0.01), "c"), ((0.0, -0.9), "d"),
                       ((0.0, -0.2), "e")]:
        extremes.offer(key, lambda label=label: label)
    best, worst = extremes.rows()
    assert best == ["c", "a"] and worst == ["d", "b"]


def test_aggregate_scales_accuracies_and_reports_the_standard_error() -> None:
    value = aggregate("grid_accuracy", [1.0, 0.0, 1.0, 1.0])
    assert (value.mean, value.sem, value.n) == pytest.approx((75.0, 25.0, 4))  # sd 50 / sqrt(4)
    assert aggregate("psnr", [float("inf"), 20.0]).mean == pytest.approx(60.0)  # inf capped at 100 dB
    assert aggregate("fg_mse", [float("nan"), 0.5]).n == 1


MIRRORS = {  # C1-1's identity training sequence; OOD mirror_vertical leaves a symmetric object as it is
    "sequences": [["mirror_horizontal", "mirror_horizontal"]],
    "grid_height": [6, 6], "grid_width": [6, 6], "n_objects": [1, 1],
    "object_filter": {"max_height": 2, "max_width": 2},
    "splits": {"test_ood": {"sequences": [["mirror_vertical"]]}},
    "samples": {"train": 4, "val_id": 2, "val_ood": 2, "test_id": 2, "test_ood": 8},
}


def _evaluate_baselines(task: dict, out: Path, splits: tuple[str, ...] = ("test_ood",)):
    config = TaskConfig.from_dict(task)
    spec = RenderSpec(size=(24, 24))
    sequences, _ = training_sequences(config)
    data = EvaluationData(spec, {split: OnTheFlyDataset(config, split, spec) for split in splits},
                          OnTheFlyDataset(config, "train", spec), sequences, canvas=experiment_canvas(config))
    device = pick_device("cpu")
    models, _ = build_baselines(("copy_input", "ground_truth"), data, device, batch_size=1)
    return evaluate_predictors(models, data, out, device=device, batch_size=1, sheet_samples=1)


def test_stubbornness_leaves_out_the_samples_whose_target_is_their_input(tmp_path: Path) -> None:
    """Copying the input matches the identity training sequence: stubborn on every changed sample, and the
    unchanged ones (one-sample batches with nothing to score), whose right answer that sequence gives too, are left
    out, counted and flagged. The strict form leaves none out and scores every copy 0."""
    unchanged = [np.array_equal(s.input, s.output) for s in (generate_sample(TaskConfig.from_dict(MIRRORS),
                                                                             "test_ood", i) for i in range(8))]
    assert 0 < sum(unchanged) < 8  # the test needs both kinds
    result = _evaluate_baselines(MIRRORS, tmp_path / "out")
    table = pq.read_table(result.samples_path).to_pydict()
    rows = [i for i, name in enumerate(table["predictor"]) if name == "copy_input"]
    assert [table["unchanged"][i] for i in rows] == unchanged
    assert [np.isnan(table["stubbornness"][i]) for i in rows] == unchanged
    assert [table["stubbornness_strict"][i] for i in rows] == [0.0] * 8
    for name, stubborn in (("copy_input", 100.0), ("ground_truth", 0.0)):
        entry = result.metrics["baselines"][name]["splits"]["test_ood"]
        assert entry["n"] == 8 and entry["n_unchanged"] == sum(unchanged) and "status" not in entry
        assert entry["metrics"]["stubbornness"] == stubborn and entry["metrics"]["stubbornness_strict"] == 0.0
    assert "stubbornness" not in result.metrics["status"]  # a batch with no changed sample is not the split


ONE_CELL = {**MIRRORS, "splits": {"test_ood": {"sequences": [["mirror_vertical"]],
                                               "object_filter": {"max_height": 1, "max_width": 1}}}}
"""Every test_ood sample a single cell: mirror_vertical leaves it as it is, and so does the training sequence."""


def test_stubbornness_of_a_split_with_no_changed_sample_is_null_with_the_reason(tmp_path: Path) -> None:
    from vision_bench.metrics.registry import ALL_UNCHANGED

    result = _evaluate_baselines(ONE_CELL, tmp_path / "out")
    entry = result.metrics["baselines"]["copy_input"]["splits"]["test_ood"]
    assert entry["n_unchanged"] == entry["n"] == 8 and entry["metrics"]["stubbornness"] is None
    assert entry["metrics"]["stubbornness_strict"] == 0.0  # the strict form leaves nothing out
    assert entry["status"] == {"stubbornness": ALL_UNCHANGED}
    assert result.metrics["status"]["stubbornness"] == ALL_UNCHANGED
    assert "stubbornness_strict" not in result.metrics["status"]


def test_stubbornness_unavailable_on_one_ood_split_is_that_splits_reason_not_the_runs(tmp_path: Path) -> None:
    """val_ood holds single cells only (nothing to score), test_ood changed samples too: the reason stays with
    val_ood, and test_ood's value is not marked unavailable."""
    from vision_bench.metrics.registry import ALL_UNCHANGED

    task = {**MIRRORS, "splits": {"val_ood": ONE_CELL["splits"]["test_ood"], **MIRRORS["splits"]},
            "samples": {**MIRRORS["samples"], "val_ood": 4}}
    result = _evaluate_baselines(task, tmp_path / "out", splits=("val_ood", "test_ood"))
    splits = result.metrics["baselines"]["copy_input"]["splits"]
    assert splits["val_ood"]["metrics"]["stubbornness"] is None and splits["test_ood"]["metrics"]["stubbornness"] == 100
    assert splits["val_ood"]["status"] == {"stubbornness": ALL_UNCHANGED} and "status" not in splits["test_ood"]
    assert "stubbornness" not in result.metrics["status"]


def test_training_sequences_enumerate_small_pools_only() -> None:
    pool = TaskConfig.from_dict({**TRANSLATE, "transformations": ["rot90", "translate_up"], "depth": [1, 2]})
    sequences, note = training_sequences(pool)
    assert note is None and len(sequences) == 2 + 4 and ("rot90", "translate_up") in sequences
    large = TaskConfig.from_dict({**TRANSLATE, "transformations": ["rot90", "translate_up", "mirror_vertical",
                                                                   "translate_down", "crop_top_side"], "depth": [4, 4]})
    sequences, note = training_sequences(large)
    assert sequences is None and "625 sequences" in note


# ----------------------------------------------------------------------------- a trained run


@pytest.fixture(scope="module")
def trained_run(translate_config: TaskConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vision_bench.data.export import export_dataset
    from vision_bench.data.export_formats import ExportOptions
    from vision_bench.train import TrainConfig, train

    root = tmp_path_factory.mktemp("run")
    export_dataset(translate_config, SPEC, root / "data", ExportOptions(format="grids"))
    config = TrainConfig.from_dict({
        "dataset": {"path": str(root / "data"), "spec": SPEC.to_dict()},
        "model": {"name": "vit:test_vit", "options": {"patch_size": 16}},
        "training": {"batch_size": 6, "eval_batch_size": 6, "epochs": 1},
        "schedule": {"warmup_steps": 1},
    })
    train(config, root / "run", progress=False)
    return root / "run"


def test_cli_evaluate_writes_model_and_baselines(trained_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    assert main(["evaluate", str(trained_run), "--batch-size", "4", "--baselines", "copy_input,ground_truth",
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "vit:test_vit" in printed and "ground_truth" in printed
    metrics = json.loads((trained_run / "evaluation" / "metrics.json").read_text())
    assert metrics["model"] == "vit:test_vit" and metrics["checkpoint"].endswith("best.pt")
    assert set(metrics["splits"]) == set(SPLITS) and set(metrics["baselines"]) == {"copy_input", "ground_truth"}
    assert metrics["baselines"]["ground_truth"]["splits"]["test_ood"]["metrics"]["grid_accuracy"] == 100.0
    assert metrics["status"]["lpips"].startswith("unavailable") or "lpips" in metrics["splits"]["test_id"]["metrics"]
    table = pq.read_table(trained_run / "evaluation" / "samples.parquet").to_pydict()
    model_rows = [i for i, p in enumerate(table["predictor"]) if p == "vit:test_vit"]
    assert len(model_rows) == 12
    assert (trained_run / "evaluation" / "sheets" / "vit_test_vit" / "test_ood_worst.png").is_file()


def test_evaluating_other_data_keeps_the_runs_own_evaluation(
        trained_run: Path, translate_config: TaskConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--data` writes RUN_DIR/evaluation_<its name>, never over the run's evaluation/; an image export drawn with
    another spec than the run's is refused in one line naming the difference and the fix."""
    from cli_errors import cli_error

    from vision_bench.cli import main
    from vision_bench.data.export import export_dataset
    from vision_bench.data.export_formats import ExportOptions

    own = trained_run / "evaluation" / "metrics.json"
    before = own.read_bytes() if own.is_file() else None
    export_dataset(translate_config, SPEC, tmp_path / "other", ExportOptions(format="folder"))
    argv = ["evaluate", str(trained_run), "--batch-size", "4", "--baselines", "copy_input", "--no-progress"]
    assert main([*argv, "--data", str(tmp_path / "other")]) == 0
    written = sorted(trained_run.glob("evaluation_other_*"))
    assert [len(path.name) for path in written] == [len("evaluation_other_") + 8]
    assert (written[0] / "metrics.json").is_file() and (own.read_bytes() if own.is_file() else None) == before
    cli_error([*argv, "--data", str(tmp_path / "other"), "--rollout", "image"], capsys, "without --rollout")
    export_dataset(translate_config, RenderSpec(size=(32, 32)), tmp_path / "small", ExportOptions(format="folder"))
    cli_error([*argv, "--data", str(tmp_path / "small")], capsys, "another render spec than the run's",
              "size 32x32 (the run's: 64x64)", "--size 64 64", "--format grids")
    assert not list(trained_run.glob("evaluation_small*"))


def test_cli_evaluate_names_a_missing_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    assert main(["evaluate", str(tmp_path), "--checkpoint", "last"]) == 2
    assert "last.pt does not exist" in capsys.readouterr().err


def test_default_test_size_is_proportionate_to_the_run() -> None:
    from vision_bench.evaluation.data import MIN_DEFAULT_TEST, default_test_size

    assert default_test_size(None) is None  # a run at the study's sizes keeps the study's test size
    assert default_test_size(16) == MIN_DEFAULT_TEST == 100  # the smoke run: 100, not the study's 1,000
    assert default_test_size(500) == 500


def test_a_run_trained_on_an_inline_task_is_evaluated_on_that_task(tmp_path: Path) -> None:
    """`dataset.task` (a task config written into the training config) is what the run's evaluation reads."""
    from vision_bench.cli import main
    from vision_bench.train import TrainConfig, train

    config = TrainConfig.from_dict({
        "dataset": {"task": TRANSLATE, "spec": SPEC.to_dict()},
        "model": {"name": "vit:test_vit", "options": {"patch_size": 16}},
        "training": {"batch_size": 6, "eval_batch_size": 6, "epochs": 1},
        "schedule": {"warmup_steps": 1},
    })
    train(config, tmp_path / "run", progress=False)
    assert main(["evaluate", str(tmp_path / "run"), "--baselines", "ground_truth", "--no-progress"]) == 0
    metrics = json.loads((tmp_path / "run" / "evaluation" / "metrics.json").read_text())
    assert metrics["data"] == {"task": "dataset.task", "counts": {"train": 12, "test_id": 6, "test_ood": 6}}
    assert metrics["baselines"]["ground_truth"]["splits"]["test_ood"]["metrics"]["grid_accuracy"] == 100.0


def test_an_inline_task_is_evaluated_at_the_runs_counts() -> None:
    """`dataset.n_train` / `n_val` and `--n-test` size an inline task's evaluation as they size a study's."""
    from vision_bench.evaluation.data import MIN_DEFAULT_TEST, run_data
    from vision_bench.train import TrainConfig

    config = TrainConfig.from_dict(
        {
            "dataset": {"task": TRANSLATE, "spec": SPEC.to_dict(), "n_train": 8, "n_val": 3},
            "model": {"name": "vit:test_vit", "options": {"patch_size": 16}},
        }
    )
    default = run_data(config, SPEC, ("test_id",), data=None, n_test=None)
    assert default.source["counts"] == {"train": 8, "test_id": MIN_DEFAULT_TEST}
    chosen = run_data(config, SPEC, ("test_id", "test_ood"), data=None, n_test=5)
    assert chosen.source["counts"] == {"train": 8, "test_id": 5, "test_ood": 5}
    assert len(chosen.splits["test_ood"]) == 5
