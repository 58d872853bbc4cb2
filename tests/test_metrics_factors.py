"""Factor accuracy on SVIB's scenes (`vision_bench.metrics.factors`): hand-made predictions of one scene with
each kind of mistake, scored against values counted by hand; the pairing; and where the metrics are
available: a task family that lists them (a fake scene family, registered for the test and removed after),
every other family reported unavailable with the reason, and `vision-bench score` from decoded grids."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from render import RenderSpec, render
from vision_bench.cli import main
from vision_bench.evaluation import build_baselines, evaluate_predictors, pick_device
from vision_bench.evaluation.data import family_metric_status, task_data
from vision_bench.metrics import METRICS, compute_metrics, summarize
from vision_bench.metrics.factors import pair_objects
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families import FAMILIES, TaskFamily, family_metrics
from vision_bench.tasks.sample import TaskSample, sample_rng
from vision_bench.tasks.scenes.factors import FACTOR_METRICS, ReadObject, SceneObject, draw, read_objects

ALL, COLOUR, SHAPE, SIZE, POSITION = FACTOR_METRICS
GRID = 20
A = SceneObject(colour=0, shape=0, size=1, top=2, left=2)  # a green circle, 4 cells a side
B = SceneObject(colour=1, shape=2, size=2, top=10, left=11)  # a magenta square, 5 cells a side
C = SceneObject(colour=3, shape=3, size=0, top=2, left=14)  # an orange star, 3 cells a side
TARGET = draw([A, B], GRID)


def _merged() -> np.ndarray:
    """A and a copy of B drawn touching A's bottom edge: one 8-connected blob of two colours at A's anchor."""
    return draw([A, replace(B, top=A.top + A.side, left=A.left + 2)], GRID)


PREDICTIONS = {
    # name: (prediction, [factor_accuracy, colour, shape, size, position]), counted by hand over
    # n = max(2 target objects, predicted objects)
    "perfect": (draw([A, B], GRID), [1, 1, 1, 1, 1]),
    "one_wrong_shape": (draw([replace(A, shape=1), B], GRID), [1 / 2, 1, 1 / 2, 1, 1]),
    "one_wrong_colour": (draw([A, replace(B, colour=2)], GRID), [1 / 2, 1 / 2, 1, 1, 1]),
    "one_wrong_size": (draw([replace(A, size=3), B], GRID), [1 / 2, 1, 1, 1 / 2, 1]),
    "one_moved": (draw([replace(A, top=6), B], GRID), [1, 1, 1, 1, 1 / 2]),
    "one_missing": (draw([A], GRID), [1 / 2, 1 / 2, 1 / 2, 1 / 2, 1 / 2]),
    "one_extra": (draw([A, B, C], GRID), [2 / 3, 2 / 3, 2 / 3, 2 / 3, 2 / 3]),
    # the blob pairs with A (same anchor): no colour, shape or size, but A's place; B is missing
    "two_merged": (_merged(), [0, 0, 0, 0, 1 / 2]),
    # each object in the other's place: pairing goes by place, so every factor is wrong
    "factors_swapped": (draw([replace(B, top=A.top, left=A.left), replace(A, top=B.top, left=B.left)], GRID),
                        [0, 0, 0, 0, 1]),
    "blank": (np.zeros((GRID, GRID), np.uint8), [0, 0, 0, 0, 0]),
}


def _scores(prediction: np.ndarray, target: np.ndarray = TARGET) -> dict[str, float]:
    values = compute_metrics(pred_grids=torch.tensor(prediction[None]), target_grids=torch.tensor(target[None]),
                             names=list(FACTOR_METRICS))
    assert all(status == "ok" for status in values.status.values())
    return {name: float(values[name][0]) for name in FACTOR_METRICS}


@pytest.mark.parametrize("case", sorted(PREDICTIONS))
def test_hand_made_predictions_score_as_counted_by_hand(case: str) -> None:
    prediction, expected = PREDICTIONS[case]
    assert _scores(prediction) == pytest.approx(dict(zip(FACTOR_METRICS, expected)))


def test_the_merged_blob_reads_as_no_shape_and_no_colour() -> None:
    """The case above is what it claims: the two objects touch and make one blob, at A's anchor."""
    (blob,) = read_objects(_merged())
    assert blob.factors == (None, None, None) and (blob.top, blob.left) == (A.top, A.left)


def test_an_empty_scene_predicted_empty_is_right_and_anything_else_wrong() -> None:
    empty = np.zeros((GRID, GRID), np.uint8)
    assert _scores(empty, empty) == dict.fromkeys(FACTOR_METRICS, 1.0)
    assert _scores(draw([C], GRID), empty) == dict.fromkeys(FACTOR_METRICS, 0.0)


def test_pairing_minimises_the_total_distance_not_each_nearest() -> None:
    """Anchors on one row: b's nearest prediction is p (1 cell), which would leave a with q (8 cells, total 9);
    the pairing takes a-p and b-q (3 + 4 = 7)."""
    targets = [replace(A, left=0), replace(A, left=4)]
    predicted = [ReadObject(0, 0, 1, A.top, left, 12) for left in (3, 8)]
    assert pair_objects(targets, predicted) == [(0, 0), (1, 1)]
    assert pair_objects(targets, []) == [] and pair_objects([], predicted) == []


def test_a_batch_is_scored_per_sample_and_averaged_in_percent() -> None:
    """Two samples of different grid sizes in one padded batch: the perfect one and the wrong shape."""
    small = draw([A], 12)
    target = torch.full((2, GRID, GRID), -1, dtype=torch.long)
    target[0] = torch.tensor(TARGET)
    target[1, :12, :12] = torch.tensor(small)
    pred = target.clone()
    pred[1, :12, :12] = torch.tensor(draw([replace(A, shape=3)], 12))
    values = compute_metrics(pred_grids=pred, target_grids=target, names=list(FACTOR_METRICS))
    assert values[ALL].tolist() == [1.0, 0.0] and values[COLOUR].tolist() == [1.0, 1.0]
    summary = summarize(values)
    assert summary[ALL] == 50.0 and summary[SHAPE] == 50.0 and summary[POSITION] == 100.0


def test_a_target_that_is_no_scene_makes_its_sample_nan_never_zero() -> None:
    """NaN for that sample alone (a value must not depend on the batch it came in), with a status saying why."""
    target = torch.zeros(2, 6, 6, dtype=torch.long)
    target[1, 1:3, 1:3] = 2  # red is none of the four colours
    values = compute_metrics(pred_grids=target.clone(), target_grids=target, names=list(FACTOR_METRICS))
    for name in FACTOR_METRICS:
        assert values[name][0] == 1 and values[name][1].isnan()  # the first is an empty scene, predicted empty
        assert values.status[name].startswith("unavailable: NaN where the target is not a scene; in one, the object "
                                              "at row 1, column 1 has no colour")
    alone = compute_metrics(pred_grids=target[1:].clone(), target_grids=target[1:], names=[ALL])
    assert math.isnan(summarize(alone)[ALL])


def test_the_metrics_are_registered_as_percentages_and_left_out_of_score_by_default() -> None:
    for name in FACTOR_METRICS:
        spec = METRICS[name]
        assert spec.percent and spec.direction == "higher" and spec.gap == "difference" and not spec.score_default
    assert METRICS["shape_accuracy"].description.endswith("(Compositional-ARC), percent")  # not replaced


# --- where they are available: the families that list them ----------------------------------------------------------

SPEC = RenderSpec(size=(64, 64))
SCENE_GRID = 16


def _fake_scene(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Two objects of random factors at fixed anchors, each moved one cell down (COGITAO's `translate_down`,
    which `ground_truth` applies)."""
    rng = sample_rng(config.seed, split, index)
    objects = [SceneObject(rng.randrange(4), rng.randrange(4), rng.randrange(4), top, left) for top, left in
               ((1, 1), (8, 9))]
    moved = [replace(obj, top=obj.top + 1) for obj in objects]
    return TaskSample(draw(objects, SCENE_GRID), draw(moved, SCENE_GRID), ("translate_down",), task_key="fake",
                      seed=config.seed, split=split, index=index)


@pytest.fixture
def fake_scenes() -> Iterator[str]:
    """A family whose samples are scenes and which lists the factor metrics; removed again afterwards."""
    FAMILIES.add("fake_scenes", TaskFamily(_fake_scene, "fake scene studies", metrics=frozenset(FACTOR_METRICS)),
                 "two scene objects moved one cell down")
    yield "fake_scenes"
    FAMILIES.remove("fake_scenes")


def _evaluate(config: TaskConfig, baselines: tuple[str, ...], out: Path) -> dict:
    data = task_data(config, SPEC, ("test_id",), {"task": "test"})
    device = pick_device("cpu")
    models, _ = build_baselines(baselines, data, device, batch_size=4)
    return evaluate_predictors(models, data, out, device=device, batch_size=4, sheet_samples=1).metrics


def test_a_family_that_lists_them_gets_them_through_render_and_decode(fake_scenes: str, tmp_path: Path) -> None:
    config = TaskConfig.from_dict({"family": fake_scenes, "seed": 5, "grid_height": SCENE_GRID,
                                   "grid_width": SCENE_GRID,
                                   "samples": {"train": 4, "val_id": 2, "val_ood": 2, "test_id": 4, "test_ood": 2}})
    assert family_metric_status(config) == {}
    metrics = _evaluate(config, ("ground_truth", "copy_input"), tmp_path)
    assert not any(name in metrics["status"] for name in FACTOR_METRICS)
    perfect = metrics["baselines"]["ground_truth"]["splits"]["test_id"]["metrics"]
    assert perfect["grid_accuracy"] == 100.0 and all(perfect[name] == 100.0 for name in FACTOR_METRICS)
    copied = metrics["baselines"]["copy_input"]["splits"]["test_id"]["metrics"]  # right factors, each one cell up
    assert [copied[name] for name in FACTOR_METRICS] == [100.0, 100.0, 100.0, 100.0, 0.0]


def test_every_other_family_reports_them_unavailable_with_the_reason(fake_scenes: str, tmp_path: Path) -> None:
    assert family_metrics()["factor_accuracy"][-1] == "fake scene studies"
    config = TaskConfig.from_dict({"transformations": ["translate_up"], "grid_height": 8, "grid_width": 8,
                                   "n_objects": [1, 1],
                                   "samples": {"train": 4, "val_id": 2, "val_ood": 2, "test_id": 2, "test_ood": 2}})
    metrics = _evaluate(config, ("copy_input",), tmp_path)
    for name in FACTOR_METRICS:
        assert name not in metrics["baselines"]["copy_input"]["splits"]["test_id"]["metrics"]
        reason = metrics["status"][name]
        assert reason.startswith("unavailable: defined only for ") and "fake scene studies" in reason
        assert reason.endswith(", not for sequence studies")
    assert set(family_metric_status(None)) >= set(FACTOR_METRICS)  # data made elsewhere without grids


def test_score_computes_them_from_the_decoded_grids_when_asked(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    images = {"t/a.png": TARGET, "p/a.png": PREDICTIONS["one_wrong_shape"][0],
              "t/b.png": np.full((GRID, GRID), 2, np.uint8), "p/b.png": TARGET}  # b: one red block, no scene
    for name, grid in images.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        Image.fromarray(render(grid, SPEC)).save(tmp_path / name)
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(SPEC.to_dict()))
    assert main(["score", str(tmp_path / "p"), str(tmp_path / "t"), "--spec", str(spec_file), "--grid",
                 f"{GRID}x{GRID}", "--metrics", f"{ALL},{SHAPE}", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = {row["key"]: row for row in result["pairs"]}
    assert (rows["a"][ALL], rows["a"][SHAPE]) == (50.0, 50.0) and result["mean"][ALL] == 50.0
    assert rows["b"][ALL] is None and result["status"][ALL].startswith("unavailable: NaN where the target is not")


def test_on_a_real_svib_study_ground_truth_is_perfect_and_copy_input_is_not(tmp_path: Path) -> None:
    """`ground_truth` draws a scene's true target (the rule is the study's, not the batch's); copy_input keeps
    the input's factors, which MIntra (move right, colour from shape) changes in colour and position."""
    from vision_bench.tasks.studies import get_study

    config = get_study("svib/MIntra/0.2", n_train=4, n_val=2, n_test=4)
    metrics = _evaluate(config, ("ground_truth", "copy_input"), tmp_path)
    perfect = metrics["baselines"]["ground_truth"]["splits"]["test_id"]["metrics"]
    assert perfect["grid_accuracy"] == 100.0 and all(perfect[name] == 100.0 for name in FACTOR_METRICS)
    copied = metrics["baselines"]["copy_input"]["splits"]["test_id"]["metrics"]
    assert copied["factor_position_accuracy"] == 0.0 and copied["factor_shape_accuracy"] == 100.0
