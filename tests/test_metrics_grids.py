"""Grid and object metrics: hand-computed values on small cases, padding, stubbornness, laws."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.errors import TransformationError
from vision_bench.metrics import MetricInputError, compute_metrics, summarize
from vision_bench.metrics.objects import stubbornness

GRID_METRICS = ["grid_accuracy", "pixel_accuracy", "object_pixel_accuracy", "object_accuracy",
                "color_accuracy", "shape_accuracy"]

# Object A (color 1, an L of 3 cells) and object B (color 2, a vertical bar of 2 cells).
TARGET = [
    [0, 0, 0, 0, 0],
    [0, 1, 1, 0, 0],
    [0, 1, 0, 0, 0],
    [0, 0, 0, 0, 2],
    [0, 0, 0, 0, 2],
]


def edited(changes: dict[tuple[int, int], int], base: list[list[int]] = TARGET) -> list[list[int]]:
    grid = [row[:] for row in base]
    for (row, col), value in changes.items():
        grid[row][col] = value
    return grid


MOVED = edited({(1, 1): 0, (2, 1): 0, (1, 3): 1, (2, 2): 1})  # A one cell to the right
RECOLORED = edited({(1, 1): 3, (1, 2): 3, (2, 1): 3})  # A painted color 3
REMOVED = edited({(3, 4): 0, (4, 4): 0})  # B gone
EXTRA = edited({(4, 0): 5})  # a new single cell, touching nothing
ATTACHED = edited({(3, 0): 5})  # a new cell touching A diagonally: A is no longer the same object
BLANK = edited({(1, 1): 0, (1, 2): 0, (2, 1): 0, (3, 4): 0, (4, 4): 0})

# (prediction, GA, PPA, Obj-PPA, object accuracy, color accuracy, shape accuracy), by hand:
CASES = {
    # wrong cells (1,1) (1,3) (2,1) (2,2); union of non-background = 5 + 5 - 3 shared = 7, 3 right
    "moved": (MOVED, 0, 21 / 25, 3 / 7, 1 / 2, 1, 1),
    # 3 cells wrong, all inside the union of 5
    "recolored": (RECOLORED, 0, 22 / 25, 2 / 5, 1 / 2, 0, 1),
    "removed": (REMOVED, 0, 23 / 25, 3 / 5, 1 / 2, 0, 0),
    # union grows to 6 with one wrong cell; both target objects intact; one color and one shape too many
    "extra object": (EXTRA, 0, 24 / 25, 5 / 6, 1, 0, 0),
    "attached cell": (ATTACHED, 0, 24 / 25, 5 / 6, 1 / 2, 0, 0),
    "blank": (BLANK, 0, 20 / 25, 0, 0, 0, 0),
    "identical": (TARGET, 1, 1, 1, 1, 1, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hand_computed_grid_metrics(case: str) -> None:
    pred, *expected = CASES[case]
    values = compute_metrics(pred_grids=torch.tensor([pred]), target_grids=torch.tensor([TARGET]), names=GRID_METRICS)
    for name, value in zip(GRID_METRICS, expected):
        assert values[name].item() == pytest.approx(value), name


def test_batch_and_percent_aggregates() -> None:
    preds = torch.tensor([CASES[c][0] for c in CASES])
    targets = torch.tensor([TARGET] * len(CASES))
    summary = summarize(compute_metrics(pred_grids=preds, target_grids=targets))
    assert summary["grid_accuracy"] == pytest.approx(100 / 7)
    assert summary["pixel_accuracy"] == pytest.approx(100 * (21 + 22 + 23 + 24 + 24 + 20 + 25) / 25 / 7)
    assert summary["object_accuracy"] == pytest.approx(100 * 4 / 7)


def test_all_background_pairs() -> None:
    empty = torch.zeros(1, 3, 3, dtype=torch.long)
    one_cell = empty.clone()
    one_cell[0, 1, 1] = 4
    both_empty = compute_metrics(pred_grids=empty, target_grids=empty, names=GRID_METRICS)
    assert all(both_empty[name].item() == 1 for name in GRID_METRICS)
    spurious = compute_metrics(pred_grids=one_cell, target_grids=empty, names=GRID_METRICS)
    assert spurious["object_pixel_accuracy"].item() == 0 and spurious["object_accuracy"].item() == 0
    assert spurious["pixel_accuracy"].item() == pytest.approx(8 / 9)


def test_color_and_shape_use_single_color_objects() -> None:
    # target: one two-colored object; prediction: the two cells apart. Per color and per shape
    # the counts agree (Compositional-ARC objects have one color), but the object is not reproduced.
    values = compute_metrics(pred_grids=torch.tensor([[[1, 0, 2]]]), target_grids=torch.tensor([[[1, 2, 0]]]))
    assert values["color_accuracy"].item() == 1 and values["shape_accuracy"].item() == 1
    assert values["object_accuracy"].item() == 0
    # same shapes in other places and colors swapped: colors and shapes still agree
    swapped = compute_metrics(pred_grids=torch.tensor([[[2, 0, 0], [0, 0, 1]]]),
                              target_grids=torch.tensor([[[1, 0, 0], [0, 0, 2]]]))
    assert swapped["color_accuracy"].item() == 1 and swapped["shape_accuracy"].item() == 1
    # an L versus a bar of the same color: colors agree, shapes do not
    shapes = compute_metrics(pred_grids=torch.tensor([[[3, 3], [0, 3]]]), target_grids=torch.tensor([[[3, 3], [3, 0]]]))
    assert shapes["color_accuracy"].item() == 1 and shapes["shape_accuracy"].item() == 0


def test_only_real_cells_count() -> None:
    target = torch.full((1, 5, 5), -1)
    target[0, :3, :3] = torch.tensor([[0, 0, 0], [0, 6, 0], [0, 0, 0]])
    pred = torch.full((1, 5, 5), 7)  # garbage outside the 3x3 grid is ignored
    pred[0, :3, :3] = target[0, :3, :3]
    values = compute_metrics(pred_grids=pred, target_grids=target, names=GRID_METRICS)
    assert all(values[name].item() == 1 for name in GRID_METRICS)
    pred[0, 0, 0] = 6
    values = compute_metrics(pred_grids=pred, target_grids=target, names=["pixel_accuracy"])
    assert values["pixel_accuracy"].item() == pytest.approx(8 / 9)


@pytest.mark.parametrize(
    ("pred", "target", "message"),
    [
        ([[[0, -1]]], [[[0, 0]]], "padding \\(-1\\) inside the target grid"),
        ([[[0, 0, 0]]], [[[0, 0]]], "pad both batches to the same size"),
        ([[[0, 11]]], [[[0, 0]]], "cells must be 0-9 \\(or -1 for padding, 10 for no colour\\)"),
        ([[[0, 0]]], [[[0, 10]]], "cells must be 0-9 \\(or -1 for padding\\)"),
        ([[[0, 0]]], [[[-1, -1]]], "holds no cells"),
    ],
)
def test_bad_grids_raise_one_clear_error(pred: list, target: list, message: str) -> None:
    with pytest.raises(MetricInputError, match=message):
        compute_metrics(pred_grids=torch.tensor(pred), target_grids=torch.tensor(target), names=["pixel_accuracy"])


def test_a_predicted_cell_without_colour_is_wrong_and_objects_read_it_as_background() -> None:
    """NO_COLOUR (10, a grid model's padding class inside the grid) never matches a target cell: GA, PPA, Obj-PPA
    and the paper's two count it wrong, on background and on object cells alike; the object metrics read it as
    background, as the model's drawn prediction shows it."""
    from vision_bench.metrics.inputs import NO_COLOUR

    on_background = edited({(0, 0): NO_COLOUR})
    on_object = edited({(3, 4): NO_COLOUR})  # B's top cell
    names = [*GRID_METRICS, "paper_ppa", "paper_obj_ppa"]
    values = compute_metrics(pred_grids=torch.tensor([on_background, on_object]),
                             target_grids=torch.tensor([TARGET, TARGET]), names=names, canvas=(5, 5))
    # by hand: 5 target object cells; on background the union grows to 6, on B's cell the union stays 5
    expected = {"grid_accuracy": (0, 0), "pixel_accuracy": (24 / 25, 24 / 25),
                "object_pixel_accuracy": (5 / 6, 4 / 5), "paper_ppa": (24 / 25, 24 / 25),
                "paper_obj_ppa": (1, 4 / 5), "object_accuracy": (1, 1 / 2), "color_accuracy": (1, 1),
                "shape_accuracy": (1, 0)}
    for name, pair in expected.items():
        assert values[name].tolist() == pytest.approx(list(pair)), name


def test_grids_a_model_predicted_are_laid_on_the_targets() -> None:
    """Cropped or padded to the targets' padded size; a real target cell beyond the predicted grid is NO_COLOUR."""
    from vision_bench.metrics.inputs import NO_COLOUR, lay_on_targets

    target = torch.full((2, 3, 3), -1)
    target[0, :3, :3], target[1, :2, :3] = 1, 2
    predicted = torch.full((2, 2, 4), -1)
    predicted[0, :2, :2], predicted[1, :2, :4] = 1, 2
    laid = lay_on_targets(predicted, target)
    assert laid.tolist() == [[[1, 1, NO_COLOUR], [1, 1, NO_COLOUR], [NO_COLOUR] * 3], [[2, 2, 2], [2, 2, 2], [-1] * 3]]
    values = compute_metrics(pred_grids=laid, target_grids=target, names=["pixel_accuracy"])
    assert values["pixel_accuracy"].tolist() == pytest.approx([4 / 9, 1])


def single_cell(row: int, col: int, color: int = 3, size: int = 4) -> list[list[int]]:
    grid = [[0] * size for _ in range(size)]
    grid[row][col] = color
    return grid


def test_stubbornness_with_the_real_transformations() -> None:
    id_sequences = [["translate_right"], ["translate_up", "translate_up"]]
    inputs = torch.tensor([single_cell(1, 1), single_cell(1, 1), single_cell(2, 3)])
    targets = torch.tensor([single_cell(2, 1), single_cell(2, 1), single_cell(3, 3)])  # OOD: translate_down
    preds = torch.tensor([
        single_cell(1, 2),  # the ID translate_right: stubborn
        single_cell(2, 1),  # the correct OOD answer
        single_cell(0, 3),  # translate_right leaves the grid; two steps up is an ID answer: stubborn
    ])
    values = compute_metrics(pred_grids=preds, target_grids=targets, input_grids=inputs, id_sequences=id_sequences)
    assert values["stubbornness"].tolist() == [1, 0, 1]
    assert summarize({"stubbornness": values["stubbornness"]})["stubbornness"] == pytest.approx(200 / 3)


L_SHAPE = [[0, 0, 0, 0], [0, 2, 2, 0], [0, 2, 0, 0], [0, 0, 0, 0]]
BAR = [[0, 0, 0, 0], [0, 2, 2, 0], [0, 0, 0, 0], [0, 0, 0, 0]]  # mirror_vertical leaves it as it is
MIRROR_TWICE = [["mirror_horizontal", "mirror_horizontal"]]  # CompGen C1-1's identity training sequence


def test_strict_stubbornness_does_not_count_a_copy_through_an_identity_sequence() -> None:
    """CompGen C1-1 trains on mirror_horizontal twice, the identity: copying the input matches it, so
    copy_input is 100% stubborn by the paper's definition; the strict variant counts only sequences that
    change that input."""
    mirrored = [[0, 0, 0, 0], [0, 2, 0, 0], [0, 2, 2, 0], [0, 0, 0, 0]]  # mirror_horizontal flips the rows
    id_sequences = [*MIRROR_TWICE, ["mirror_horizontal"]]
    inputs = torch.tensor([L_SHAPE] * 3)
    targets = torch.tensor([single_cell(0, 0, 2)] * 3)  # any OOD answer
    preds = torch.tensor([L_SHAPE, mirrored, single_cell(3, 3, 2)])  # a copy, the ID mirror, neither
    values = compute_metrics(pred_grids=preds, target_grids=targets, input_grids=inputs, id_sequences=id_sequences)
    assert values["stubbornness"].tolist() == [1, 1, 0]
    assert values["stubbornness_strict"].tolist() == [0, 1, 0]


def _mirrored_vertically(grid: list[list[int]]) -> list[list[int]]:
    from vision_bench.tasks.transformations import apply_sequence

    return np.asarray(apply_sequence(np.array(grid, dtype=np.uint8), ["mirror_vertical"])).tolist()


def test_stubbornness_leaves_out_a_sample_whose_correct_answer_an_identity_training_sequence_gives() -> None:
    """OOD sequence mirror_vertical: the bar is unchanged by it, the L is not. The identity training sequence
    leaves both inputs as they are, so the bar's correct answer, its input, is that sequence's answer too: the paper's
    form has nothing to say on the bar (NaN) and counts the copy stubborn on the L. The strict form counts neither
    copy and leaves nothing out."""
    assert _mirrored_vertically(BAR) == BAR and _mirrored_vertically(L_SHAPE) != L_SHAPE
    inputs = torch.tensor([BAR, L_SHAPE])
    targets = torch.tensor([_mirrored_vertically(BAR), _mirrored_vertically(L_SHAPE)])
    names = ["stubbornness", "stubbornness_strict"]
    copied = compute_metrics(pred_grids=inputs, target_grids=targets, input_grids=inputs, id_sequences=MIRROR_TWICE,
                             names=names)
    unchanged, changed = copied["stubbornness"].tolist()
    assert np.isnan(unchanged) and changed == 1
    assert copied["stubbornness_strict"].tolist() == [0, 0]
    assert summarize(copied) == {"stubbornness": 100.0, "stubbornness_strict": 0.0}  # over one sample, and two
    assert copied.status == {"stubbornness": "ok", "stubbornness_strict": "ok"}
    solved = compute_metrics(pred_grids=targets, target_grids=targets, input_grids=inputs, id_sequences=MIRROR_TWICE,
                             names=names)
    assert summarize(solved) == {"stubbornness": 0.0, "stubbornness_strict": 0.0}


def test_a_sample_whose_target_is_its_input_still_shows_stubbornness_where_training_changes_it() -> None:
    """OOD mirror_vertical leaves the bar as it is; training translated it up. A model that moves the bar up applied
    the training rule instead of the OOD one: stubborn in both forms. Copying the bar (the right answer) is not."""
    from vision_bench.tasks.transformations import apply_sequence

    moved = np.asarray(apply_sequence(np.array(BAR, dtype=np.uint8), ["translate_up"])).tolist()
    assert moved != BAR and _mirrored_vertically(BAR) == BAR
    inputs = torch.tensor([BAR, BAR])
    values = compute_metrics(pred_grids=torch.tensor([moved, BAR]), target_grids=inputs, input_grids=inputs,
                             id_sequences=[["translate_up"]], names=["stubbornness", "stubbornness_strict"])
    assert values["stubbornness"].tolist() == values["stubbornness_strict"].tolist() == [1, 0]
    assert values.status == {"stubbornness": "ok", "stubbornness_strict": "ok"}


def test_stubbornness_of_left_out_samples_only_is_nan_with_the_reason() -> None:
    """Every target is its input and the identity training sequence gives it: the paper's form has no sample to
    score and says why; the strict form scores the copies 0."""
    from vision_bench.metrics.registry import ALL_UNCHANGED

    inputs = torch.tensor([BAR, single_cell(2, 2, 4)])
    values = compute_metrics(pred_grids=inputs, target_grids=inputs, input_grids=inputs, id_sequences=MIRROR_TWICE,
                             names=["stubbornness", "stubbornness_strict"])
    assert values["stubbornness"].isnan().all() and values["stubbornness_strict"].tolist() == [0, 0]
    assert np.isnan(summarize(values)["stubbornness"]) and summarize(values)["stubbornness_strict"] == 0.0
    assert values.status == {"stubbornness": ALL_UNCHANGED, "stubbornness_strict": "ok"}
    assert ALL_UNCHANGED.startswith("unavailable: ")


def test_stubbornness_skips_sequences_that_cannot_be_applied() -> None:
    calls = []

    def apply(grid: np.ndarray, names: list[str]) -> np.ndarray:
        calls.append(tuple(names))
        if names == ["breaks"]:
            raise TransformationError("object leaves the grid")
        return np.fliplr(grid)

    grid = torch.tensor([[[1, 0, 0]]])
    flipped = torch.tensor([[[0, 0, 1]]])
    values = stubbornness(flipped, flipped, grid, [["breaks"], ["flip"]], apply_sequence=apply)
    assert values.tolist() == [1] and calls == [("breaks",), ("flip",)]
    with pytest.raises(MetricInputError, match="id_sequences is empty"):
        stubbornness(flipped, flipped, grid, [], apply_sequence=apply)


def test_named_metric_without_its_inputs_says_what_is_missing() -> None:
    grid = torch.tensor([TARGET])
    with pytest.raises(MetricInputError, match="needs input_grids, id_sequences"):
        compute_metrics(pred_grids=grid, target_grids=grid, names=["stubbornness"])
    assert "stubbornness" not in compute_metrics(pred_grids=grid, target_grids=grid)


grids = st.lists(st.lists(st.integers(0, 3), min_size=4, max_size=4), min_size=3, max_size=3)


@settings(max_examples=40, deadline=None)
@given(grids, grids)
def test_grid_metric_laws(pred: list[list[int]], target: list[list[int]]) -> None:
    forward = compute_metrics(pred_grids=torch.tensor([pred]), target_grids=torch.tensor([target]))
    backward = compute_metrics(pred_grids=torch.tensor([target]), target_grids=torch.tensor([pred]))
    values = {name: forward[name].item() for name in GRID_METRICS}
    assert all(0 <= v <= 1 for v in values.values())
    assert (values["grid_accuracy"] == 1) == (values["pixel_accuracy"] == 1) == (pred == target)
    if pred == target:
        assert all(v == 1 for v in values.values())
    for symmetric in ("pixel_accuracy", "object_pixel_accuracy", "color_accuracy", "shape_accuracy"):
        assert values[symmetric] == pytest.approx(backward[symmetric].item())


def test_arc_outputs_score_perfectly_and_shapes_ignore_color(arc_dir) -> None:
    permutation = np.array([0, 2, 3, 4, 5, 6, 7, 8, 9, 1])
    for path in sorted(arc_dir.glob("*.json"))[:40]:
        output = np.array(json.loads(path.read_text())["train"][0]["output"])
        grid = torch.from_numpy(output)[None]
        recolored = torch.from_numpy(permutation[output])[None]
        same = compute_metrics(pred_grids=grid, target_grids=grid)
        assert all(same[name].item() == 1 for name in GRID_METRICS), path.name
        shifted = compute_metrics(pred_grids=recolored, target_grids=grid, names=["shape_accuracy"])
        assert shifted["shape_accuracy"].item() == 1, path.name
