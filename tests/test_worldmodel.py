"""World-model framing: one-step transitions of sequence studies, closed-loop rollouts scored per step,
and the rollout report."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch

from render.raster import render
from render.spec import RenderSpec
from vision_bench.bench.rollout_report import plot_rollout, write_rollout_report, write_rollout_sheet
from vision_bench.data.onthefly import OnTheFlyDataset
from vision_bench.data.sources import load_config, render_seed, with_overrides
from vision_bench.errors import ConfigError
from vision_bench.evaluation.rollout import (
    rollout_baselines,
    rollout_metrics,
    rollout_predictors,
    write_rollout,
)
from vision_bench.metrics.inputs import NO_COLOUR
from vision_bench.tasks.config import SampleCounts, TaskConfig, WorldModelConfig
from vision_bench.tasks.families.world_model import GROUND_TRUTH_NOTE, transition_step
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.studies import get_study
from vision_bench.tasks.studies.worldmodel import as_world_model
from vision_bench.tasks.task_code import encode_task_code

SPEC = RenderSpec(size=(48, 48))


def _translations(n_test: int = 6) -> WorldModelConfig:
    """Four translate_up steps of one small object: each step moves it further from where it started."""
    return as_world_model(TaskConfig(
        grid_height=(12, 12), grid_width=(12, 12), n_objects=(1, 1),
        object_filter=(ObjectFilter(max_height=2, max_width=2, connectivity=8),),
        transformations=("translate_up",), depth=(4, 4),
        samples=SampleCounts(train=4, val_id=2, val_ood=2, test_id=n_test, test_ood=2),
    ))


def _steps(document: dict, split: str, name: str, mode: str, metric: str) -> list[float]:
    return [row["metrics"][metric]["mean"] for row in document["splits"][split][name][mode]]


def test_worldmodel_presets_wrap_the_sequence_studies() -> None:
    wrapped, base = get_study("worldmodel/compgen/C1/1", 8, 2, 2), get_study("compgen/C1/1", 8, 2, 2)
    assert isinstance(wrapped, WorldModelConfig) and wrapped.description.startswith("World model, served as one-step")
    assert {**wrapped.to_dict(), "description": ""} == {**base.to_dict(), "description": "", "kind": "world_model"}
    assert "kind" not in base.to_dict()
    assert isinstance(get_study("worldmodel/envgen/G3/2", 8, 2, 2), WorldModelConfig)
    deep = get_study("worldmodel/depth4/1", 8, 2, 2)
    assert all(len(generate_sample(deep, split, 0).sequence) == 4 for split in ("train", "test_id", "test_ood"))
    assert generate_sample(deep, "test_ood", 0).objects and len(generate_sample(deep, "test_ood", 1).objects) >= 3


def test_the_marker_survives_count_seed_and_set_overrides() -> None:
    config = get_study("worldmodel/compgen/C1/1", 8, 2, 2)
    assert isinstance(with_overrides(config, n_train=3, seed=5), WorldModelConfig)
    loaded = load_config("worldmodel/compgen/C1/1", n_train=3, overrides=["n_objects=[2, 2]"])
    assert isinstance(loaded, WorldModelConfig) and loaded.count("train") == 3


def test_the_marker_survives_the_dict_and_yaml_round_trip(tmp_path) -> None:
    from vision_bench.data.sources import config_from_dict, config_to_dict

    config = get_study("worldmodel/depth4/1", n_train=3, n_val=1, n_test=1)
    back = config_from_dict(json.loads(json.dumps(config_to_dict(config))))
    assert isinstance(back, WorldModelConfig) and back == config and back.kind == "world_model"
    path = tmp_path / "config.yaml"
    path.write_text(config.to_yaml())
    assert isinstance(load_config(config_path=path), WorldModelConfig)
    with pytest.raises(ConfigError, match="kind"):
        TaskConfig.from_dict({**config.to_dict(), "kind": "rollout"})


def test_generate_and_export_write_the_transitions_training_reads(tmp_path) -> None:
    """`sources.generate`, `map_split` and `vision-bench generate` give, byte for byte, the
    samples the on-the-fly dataset serves (`sources.sample`): one step each, not the whole sequence."""
    from vision_bench.cli import main
    from vision_bench.data import sources
    from vision_bench.tasks.formats import read_tasks
    from vision_bench.tasks.sampling import map_split

    config = get_study("worldmodel/depth4/1", n_train=5, n_val=1, n_test=1)
    served = [sources.sample(config, "train", index) for index in range(5)]
    assert all(len(sample.frames) == 2 and len(sample.sequence) == 1 for sample in served)
    path = tmp_path / "config.yaml"
    path.write_text(config.to_yaml())
    assert main(["generate", "--config", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    chunks = [sample for chunk in map_split(config, "train", list, 1, 5) for sample in chunk]
    assert [sample.index for sample in chunks] == [1, 2, 3, 4]
    for made in (sources.generate(config, "train", 0, 5), [served[0], *chunks],
                 read_tasks(tmp_path / "out" / "train.parquet")):
        assert [sample.sequence for sample in made] == [sample.sequence for sample in served]
        assert [sample.task_code for sample in made] == [sample.task_code for sample in served]
        for got, expected in zip(made, served):
            assert got.input.tobytes() == expected.input.tobytes()
            assert got.output.tobytes() == expected.output.tobytes()


def test_items_are_one_step_transitions_of_the_sequences() -> None:
    config = get_study("worldmodel/depth4/1", n_train=6, n_val=2, n_test=2)
    dataset = OnTheFlyDataset(config, "train", SPEC)
    steps = []
    for index in range(6):
        item, sample = dataset[index], generate_sample(config, "train", index)
        step = transition_step(config.seed, "train", index, 4)
        steps.append(step)
        assert np.array_equal(item["input_grid"].numpy(), sample.frames[step])
        assert np.array_equal(item["target_grid"].numpy(), sample.frames[step + 1])
        assert item["sequence"] == (sample.sequence[step],)
        assert item["task_code"].tolist() == encode_task_code((sample.sequence[step],))
        assert item["task_code"].tolist()[1:] == [0, 0, 0]
        seed = render_seed(config.seed, "train", index)
        expected = torch.from_numpy(render(sample.frames[step + 1], SPEC, seed=seed)).permute(2, 0, 1) / 255
        assert torch.allclose(item["target"], expected)
    assert len(set(steps)) > 1  # the steps are spread over the sequence


@pytest.mark.parametrize("feedback", ["image", "grid"])
def test_a_perfect_model_scores_perfectly_at_every_step(feedback: str) -> None:
    config = get_study("worldmodel/depth4/1", n_train=4, n_val=2, n_test=4)
    status: dict[str, str] = {}
    results = rollout_predictors(rollout_baselines(["ground_truth"], SPEC), config, "test_ood", SPEC,
                                 feedback=feedback, use_lpips=False, status=status)
    document = rollout_metrics({"test_ood": results}, feedback=feedback, status=status)
    for mode in ("closed_loop", "one_step"):
        rows = document["splits"]["test_ood"]["ground_truth"][mode]
        assert [row["step"] for row in rows] == [1, 2, 3, 4] and all(row["n"] == 4 for row in rows)
        assert _steps(document, "test_ood", "ground_truth", mode, "grid_accuracy") == [100.0] * 4
        assert _steps(document, "test_ood", "ground_truth", mode, "mse") == [0.0] * 4
    assert status == {"lpips": "off"}


class _GridPredictor(torch.nn.Module):
    """Predicts the true next grid itself, with background cells as `no_colour` when asked, and draws `image`:
    the true frame (`truth`) or a blank one."""

    def __init__(self, image: str, no_colour_background: bool) -> None:
        super().__init__()
        self.oracle = rollout_baselines(["ground_truth"], SPEC)["ground_truth"]
        self.image, self.no_colour_background = image, no_colour_background

    def predict_with_grids(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        grids = batch["target_grid"].clone()
        if self.no_colour_background:
            grids[grids == 0] = NO_COLOUR
        drawn = self.oracle.predict(batch)
        return (drawn if self.image == "truth" else torch.zeros_like(drawn)), grids


@pytest.mark.parametrize("feedback", ["image", "grid"])
def test_a_model_that_predicts_grids_is_scored_and_fed_back_on_its_grids(feedback: str) -> None:
    """Its own grids, not its images decoded: the true grid drawn blank scores 100 GA at every closed-loop step
    (the grid fed back is its own); the true image over a grid of no-colour background scores 0, as in evaluate."""
    config = _translations(n_test=3)
    predictors = {"blank": _GridPredictor("blank", False), "no_colour": _GridPredictor("truth", True)}
    document = rollout_metrics({"test_id": rollout_predictors(predictors, config, "test_id", SPEC, feedback=feedback,
                                                              use_lpips=False)}, feedback=feedback, status={})
    for mode in ("closed_loop", "one_step"):
        assert _steps(document, "test_id", "blank", mode, "grid_accuracy") == [100.0] * 4
        assert min(_steps(document, "test_id", "blank", mode, "mse")) > 0
        assert _steps(document, "test_id", "no_colour", mode, "grid_accuracy") == [0.0] * 4
        assert _steps(document, "test_id", "no_colour", mode, "mse") == [0.0] * 4


def test_a_cogitao_grid_model_rolls_out_as_it_evaluates() -> None:
    """A grid model's first closed-loop step is its one-step prediction, scored like evaluation scores it."""
    from vision_bench.metrics.grids import grid_accuracy
    from vision_bench.metrics.inputs import lay_on_targets
    from vision_bench.models import create_model

    torch.manual_seed(0)
    model = create_model("cogitao:vanilla-tf", grid_size=12, image_size=48, render_spec=SPEC,
                         task_conditioning=True).eval()
    config = _translations(n_test=3)
    document = rollout_metrics({"test_id": rollout_predictors({"vanilla": model}, config, "test_id", SPEC,
                                                              use_lpips=False)}, feedback="image", status={})
    rows = document["splits"]["test_id"]["vanilla"]["closed_loop"]
    assert [row["step"] for row in rows] == [1, 2, 3, 4] and all(row["n"] == 3 for row in rows)
    samples = [generate_sample(config, "test_id", index) for index in range(3)]
    batch = {
        "input_grid": torch.stack([torch.from_numpy(s.frames[0].astype(np.int64)) for s in samples]),
        "grid_shape": torch.tensor([list(s.frames[0].shape) for s in samples]),
        "task_code": torch.tensor([encode_task_code((s.sequence[0],), len(s.task_code)) for s in samples]),
    }
    truth = torch.stack([torch.from_numpy(s.frames[1].astype(np.int64)) for s in samples])
    expected = grid_accuracy(lay_on_targets(model.predict_grids(batch), truth), truth).mean() * 100
    assert rows[0]["metrics"]["grid_accuracy"]["mean"] == pytest.approx(float(expected))


def test_copy_input_gets_worse_with_depth() -> None:
    config = _translations()
    results = rollout_predictors(rollout_baselines(["copy_input"], SPEC), config, "test_id", SPEC, use_lpips=False)
    document = rollout_metrics({"test_id": results}, feedback="image", status={})
    closed = _steps(document, "test_id", "copy_input", "closed_loop", "mse")
    assert all(later >= earlier for earlier, later in zip(closed, closed[1:])) and closed[-1] > 1.2 * closed[0]
    assert _steps(document, "test_id", "copy_input", "closed_loop", "grid_accuracy") == [0.0] * 4
    one_step = _steps(document, "test_id", "copy_input", "one_step", "mse")
    assert one_step[0] == closed[0] and max(one_step) < closed[-1]  # one step: always one move away


def test_rollouts_are_reproducible_and_keep_frames_for_sheets() -> None:
    config = _translations(n_test=3)
    first, second = (rollout_predictors(rollout_baselines(["copy_input", "mean_target"], SPEC), config, "test_id",
                                        SPEC, use_lpips=False, sheet_samples=2, batch_size=2) for _ in range(2))
    assert list(first) == ["copy_input"]  # mean_target has no rollout meaning
    assert first["copy_input"].values == second["copy_input"].values
    frames = first["copy_input"].frames
    assert [len(f.truth) for f in frames] == [5, 5] and [len(f.predicted) for f in frames] == [4, 4]
    assert all(np.array_equal(p, frames[0].truth[0]) for p in frames[0].predicted)  # copy_input never moves


def test_unknown_feedback_is_refused() -> None:
    with pytest.raises(ConfigError, match="feedback must be 'image'"):
        rollout_predictors({}, _translations(), "test_id", SPEC, feedback="pixels")


def test_report_plots_metrics_against_the_step(tmp_path) -> None:
    config = get_study("worldmodel/depth4/1", n_train=4, n_val=2, n_test=2)
    results = rollout_predictors(rollout_baselines(["copy_input", "ground_truth"], SPEC), config, "test_id", SPEC,
                                 use_lpips=False, sheet_samples=1)
    cell = tmp_path / "baselines" / "worldmodel_depth4_1"
    write_rollout(cell / "rollout", rollout_metrics({"test_id": results}, feedback="image", status={}))
    sheet = write_rollout_sheet(results, cell / "rollout" / "sheet_test_id.png")
    assert sheet is not None and sheet.is_file()
    report = write_rollout_report(tmp_path, [("worldmodel/depth4/1", None, cell)])
    assert report is not None
    text = report.read_text()
    assert "| copy_input | closed loop | " in text and "| ground_truth | one step | 100 | 100 | 100 | 100 |" in text
    plots = sorted(path.name for path in (tmp_path / "plots").iterdir())
    assert plots == ["rollout_worldmodel_depth4_test_id_grid_accuracy.png", "rollout_worldmodel_depth4_test_id_mse.png"]
    assert write_rollout_report(tmp_path / "empty", []) is None


def test_report_without_matplotlib_keeps_its_tables(tmp_path, monkeypatch) -> None:
    """A core install (no `reports` extra): the rollout report has its tables and one line for the figures."""
    config = get_study("worldmodel/depth4/1", n_train=4, n_val=2, n_test=2)
    results = rollout_predictors(rollout_baselines(["ground_truth"], SPEC), config, "test_id", SPEC,
                                 use_lpips=False, sheet_samples=1)
    cell = tmp_path / "baselines" / "worldmodel_depth4_1"
    write_rollout(cell / "rollout", rollout_metrics({"test_id": results}, feedback="image", status={}))
    for name in [name for name in sys.modules if name.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    report = write_rollout_report(tmp_path, [("worldmodel/depth4/1", None, cell)])
    assert report is not None
    text = report.read_text()
    assert "| ground_truth | one step | 100 | 100 | 100 | 100 |" in text and "vision-bench[reports]" in text
    assert "![" not in text and not (tmp_path / "plots").exists()


def test_a_bench_cell_of_baselines_writes_its_rollout_and_sheets(tmp_path) -> None:
    from vision_bench.bench.rollout_report import is_rollout_experiment, roll_out_baselines

    assert is_rollout_experiment("worldmodel/depth4/1") and not is_rollout_experiment("compgen/C1/1")
    path = roll_out_baselines(tmp_path, "worldmodel/depth4/1", ["copy_input", "mean_target", "ground_truth"], SPEC,
                              n_train=4, n_val=2, n_test=2, splits=["test_id"], device="cpu", batch_size=2,
                              sheet_samples=1)
    assert path == tmp_path / "rollout" / "rollout.json" and (tmp_path / "rollout" / "sheet_test_id.png").is_file()
    document = json.loads(path.read_text())
    assert sorted(document["splits"]["test_id"]) == ["copy_input", "ground_truth"]
    assert document["feedback"] == "image" and document["study"] == "worldmodel/depth4/1"
    assert roll_out_baselines(tmp_path / "none", "worldmodel/depth4/1", ["mean_target"], SPEC, n_train=4, n_val=2,
                              n_test=2, splits=["test_id"], device="cpu", batch_size=2, sheet_samples=1) is None


@pytest.mark.slow
def test_evaluate_rollout_flag_rolls_a_world_model_run_out(tmp_path, capsys) -> None:
    from vision_bench.cli import main
    from vision_bench.train import TrainConfig, train

    config = TrainConfig.from_dict({
        "dataset": {"study": "worldmodel/depth4/1", "n_train": 8, "n_val": 2, "spec": {"size": [48, 48]}},
        "model": {"name": "vit:test_vit", "options": {"patch_size": 16, "task_conditioning": True}},
        "training": {"batch_size": 4, "eval_batch_size": 4, "epochs": 1},
        "schedule": {"warmup_steps": 1},
    })
    train(config, tmp_path / "wm", progress=False)
    assert main(["evaluate", str(tmp_path / "wm"), "--n-test", "3", "--baselines", "", "--rollout", "grid",
                 "--batch-size", "4", "--no-progress", "--offline"]) == 0
    printed = capsys.readouterr().out
    assert "rollout.json" in printed
    assert f"note: {GROUND_TRUTH_NOTE}" in printed  # why the one-step ground_truth is not a perfect ceiling
    assert GROUND_TRUTH_NOTE in json.loads((tmp_path / "wm" / "evaluation" / "metrics.json").read_text())["notes"]
    document = json.loads((tmp_path / "wm" / "evaluation" / "rollout" / "rollout.json").read_text())
    assert document["feedback"] == "grid"
    closed = next(iter(document["splits"]["test_id"].values()))["closed_loop"]
    assert [row["n"] for row in closed][:1] == [3]  # every sequence has a first step


@pytest.mark.slow
def test_evaluate_rollout_refuses_a_run_that_is_not_a_world_model(tmp_path, capsys) -> None:
    from vision_bench.bench.rollout_report import roll_out_run
    from vision_bench.train import TrainConfig, train

    config = TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": {"size": [32, 32]}},
        "model": {"name": "vit:test_vit", "options": {"patch_size": 16}},
        "training": {"batch_size": 4, "eval_batch_size": 4, "epochs": 1, "max_steps": 1},
        "schedule": {"warmup_steps": 1},
    })
    train(config, tmp_path / "run", progress=False)
    with pytest.raises(ConfigError, match="not a world-model study"):
        roll_out_run(tmp_path / "run", out_dir=tmp_path / "run", n_test=2)


def test_rollout_plots_follow_the_plot_rules() -> None:
    curves = {"ground_truth": {"closed_loop": {1: [0.0], 2: [0.0]}},
              "copy_input": {"closed_loop": {1: [0.01], 2: [0.04]}, "one_step": {1: [0.01], 2: [0.02]}}}
    figure = plot_rollout(curves, "mse", "MSE per step")
    axis = figure.axes[0]
    assert axis.get_yscale() == "symlog" and axis.yaxis.get_transform().linthresh == pytest.approx(0.01)
    assert axis.get_legend() is None and len(figure.legends) == 1  # one legend, below the axes
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    assert figure.legends[0].get_window_extent(renderer).y1 <= axis.get_tightbbox(renderer).y0 + 1  # not over data
    accuracy = plot_rollout({"copy_input": {"closed_loop": {1: [50.0], 2: [25.0]}}}, "grid_accuracy", "GA")
    assert accuracy.axes[0].get_ylim()[1] > 100 and accuracy.axes[0].get_yscale() == "linear"
