"""Grid validation and object extraction."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from render.grid import GridError, validate_grid
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects


def test_valid_grid_becomes_uint8() -> None:
    grid = validate_grid([[0, 1], [9, 3]])
    assert grid.dtype == np.uint8
    assert grid.tolist() == [[0, 1], [9, 3]]


def test_integral_floats_are_accepted() -> None:
    assert validate_grid(np.array([[1.0, 2.0]])).tolist() == [[1, 2]]


@pytest.mark.parametrize(
    ("grid", "fragment"),
    [
        ([[0, 1], [2]], "not rectangular: row 0 has 2 cells but row 1 has 1"),
        ([[0, 10]], "cell (0, 1) is 10"),
        ([[0, -1]], "cell (0, 1) is -1"),
        ([[0, 1.5]], "cell (0, 1) is 1.5"),
        ([[0, "a"]], "cell (0, 1) is 'a'"),
        ([], "non-empty list of rows"),
        ([1, 2], "row 0 is a int"),
        (np.zeros((2, 2, 2), dtype=int), "expected a 2-D grid, got 3 dimensions"),
        (np.zeros((101, 3), dtype=int), "shape 101x3 is out of range"),
        (np.zeros((0, 3), dtype=int), "shape 0x3 is out of range"),
        (np.array([[0.0, np.nan]]), "cell (0, 1) is"),
        (np.array([["a"]]), "values of type"),
    ],
)
def test_invalid_grids_name_the_problem(grid: object, fragment: str) -> None:
    with pytest.raises(GridError) as error:
        validate_grid(grid, name="input")
    assert fragment in str(error.value)
    assert str(error.value).startswith("input:")


def test_objects_8_connected_by_default_and_multicolored() -> None:
    grid = np.array(
        [
            [1, 2, 0, 0],
            [0, 3, 0, 5],
            [0, 0, 4, 0],
        ]
    )
    (obj,) = extract_objects(grid)
    assert (obj.top, obj.left) == (0, 0)
    assert obj.pixels.tolist() == [[1, 2, 0, 0], [0, 3, 0, 5], [0, 0, 4, 0]]
    assert obj.colors == [1, 2, 3, 4, 5]
    assert obj.n_cells == 5


def test_objects_4_connected() -> None:
    grid = np.array([[1, 0, 0], [0, 2, 2], [0, 0, 0]])
    objects = extract_objects(grid, connectivity=4)
    assert objects == [GridObject(np.array([[1]], np.uint8), 0, 0), GridObject(np.array([[2, 2]], np.uint8), 1, 1)]
    with pytest.raises(GridError, match="connectivity must be 4 or 8"):
        extract_objects(grid, connectivity=6)


def test_object_pixels_exclude_other_objects_inside_bbox() -> None:
    grid = np.array([[1, 1, 1], [1, 0, 1], [1, 0, 1], [0, 0, 0]])
    grid[1, 1] = 0
    grid = np.pad(grid, 2)
    grid[3, 3] = 0
    (outer,) = extract_objects(grid)
    assert outer.bbox == (2, 2, 5, 5)


@given(arrays(np.uint8, st.tuples(st.integers(1, 12), st.integers(1, 12)), elements=st.integers(0, 9)))
def test_extract_then_draw_round_trips(grid: np.ndarray) -> None:
    for connectivity in (4, 8):
        objects = extract_objects(grid, connectivity)
        assert np.array_equal(draw_objects(grid.shape, objects), grid)
        assert sum(o.n_cells for o in objects) == np.count_nonzero(grid)
