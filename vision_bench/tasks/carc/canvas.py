"""One episode as one grid: the study pairs and the query on a canvas, for image-to-image models.

Layout (the same for every episode of a setup, so a model can learn where to look):

- a pair is its input grid and its output grid side by side, one background column apart;
- pairs follow each other left to right, `PAIRS_PER_ROW[setup]` to a row, two background columns
  apart, rows one background row apart; the study pairs come first (in the order of
  `episodes.STUDY_PLAN`), the query pair last; unused slots stay background;
- the model's input canvas has the query's output slot empty (background); its target is the
  same canvas with the query's output drawn there. Input and target therefore have one size,
  every image-to-image model and metric applies, the grid-level metrics score the whole canvas,
  and `query_slots` tells the error taxonomy where the query is.

3-Shot: 4 pairs, 2 per row: a 21 x 44 canvas. Systematicity: 13 pairs, 3 per row: 54 x 67.
Background separators keep objects of neighbouring grids from touching, so every object of the
canvas is still one 8-connected object of one grid.
"""

from __future__ import annotations

import numpy as np

from vision_bench.tasks.carc.grammar import GRID_SIDE

PAIR_GAP = 1
"""Background columns between a pair's input and output."""
PAIRS_GAP = 2
"""Background columns between two pairs of a row."""
ROW_GAP = 1
"""Background rows between two rows of pairs."""
PAIRS_PER_ROW = {"3shot": 2, "systematicity": 3}
STUDY_PAIRS = {"3shot": 3, "systematicity": 12}
PAIR_WIDTH = 2 * GRID_SIDE + PAIR_GAP


def n_rows(setup: str) -> int:
    pairs = STUDY_PAIRS[setup] + 1
    return -(-pairs // PAIRS_PER_ROW[setup])


def canvas_shape(setup: str) -> tuple[int, int]:
    """(height, width) of a setup's canvas."""
    per_row = PAIRS_PER_ROW[setup]
    return n_rows(setup) * (GRID_SIDE + ROW_GAP) - ROW_GAP, per_row * (PAIR_WIDTH + PAIRS_GAP) - PAIRS_GAP


def slot(setup: str, pair: int, side: int) -> tuple[int, int]:
    """(top, left) of pair `pair`'s input (`side` 0) or output (`side` 1) grid."""
    row, column = divmod(pair, PAIRS_PER_ROW[setup])
    return row * (GRID_SIDE + ROW_GAP), column * (PAIR_WIDTH + PAIRS_GAP) + side * (GRID_SIDE + PAIR_GAP)


def query_slots(setup: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """(top, left) of the query's input grid and of its output grid."""
    query = STUDY_PAIRS[setup]
    return slot(setup, query, 0), slot(setup, query, 1)


def setup_of_canvas(shape: tuple[int, int]) -> str | None:
    """The setup whose canvas has this shape, or None."""
    return next((setup for setup in PAIRS_PER_ROW if canvas_shape(setup) == tuple(shape)), None)


def compose(setup: str, study: list[tuple[np.ndarray, np.ndarray]], query_input: np.ndarray,
            query_output: np.ndarray | None) -> np.ndarray:
    """The canvas of an episode: study pairs, the query input, and the query output when given."""
    if len(study) != STUDY_PAIRS[setup]:
        raise ValueError(f"{setup} takes {STUDY_PAIRS[setup]} study pairs, got {len(study)}")
    canvas = np.zeros(canvas_shape(setup), dtype=np.uint8)
    grids = [*study, (query_input, query_output)]
    for pair, (grid_in, grid_out) in enumerate(grids):
        for side, grid in enumerate((grid_in, grid_out)):
            if grid is not None:
                top, left = slot(setup, pair, side)
                canvas[top:top + GRID_SIDE, left:left + GRID_SIDE] = grid
    return canvas


def crop(canvas: np.ndarray, corner: tuple[int, int]) -> np.ndarray:
    """The 10 x 10 grid of the canvas at `corner`."""
    top, left = corner
    return canvas[top:top + GRID_SIDE, left:left + GRID_SIDE]
