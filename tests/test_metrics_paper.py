"""The paper's PPA (COGITAO App. G.2, over the padded canvas) and Obj-PPA as COGITAO's released code
computes it (accuracy over target object cells), by hand."""

import math

import pytest
import torch

from vision_bench.metrics import MetricInputError, compute_metrics, summarize

NAMES = ["pixel_accuracy", "object_pixel_accuracy", "paper_ppa", "paper_obj_ppa"]
TARGET = [[0, 1], [2, 0]]
PRED = [[0, 1], [0, 0]]  # the 2 at (1, 0) is missed: 1 wrong cell of 4


def padded(grid: list[list[int]], side: int = 3) -> torch.Tensor:
    """One grid at the top-left of a side x side batch tensor, -1 elsewhere (as `collate` pads)."""
    out = torch.full((1, side, side), -1)
    out[0, : len(grid), : len(grid[0])] = torch.tensor(grid)
    return out


def values(pred: torch.Tensor, target: torch.Tensor, canvas=None) -> dict[str, float]:
    result = compute_metrics(pred_grids=pred, target_grids=target, canvas=canvas, names=NAMES)
    return {name: result[name].item() for name in NAMES}


def test_unpadded_grids_are_their_own_canvas() -> None:
    # canvas = the 2x2 grid: PPA 3/4 as the project's; both Obj-PPAs get 1 right of the 2 object cells
    assert values(torch.tensor([PRED]), torch.tensor([TARGET])) == pytest.approx(
        {"pixel_accuracy": 3 / 4, "object_pixel_accuracy": 1 / 2, "paper_ppa": 3 / 4, "paper_obj_ppa": 1 / 2})


def test_padding_cells_count_on_the_canvas() -> None:
    # 3x3 canvas: the 5 padding cells are right (predicted as padding), so 8 of 9 cells match
    assert values(padded(PRED), padded(TARGET), canvas=(3, 3)) == pytest.approx(
        {"pixel_accuracy": 3 / 4, "object_pixel_accuracy": 1 / 2, "paper_ppa": 8 / 9, "paper_obj_ppa": 1 / 2})


def test_colors_predicted_on_padding_are_wrong_on_the_canvas_only() -> None:
    pred = padded(PRED)
    pred[0, 0, 2], pred[0, 2, 2] = 0, 7  # outside the 2x2 grid: G.2 counts them, the other three do not
    assert values(pred, padded(TARGET), canvas=3) == pytest.approx(
        {"pixel_accuracy": 3 / 4, "object_pixel_accuracy": 1 / 2, "paper_ppa": 6 / 9, "paper_obj_ppa": 1 / 2})


def test_a_canvas_larger_than_the_batch_adds_padding_cells() -> None:
    # a 4x3 canvas around the unpadded 2x2 batch: 8 padding cells, all right; 11 of 12 match
    result = values(torch.tensor([PRED]), torch.tensor([TARGET]), canvas=(4, 3))
    assert (result["paper_ppa"], result["paper_obj_ppa"]) == pytest.approx((11 / 12, 1 / 2))
    summary = summarize(compute_metrics(pred_grids=torch.tensor([PRED]), target_grids=torch.tensor([TARGET]),
                                        canvas=(4, 3), names=["paper_ppa", "paper_obj_ppa"]))
    assert summary == pytest.approx({"paper_ppa": 1100 / 12, "paper_obj_ppa": 50})


def test_released_obj_ppa_counts_target_object_cells_only() -> None:
    target = torch.tensor([[[0, 3, 3], [0, 0, 5], [4, 0, 0]], [[1, 1, 0], [0, 0, 0], [0, 2, 2]]])
    pred = torch.tensor([[[3, 3, 0], [0, 0, 5], [0, 0, 0]], [[1, 1, 0], [0, 6, 0], [0, 2, 0]]])
    result = compute_metrics(pred_grids=pred, target_grids=target, names=NAMES)
    assert result["paper_ppa"].tolist() == pytest.approx([6 / 9, 7 / 9])  # wrong: 3 cells, then 2
    # released: of the 4 target object cells, (0,1) and (1,2) right; then (0,0), (0,1), (2,1) right of 4
    # (the extra 6 at (1,1) costs nothing)
    assert result["paper_obj_ppa"].tolist() == pytest.approx([2 / 4, 3 / 4])
    # the project's: of the 5 cells non-zero on either side, 2 right; then 3 right of 5
    assert result["object_pixel_accuracy"].tolist() == pytest.approx([2 / 5, 3 / 5])


def test_released_obj_ppa_of_a_target_without_objects_is_zero() -> None:
    empty = torch.zeros((1, 2, 2), dtype=torch.long)
    result = compute_metrics(pred_grids=empty, target_grids=empty, names=["paper_obj_ppa", "object_pixel_accuracy"])
    assert (result["paper_obj_ppa"].item(), result["object_pixel_accuracy"].item()) == (0.0, 1.0)


def test_padded_batch_without_a_canvas_is_unavailable() -> None:
    result = compute_metrics(pred_grids=padded(PRED), target_grids=padded(TARGET), names=NAMES)
    assert result["pixel_accuracy"].item() == pytest.approx(3 / 4)
    assert math.isnan(result["paper_ppa"].item()) and result["paper_obj_ppa"].item() == pytest.approx(1 / 2)
    assert result.status["paper_ppa"].startswith("unavailable: the batch's grids are padded")


@pytest.mark.parametrize(
    ("canvas", "message"),
    [
        ((2, 1), "canvas 2x1 is smaller than a target grid; give the size of the largest grid"),
        ((0, 3), "canvas: expected \\(m, n\\), two positive integers"),
        ((3, 3, 3), "canvas: expected \\(m, n\\), two positive integers"),
    ],
)
def test_bad_canvas_raises_one_clear_error(canvas: tuple, message: str) -> None:
    with pytest.raises(MetricInputError, match=message):
        compute_metrics(pred_grids=padded(PRED), target_grids=padded(TARGET), canvas=canvas, names=["paper_ppa"])
