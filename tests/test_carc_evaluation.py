"""Evaluating C-ARC episode and rule studies: the ground-truth ceiling, the error taxonomy's episode
setup, and stubbornness reported unavailable where it is not defined."""

from __future__ import annotations

import pytest
import torch

from render.spec import RenderSpec
from vision_bench.data.sources import load_config
from vision_bench.errors import ConfigError
from vision_bench.evaluation import build_baselines, evaluate_predictors, study_data
from vision_bench.evaluation.data import training_sequences
from vision_bench.metrics.error_taxonomy import ERROR_CLASSES
from vision_bench.models import create_model

SPEC = RenderSpec.from_dict({"size": [68, 68], "palette": "c-arc"})


@pytest.mark.parametrize("study", ["carc/3shot/1860", "carc/systematicity/1860"])
def test_ground_truth_solves_every_carc_query(study: str, tmp_path) -> None:
    data = study_data(study, SPEC, ("test_ood",), n_train=4, n_val=4, n_test=4)
    assert data.episode_setup == study.split("/")[1] and data.connectivity == 8
    models, notes = build_baselines(["ground_truth"], data, torch.device("cpu"), 4)
    assert notes == []
    result = evaluate_predictors(models, data, tmp_path, device=torch.device("cpu"), batch_size=4,
                                 sheet_samples=0, lpips=None)
    scores = result.results["ground_truth"]["test_ood"]
    assert scores.columns["grid_accuracy"] == [1.0] * 4
    assert all(scores.means()[f"error_{name}"] == 0.0 for name in ERROR_CLASSES)  # classified, every one correct
    assert result.metrics["status"]["stubbornness"].startswith("unavailable: stubbornness: not defined for C-ARC")


def test_ground_truth_names_a_wrong_episode_setup() -> None:
    with pytest.raises(ConfigError, match="episode_setup must be one of 3shot, systematicity"):
        create_model("ground_truth", image_size=68, render_spec=SPEC, episode_setup="5shot")


@pytest.mark.parametrize("study", ["gcog/systematic/depth1", "gcog/distractor/10", "gcog/productive/5",
                                   "carc/3shot/1860"])
def test_stubbornness_is_not_defined_for_rule_studies_and_episodes(study: str) -> None:
    sequences, note = training_sequences(load_config(study, None))
    assert sequences is None and note is not None and note.startswith("stubbornness: not defined for")


def test_error_taxonomy_reads_the_episode_setup_not_the_grid_shape() -> None:
    from vision_bench.metrics import compute_metrics

    grids = torch.zeros((1, 21, 44), dtype=torch.long)  # a 3-Shot canvas's shape, but no episode
    target = grids.clone()
    target[0, 0, 0] = 3  # outside the query's slots
    names = [f"error_{name}" for name in ERROR_CLASSES]
    plain = compute_metrics(pred_grids=grids, target_grids=target, input_grids=grids, sequences=[("translate_up",)],
                            names=names)
    assert plain["error_no_transformation"].tolist() == [1.0]  # the whole grid is compared
    episode = compute_metrics(pred_grids=grids, target_grids=target, input_grids=grids,
                              sequences=[("translate_down",)], names=names, episode_setup="3shot")
    assert sum(float(episode[name][0]) for name in names) == 0.0  # the query's slots agree: correct


def test_the_bench_report_of_a_carc_study_has_the_error_table() -> None:
    from vision_bench.bench.aggregate import CellResult
    from vision_bench.bench.tables import error_table

    def cell(predictor: str, seed: int | None, other: float, primitive: float) -> CellResult:
        metrics = {f"error_{name}": 0.0 for name in ("format", "no_transformation", "level_1", "invalid_position",
                                                     "invalid_shape")}
        metrics.update(error_other=other, error_primitive=primitive)
        return CellResult(predictor, "carc/3shot/1860", "carc/3shot", seed, seed is None, {"test_ood": metrics})

    table = error_table([cell("cnn", 0, 50.0, 10.0), cell("cnn", 1, 30.0, 30.0), cell("copy_input", None, 100.0, 0.0)],
                        "test_ood")
    assert table is not None
    rows = {row[0]: row for row in table.rows}
    column = table.columns.index
    assert rows["cnn"][column("Err-other")] == "40.0" and rows["cnn"][column("Err-prim")] == "20.0"  # seed means
    assert rows["copy_input (baseline)"][column("Err-other")] == "100.0"
    assert error_table([CellResult("cnn", "envgen/G1/1", "envgen/G1", 0, False, {"test_ood": {"mse": 0.1}})],
                       "test_ood") is None
