"""C-ARC's error taxonomy: hand-made predictions of known class, on a grid, a batch and an episode canvas."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vision_bench.metrics import METRICS, MetricInputs
from vision_bench.metrics.compute import compute_metrics
from vision_bench.metrics.error_taxonomy import (
    ERROR_CLASSES,
    classify,
    classify_batch,
    partial_outcomes,
)
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.selectors import parse_selector
from vision_bench.tasks.task_code import encode_task_code

SEQUENCE = ("translate_down", "recolor_red", "extend_up")


def _grid(cells: dict[tuple[int, int], int]) -> np.ndarray:
    grid = np.zeros((10, 10), dtype=np.uint8)
    for (row, col), color in cells.items():
        grid[row, col] = color
    return grid


INDICATOR = {(7, 7): 6, (7, 8): 6, (8, 8): 6}
OBJECT = {(2, 2): 5, (3, 2): 5, (3, 3): 5}  # an L of color 5; the indicator (color 6) stays
INPUT = _grid({**OBJECT, **INDICATOR})
DOWN = _grid({(3, 2): 5, (4, 2): 5, (4, 3): 5, **INDICATOR})
DOWN_RED = _grid({(3, 2): 1, (4, 2): 1, (4, 3): 1, **INDICATOR})
# extend_up after both: every cell adds the one above it
TARGET = _grid({(2, 2): 1, (3, 2): 1, (4, 2): 1, (3, 3): 1, (4, 3): 1, **INDICATOR})


@pytest.mark.parametrize(("prediction", "expected"), [
    (TARGET, "correct"),
    (TARGET[:9], "format"),
    (INPUT, "no_transformation"),
    (DOWN, "primitive"),
    (_grid({(2, 2): 1, (3, 2): 1, (3, 3): 1, **INDICATOR}), "primitive"),  # recolor_red alone
    (DOWN_RED, "level_1"),
    (_grid({(1, 2): 5, (2, 2): 5, (3, 2): 5, (2, 3): 5, (3, 3): 5, **INDICATOR}), "primitive"),  # extend_up alone
    (_grid({(2, 2): 5, (3, 2): 5, (4, 2): 5, (3, 3): 5, (4, 3): 5, **INDICATOR}), "level_1"),  # down, then up
    (np.roll(TARGET, 1, axis=1) * (np.roll(TARGET, 1, axis=1) == 1) + _grid(INDICATOR), "invalid_position"),
    (_grid({(2, 2): 1, (3, 2): 1, (4, 2): 1, (3, 3): 1, **INDICATOR}), "invalid_shape"),
    (_grid(INDICATOR), "other"),
    (_grid({(2, 2): 3, (3, 2): 3, (4, 2): 3, (3, 3): 3, (4, 3): 3, **INDICATOR}), "other"),
])
def test_hand_made_predictions_get_their_class(prediction: np.ndarray, expected: str) -> None:
    assert classify(INPUT, prediction, TARGET, SEQUENCE, episode=True) == expected


def test_partial_outcomes_leave_the_untouched_indicator_alone() -> None:
    outcomes = partial_outcomes(INPUT, TARGET, SEQUENCE, episode=True)
    assert len(outcomes.primitive) == 3 and len(outcomes.level_1) == 3
    assert any(np.array_equal(grid, DOWN) for grid in outcomes.primitive)
    assert all(np.array_equal(grid[7:, 7:], INPUT[7:, 7:]) for grid in (*outcomes.primitive, *outcomes.level_1))


def test_cogitao_sequences_get_primitives_but_no_level_1() -> None:
    grid = _grid({(1, 1): 4, (1, 2): 4, (6, 5): 2})
    target = _grid({(2, 2): 4, (2, 3): 4, (7, 6): 2})  # every object: translate_down, then translate_right
    outcomes = partial_outcomes(grid, target, ("translate_down", "translate_right"))
    assert len(outcomes.primitive) == 2 and outcomes.level_1 == ()
    down = _grid({(2, 1): 4, (2, 2): 4, (7, 5): 2})
    assert classify(grid, down, target, ("translate_down", "translate_right")) == "primitive"
    assert classify(grid, _grid({(2, 1): 4, (2, 2): 4}), target, ("translate_down", "translate_right")) == "other"


def test_a_step_that_leaves_the_grid_gives_no_outcome() -> None:
    grid = _grid({(0, 4): 3})
    outcomes = partial_outcomes(grid, _grid({(1, 4): 1}), ("extend_up", "translate_down", "recolor_red"),
                                episode=True)
    assert len(outcomes.primitive) == 2  # extend_up leaves the grid


def test_batches_and_episode_canvases_are_classified_per_query() -> None:
    study = [(np.zeros((10, 10), np.uint8), np.zeros((10, 10), np.uint8))] * 3
    canvas_in = canvas.compose("3shot", study, INPUT, None)
    canvas_target = canvas.compose("3shot", study, INPUT, TARGET)
    canvas_primitive = canvas.compose("3shot", study, INPUT, DOWN)
    padded = np.full(canvas_in.shape, -1)
    padded[:10, :10] = INPUT
    inputs = torch.tensor(np.stack([canvas_in, canvas_in, padded]), dtype=torch.long)  # a 10x10 grid padded
    targets = inputs.clone()
    targets[0], targets[1] = torch.tensor(canvas_target), torch.tensor(canvas_target)
    targets[2, :10, :10] = torch.tensor(TARGET)
    preds = targets.clone()
    preds[1] = torch.tensor(canvas_primitive)
    preds[2, :10, :10] = torch.tensor(DOWN_RED)
    preds[preds < 0] = 0
    assert classify_batch(preds, targets, inputs, [SEQUENCE] * 3, episode_setup="3shot") == [
        "correct", "primitive", "level_1"]
    batch = MetricInputs(pred_grids=preds, target_grids=targets, input_grids=inputs, sequences=[SEQUENCE] * 3,
                         episode_setup="3shot")
    assert METRICS["error_primitive"].function(batch).tolist() == [0.0, 1.0, 0.0]
    assert METRICS["error_level_1"].function(batch).tolist() == [0.0, 0.0, 1.0]


def test_error_metrics_are_registered_and_need_the_samples_sequences() -> None:
    for name in ERROR_CLASSES:
        spec = METRICS[f"error_{name}"]
        assert spec.direction == "lower" and spec.percent and "sequences" in spec.needs


def test_a_sequence_with_no_net_effect_still_has_its_primitives() -> None:
    grid = _grid({(4, 4): 2, (4, 5): 2})
    up = _grid({(3, 4): 2, (3, 5): 2})
    sequence = ("translate_up", "translate_down")  # the target is the input (Experiment 0 trains on it)
    assert classify(grid, up, grid, sequence) == "primitive"


def test_only_the_objects_the_selector_picks_move() -> None:
    grid = _grid({(2, 2): 2, (6, 6): 3})
    target = _grid({(2, 2): 2, (7, 7): 3})  # color 3: translate_down, then translate_right
    sequence = ("translate_down", "translate_right")
    three = parse_selector({"kind": "color", "color": 3})
    down_three = _grid({(2, 2): 2, (7, 6): 3})
    assert classify(grid, down_three, target, sequence, selector=three) == "primitive"
    assert classify(grid, _grid({(3, 2): 2, (7, 6): 3}), target, sequence, selector=three) != "primitive"
    code = torch.tensor([encode_task_code(sequence, 4, selector=three)])
    as_tensor = [torch.tensor(g, dtype=torch.long)[None] for g in (down_three, target, grid)]
    assert classify_batch(*as_tensor, [sequence], task_codes=code) == ["primitive"]


def test_objects_are_extracted_with_the_configs_connectivity() -> None:
    grid = _grid({(2, 2): 4, (3, 3): 4})  # one object under 8-connectivity, two single cells under 4
    target = _grid({(1, 3): 4, (2, 4): 4})  # each single cell: translate_up, then translate_right
    up = _grid({(1, 2): 4, (2, 3): 4})
    single_cells = parse_selector({"kind": "shape", "shape": ["#"]})
    sequence = ("translate_up", "translate_right")
    assert classify(grid, up, target, sequence, selector=single_cells, connectivity=4) == "primitive"
    assert classify(grid, up, target, sequence, selector=single_cells) == "invalid_position"  # 8: nothing picked


def test_an_unregistered_step_makes_the_taxonomy_unavailable() -> None:
    grid = torch.tensor(_grid({(2, 2): 4}), dtype=torch.long)[None]
    values = compute_metrics(pred_grids=grid, target_grids=grid.roll(1, 1), input_grids=grid,
                             sequences=[("spin_twice",)])
    assert math.isnan(float(values["error_primitive"][0]))
    assert values.status["error_primitive"] == (
        "unavailable: error taxonomy: spin_twice not in the transformation registry; "
        "load the extension that defines them to classify errors")


def test_a_sample_without_a_sequence_makes_the_taxonomy_unavailable() -> None:
    """SVIB's scenes carry no transformation sequence: a rule over factors made the target, so no class fits."""
    grid = torch.tensor(_grid({(2, 2): 4}), dtype=torch.long)[None]
    values = compute_metrics(pred_grids=grid, target_grids=grid.roll(1, 1), input_grids=grid, sequences=[()])
    assert math.isnan(float(values["error_other"][0]))
    assert values.status["error_other"] == (
        "unavailable: error taxonomy: a sample has no transformation sequence, so its partial outcomes are not "
        "defined")
