"""Object label masks (`data.masks.label_grids`) of rule studies with distractors and of C-ARC episodes."""

from __future__ import annotations

import numpy as np

from vision_bench.data.masks import label_grids
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.studies import get_study


def _cells(labels: np.ndarray, number: int) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in np.argwhere(labels == number)}


def _box_cells(grid: np.ndarray, box: list[int]) -> set[tuple[int, int]]:
    top, left, bottom, right = box
    return {(top + int(r), left + int(c)) for r, c in np.argwhere(grid[top:bottom, left:right] > 0)}


def test_distractors_keep_their_mask_while_picked_objects_follow_the_rule() -> None:
    """gcog/distractor/10: a distractor's label stays on its input cells in every frame; every label
    lies on the frame's coloured cells and covers the object's cells in its `output_bbox` at the end."""
    config = get_study("gcog/distractor/10", n_train=2, n_val=1, n_test=1)
    for index in range(2):
        sample = generate_sample(config, "train", index)
        grids = label_grids(sample)
        assert len(grids) == len(sample.frames)
        distractors = [k for k, obj in enumerate(sample.objects, start=1) if not obj["selected"]]
        assert distractors
        for number in distractors:
            start = _cells(grids[0], number)
            assert start and all(_cells(labels, number) == start for labels in grids)
        for labels, frame in zip(grids, sample.frames):
            assert (np.asarray(frame)[labels > 0] > 0).all()
        for number, obj in enumerate(sample.objects, start=1):
            top, left, bottom, right = obj["output_bbox"]
            cells = _cells(grids[-1], number)
            assert cells and all(top <= r < bottom and left <= c < right for r, c in cells)


def test_c_arc_masks_label_the_query_objects_in_both_slots() -> None:
    """Episodes 0-2 of carc/3shot: the input mask marks each query object in the input slot (nothing in the
    output slot, which is empty); the target mask marks it there too and its result in the output slot."""
    config = get_study("carc/3shot/1860", n_train=30, n_val=1, n_test=1)
    per_episode = config.episode.queries_per_episode
    for index in (0, per_episode, 2 * per_episode + 1):
        sample = generate_sample(config, "train", index)
        assert sample.task_code == (0,) * config.task_code_length
        first, last = label_grids(sample)
        assert first.shape == sample.input.shape and last.shape == sample.output.shape
        for number, obj in enumerate(sample.objects, start=1):
            in_cells = _box_cells(sample.input, obj["bbox"])
            out_cells = _box_cells(sample.output, obj["output_bbox"])
            assert in_cells and out_cells
            assert _cells(first, number) == in_cells
            assert _cells(last, number) == in_cells | out_cells
        assert set(np.unique(first)) == set(range(len(sample.objects) + 1))
