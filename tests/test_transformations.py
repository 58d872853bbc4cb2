"""The 28 transformations: hand-computed examples, constraints, laws (hypothesis), whole-grid application."""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vision_bench.errors import TransformationError
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.planning import HALF_CROPS
from vision_bench.tasks.transformations import (
    TRANSFORMATION_NAMES,
    TRANSFORMATIONS,
    Transformation,
    apply_sequence,
    apply_step,
    check_constraints,
    enclosed_holes,
    transform_objects,
)

SPEC_ORDER = [
    "translate_up", "translate_down", "translate_left", "translate_right", "rot90",
    "mirror_horizontal", "mirror_vertical", "crop_top_side", "crop_bottom_side", "crop_left_side",
    "crop_right_side", "crop_contours", "change_shape_color", "fill_holes_same_color",
    "fill_holes_different_color", "empty_inside_pixels", "extend_contours_same_color",
    "extend_contours_different_color", "pad_top", "pad_bottom", "pad_left", "pad_right", "pad_shape",
    "double_right", "double_left", "double_down", "double_up", "quadruple_shape",
]


def make(rows: list[list[int]], top: int = 0, left: int = 0) -> GridObject:
    return GridObject(np.array(rows, dtype=np.uint8), top, left)


def run(name: str, obj: GridObject) -> GridObject:
    return TRANSFORMATIONS[name].apply(obj)


# Multi-colored hand-made objects: asymmetric, croppable, small (for growth), with holes, solid.
ASYMMETRIC = [[1, 2, 0], [0, 3, 0], [0, 4, 4], [5, 0, 6]]
CROPPABLE = [[1, 1, 0, 0], [0, 2, 2, 0], [0, 0, 3, 0], [4, 0, 3, 3], [0, 5, 0, 3]]
SMALL = [[1, 2], [0, 2]]
RING = [[2, 2, 2, 2], [2, 0, 0, 2], [2, 2, 0, 2], [0, 2, 2, 2]]
DIAGONAL_RING = [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
TWO_COLOR_RING = [[9, 9, 9], [9, 0, 5], [9, 5, 5]]
NINE_RING = [[9, 9, 9], [9, 0, 9], [9, 9, 9]]
TIED = [[5, 8]]  # one cell of 5 and of 8: COGITAO's set order puts 8 first (see cells.set_order)
BLOCK = [[1, 1, 1, 1, 1], [1, 2, 2, 2, 1], [1, 2, 3, 2, 1], [1, 1, 1, 1, 1]]
ROUND = [[0, 4, 4, 0], [4, 4, 4, 4], [4, 4, 4, 4], [0, 4, 4, 0]]

HAND_CASES = [
    ("translate_up", ASYMMETRIC, (5, 7), ASYMMETRIC, (4, 7)),
    ("translate_down", ASYMMETRIC, (5, 7), ASYMMETRIC, (6, 7)),
    ("translate_left", ASYMMETRIC, (5, 7), ASYMMETRIC, (5, 6)),
    ("translate_right", ASYMMETRIC, (5, 7), ASYMMETRIC, (5, 8)),
    ("rot90", ASYMMETRIC, (5, 7), [[0, 0, 4, 6], [2, 3, 4, 0], [1, 0, 0, 5]], (5, 7)),
    ("mirror_horizontal", ASYMMETRIC, (5, 7), [[5, 0, 6], [0, 4, 4], [0, 3, 0], [1, 2, 0]], (5, 7)),
    ("mirror_vertical", ASYMMETRIC, (5, 7), [[0, 2, 1], [0, 3, 0], [4, 4, 0], [6, 0, 5]], (5, 7)),
    ("crop_top_side", CROPPABLE, (2, 3), [[0, 0, 3, 0], [4, 0, 3, 3], [0, 5, 0, 3]], (4, 3)),
    # COGITAO keeps the cropped window as the box, empty edge column or row included (later steps anchor on it)
    ("crop_bottom_side", CROPPABLE, (2, 3), [[1, 1, 0, 0], [0, 2, 2, 0], [0, 0, 3, 0]], (2, 3)),
    ("crop_left_side", CROPPABLE, (2, 3), [[0, 0], [2, 0], [3, 0], [3, 3], [0, 3]], (2, 5)),
    ("crop_right_side", CROPPABLE, (2, 3), [[1, 1], [0, 2], [0, 0], [4, 0], [0, 5]], (2, 3)),
    ("crop_contours", CROPPABLE, (2, 3), [[2, 2], [0, 3], [0, 3]], (3, 4)),
    ("change_shape_color", [[9, 1], [0, 4]], (1, 1), [[1, 2], [0, 5]], (1, 1)),
    ("fill_holes_same_color", RING, (0, 0), [[2, 2, 2, 2]] * 3 + [[0, 2, 2, 2]], (0, 0)),
    ("fill_holes_same_color", DIAGONAL_RING, (3, 3), [[0, 1, 0], [1, 1, 1], [0, 1, 0]], (3, 3)),
    ("fill_holes_different_color", DIAGONAL_RING, (3, 3), [[0, 1, 0], [1, 2, 1], [0, 1, 0]], (3, 3)),
    ("fill_holes_different_color", NINE_RING, (0, 0), [[9, 9, 9], [9, 1, 9], [9, 9, 9]], (0, 0)),
    ("empty_inside_pixels", BLOCK, (2, 2),
     [[1, 1, 1, 1, 1], [1, 0, 0, 0, 1], [1, 0, 0, 0, 1], [1, 1, 1, 1, 1]], (2, 2)),
    ("empty_inside_pixels", ROUND, (0, 0), [[0, 4, 4, 0], [4, 0, 0, 4], [4, 0, 0, 4], [0, 4, 4, 0]], (0, 0)),
    ("extend_contours_same_color", SMALL, (4, 4), [[0, 1, 2, 0], [1, 1, 2, 2], [0, 0, 2, 2], [0, 0, 2, 0]], (3, 3)),
    ("extend_contours_different_color", SMALL, (4, 4),
     [[0, 3, 3, 0], [3, 1, 2, 3], [0, 0, 2, 3], [0, 0, 3, 0]], (3, 3)),
    # a tie between 5 and 8: COGITAO's choice, 8, gives new cells color 9
    ("extend_contours_different_color", TIED, (4, 4), [[0, 9, 9, 0], [9, 5, 8, 9], [0, 9, 9, 0]], (3, 3)),
    ("pad_top", SMALL, (4, 4), [[8, 8], [1, 2], [0, 2]], (3, 4)),
    ("pad_bottom", SMALL, (4, 4), [[1, 2], [0, 2], [9, 9]], (4, 4)),
    ("pad_left", SMALL, (4, 4), [[7, 1, 2], [7, 0, 2]], (4, 3)),
    ("pad_right", SMALL, (4, 4), [[1, 2, 6], [0, 2, 6]], (4, 4)),
    ("pad_shape", SMALL, (4, 4), [[7, 8, 8, 6], [7, 1, 2, 6], [7, 0, 2, 6], [7, 9, 9, 6]], (3, 3)),
    ("double_right", SMALL, (4, 4), [[1, 2, 1, 2], [0, 2, 0, 2]], (4, 4)),
    ("double_left", SMALL, (4, 4), [[1, 2, 1, 2], [0, 2, 0, 2]], (4, 2)),
    ("double_down", SMALL, (4, 4), [[1, 2], [0, 2], [1, 2], [0, 2]], (4, 4)),
    ("double_up", SMALL, (4, 4), [[1, 2], [0, 2], [1, 2], [0, 2]], (2, 4)),
    ("quadruple_shape", SMALL, (4, 4), [[1, 2, 1, 2], [0, 2, 0, 2], [1, 2, 1, 2], [0, 2, 0, 2]], (2, 2)),
]


@pytest.mark.parametrize(("name", "rows", "anchor", "expected", "expected_anchor"), HAND_CASES)
def test_hand_computed_example(name, rows, anchor, expected, expected_anchor) -> None:
    obj = make(rows, *anchor)
    assert TRANSFORMATIONS[name].accepts(obj)
    result = run(name, obj)
    assert (result.top, result.left) == expected_anchor and result.pixels.tolist() == expected
    assert obj.pixels.tolist() == rows, "the input object must not be modified"


REJECTIONS = [
    ("crop_top_side", [[1, 1], [1, 0], [1, 1]], "it has 3 rows"),
    ("crop_bottom_side", [[1], [1], [1]], "it has 3 rows"),
    ("crop_left_side", [[1, 1, 1]], "it has 3 columns"),
    ("crop_right_side", [[1, 0, 1], [1, 1, 1]], "it has 3 columns"),
    ("crop_contours", [[1, 1, 1, 1]] * 3, "it has 3 rows"),
    ("fill_holes_same_color", [[1, 1, 1], [1, 0, 2], [1, 1, 1]], "it has 2 colors"),
    ("fill_holes_same_color", [[1, 0, 1], [1, 0, 1], [1, 1, 1]], "no enclosed hole"),
    # COGITAO's constraints table gives fill_holes_different_color the single-color constraint too
    ("fill_holes_different_color", TWO_COLOR_RING, "it has 2 colors"),
    ("fill_holes_different_color", [[3, 3], [3, 3]], "no enclosed hole"),
    ("empty_inside_pixels", RING, "already has an enclosed hole"),
    ("empty_inside_pixels", [[1, 1, 1, 1, 1]] * 2, "smaller than 3x3"),
    ("empty_inside_pixels", [[0, 1, 0], [1, 1, 1], [0, 1, 0]], "only 5 cells"),
    ("empty_inside_pixels", [[1, 1, 0, 0, 0], [1, 1, 0, 0, 1], [1, 1, 0, 1, 1]], "not one 8-connected piece"),
]


@pytest.mark.parametrize(("name", "rows", "reason"), REJECTIONS)
def test_constraints_reject_with_a_clear_message(name, rows, reason) -> None:
    obj = make(rows, 2, 3)
    transformation = TRANSFORMATIONS[name]
    assert not transformation.accepts(obj)
    with pytest.raises(TransformationError) as error:
        transformation.apply(obj)
    message = str(error.value)
    assert message.startswith(f"{name} cannot be applied to the ")
    assert reason in message and "row 2, column 3" in message
    assert transformation.constraints in message


def test_registry_holds_the_28_names_in_spec_order() -> None:
    assert list(TRANSFORMATIONS) == SPEC_ORDER == list(TRANSFORMATION_NAMES)
    assert {case[0] for case in HAND_CASES} == set(SPEC_ORDER), "every transformation has a hand example"
    for name, transformation in TRANSFORMATIONS.items():
        assert isinstance(transformation, Transformation) and transformation.name == name
        assert TRANSFORMATIONS.description(name) == transformation.description
        assert transformation.description and "\n" not in transformation.description
        assert transformation.constraints
    with pytest.raises(dataclasses.FrozenInstanceError):
        TRANSFORMATIONS["rot90"].name = "rot180"  # type: ignore[misc]


# ---------------------------------------------------------------- properties over random objects


@st.composite
def objects(draw, max_side: int = 6) -> GridObject:
    """A random tight object: every edge row and column of its bounding box holds a cell."""
    height, width = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    pixels = draw(arrays(np.uint8, (height, width), elements=st.sampled_from([0, 0, 0, 1, 2, 5, 9])))
    color = st.integers(1, 9)
    pixels[0, draw(st.integers(0, width - 1))] = draw(color)
    pixels[-1, draw(st.integers(0, width - 1))] = draw(color)
    pixels[draw(st.integers(0, height - 1)), 0] = draw(color)
    pixels[draw(st.integers(0, height - 1)), -1] = draw(color)
    return GridObject(pixels, draw(st.integers(-5, 30)), draw(st.integers(-5, 30)))


@st.composite
def holed_objects(draw) -> GridObject:
    """A random object inside a closed one-color frame, with at least one background cell inside."""
    height, width = draw(st.integers(3, 7)), draw(st.integers(3, 7))
    inside = draw(arrays(np.uint8, (height - 2, width - 2), elements=st.sampled_from([0, 0, 3, 4])))
    inside[draw(st.integers(0, height - 3)), draw(st.integers(0, width - 3))] = 0
    frame_color = draw(st.sampled_from([3, 9]))
    pixels = np.full((height, width), frame_color, dtype=np.uint8)
    pixels[1:-1, 1:-1] = inside
    return GridObject(pixels, draw(st.integers(0, 9)), draw(st.integers(0, 9)))


def cells(obj: GridObject) -> dict[tuple[int, int], int]:
    """Absolute (row, column) -> color of the object's cells."""
    return {(obj.top + r, obj.left + c): int(obj.pixels[r, c]) for r, c in zip(*np.nonzero(obj.pixels))}


def most_frequent(obj: GridObject) -> int:
    """COGITAO's expression, on this interpreter's own set."""
    colors = [int(v) for v in obj.pixels.ravel() if v]
    return max(set(colors), key=colors.count)


def holes_by_flood_fill(mask: np.ndarray) -> np.ndarray:
    """Background cells not reachable from outside the bounding box by edge-adjacent background steps."""
    height, width = mask.shape
    open_cells = {
        (r, c) for r in range(-1, height + 1) for c in range(-1, width + 1)
        if not (0 <= r < height and 0 <= c < width and mask[r, c])
    }
    reached, queue = {(-1, -1)}, deque([(-1, -1)])
    while queue:
        r, c = queue.popleft()
        for cell in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if cell in open_cells and cell not in reached:
                reached.add(cell)
                queue.append(cell)
    holes = np.zeros_like(mask)
    for cell in open_cells - reached:
        holes[cell] = True
    return holes


PROPERTY_SETTINGS = settings(max_examples=60, deadline=None)


@PROPERTY_SETTINGS
@given(objects())
def test_rot90_four_times_mirrors_twice_and_recoloring_nine_times_are_identity(obj: GridObject) -> None:
    turned = run("rot90", obj)
    assert np.array_equal(turned.pixels, np.rot90(obj.pixels)) and (turned.top, turned.left) == (obj.top, obj.left)
    for _ in range(3):
        turned = run("rot90", turned)
    assert turned == obj
    for name in ("mirror_horizontal", "mirror_vertical"):
        assert run(name, run(name, obj)) == obj
    recolored = obj
    for step in range(1, 10):
        recolored = run("change_shape_color", recolored)
        assert (recolored == obj) == (step == 9)


@PROPERTY_SETTINGS
@given(objects(), st.integers(1, 4), st.integers(1, 4))
def test_translate_up_then_down_is_identity_away_from_the_border(obj: GridObject, top: int, left: int) -> None:
    placed = obj.moved(top, left)
    shape = (top + obj.height + 1, left + obj.width + 1)
    up = apply_step([placed], "translate_up", shape)
    assert up[0].top == top - 1 and apply_step(up, "translate_down", shape) == [placed]
    assert apply_step(apply_step([placed], "translate_left", shape), "translate_right", shape) == [placed]


@PROPERTY_SETTINGS
@given(objects())
def test_doubling_and_quadrupling_copy_the_object(obj: GridObject) -> None:
    h, w, n = obj.height, obj.width, obj.n_cells
    for name, rows, cols in (
        ("double_right", 1, 2), ("double_left", 1, 2), ("double_down", 2, 1), ("double_up", 2, 1),
        ("quadruple_shape", 2, 2),
    ):
        result = run(name, obj)
        assert result.n_cells == n * rows * cols
        assert result.pixels.shape == (h * rows, w * cols)
        for r in range(rows):
            for c in range(cols):
                assert np.array_equal(result.pixels[r * h : (r + 1) * h, c * w : (c + 1) * w], obj.pixels)
        assert set(cells(obj).items()) <= set(cells(result).items()), "the original stays in place"


@PROPERTY_SETTINGS
@given(objects())
def test_extend_grows_the_box_by_two_and_keeps_corners_empty(obj: GridObject) -> None:
    new_color = most_frequent(obj) % 9 + 1
    for name in ("extend_contours_same_color", "extend_contours_different_color"):
        result = run(name, obj)
        assert (result.height, result.width) == (obj.height + 2, obj.width + 2)
        assert (result.top, result.left) == (obj.top - 1, obj.left - 1)
        p = result.pixels
        assert p[0, 0] == p[0, -1] == p[-1, 0] == p[-1, -1] == 0
        assert np.array_equal(p[1:-1, 1:-1], obj.pixels)
        for new, edge in ((p[0, 1:-1], obj.pixels[0]), (p[-1, 1:-1], obj.pixels[-1]),
                          (p[1:-1, 0], obj.pixels[:, 0]), (p[1:-1, -1], obj.pixels[:, -1])):
            expected = edge if name == "extend_contours_same_color" else np.where(edge != 0, new_color, 0)
            assert np.array_equal(new, expected)


@PROPERTY_SETTINGS
@given(objects())
def test_half_crops_keep_their_window_and_crop_contours_re_anchors_what_remains(obj: GridObject) -> None:
    """COGITAO's crops: a half crop's box is its window, empty edges included; crop_contours puts the box of
    the remaining cells at (top + 1, left + 1), which moves them when the inner window has empty edges."""
    h, w = obj.height, obj.width
    windows = {"crop_top_side": (slice(h // 2, h), slice(0, w)),
               "crop_bottom_side": (slice(0, (h + 1) // 2), slice(0, w)),
               "crop_left_side": (slice(0, h), slice(w // 2, w)),
               "crop_right_side": (slice(0, h), slice(0, (w + 1) // 2))}
    for name, (rows, cols) in windows.items():
        result = TRANSFORMATIONS[name].transform(obj)
        assert np.array_equal(result.pixels, obj.pixels[rows, cols])
        assert (result.top, result.left) == (obj.top + rows.start, obj.left + cols.start)
        assert result.n_cells and set(cells(result).items()) <= set(cells(obj).items())
    inner = obj.pixels[1:-1, 1:-1]
    result = TRANSFORMATIONS["crop_contours"].transform(obj)
    assert result.n_cells == np.count_nonzero(inner)
    if result.n_cells:
        p = result.pixels
        assert (result.top, result.left) == (obj.top + 1, obj.left + 1)
        assert p[0].any() and p[-1].any() and p[:, 0].any() and p[:, -1].any()
        assert sorted(p[p != 0].tolist()) == sorted(inner[inner != 0].tolist())


@PROPERTY_SETTINGS
@given(objects())
def test_only_half_crops_leave_a_box_with_empty_edges(obj: GridObject) -> None:
    """Planning relies on it (`planning._emptying_prefix`): a half crop of a tight box keeps a cell, every
    other transformation makes a tight box (crop_contours possibly an empty one)."""
    for name, transformation in TRANSFORMATIONS.items():
        result = transformation.transform(obj)
        if name in HALF_CROPS:
            assert result.n_cells
        elif result.n_cells or name != "crop_contours":
            p = result.pixels
            assert p[0].any() and p[-1].any() and p[:, 0].any() and p[:, -1].any()


@PROPERTY_SETTINGS
@given(st.one_of(objects(max_side=7), holed_objects()))
def test_holes_and_filling_match_a_flood_fill(obj: GridObject) -> None:
    holes = holes_by_flood_fill(obj.mask)
    assert np.array_equal(enclosed_holes(obj.mask), holes)
    fill = TRANSFORMATIONS["fill_holes_different_color"]
    assert fill.accepts(obj) == (bool(holes.any()) and len(obj.colors) == 1)
    result = fill.transform(obj)  # later in a sequence it meets multi-colored objects too
    if not holes.any():
        assert result is obj
        return
    assert (result.top, result.left) == (obj.top, obj.left)
    assert np.all(result.pixels[holes] == most_frequent(obj) % 9 + 1)
    assert np.array_equal(result.pixels[~holes], obj.pixels[~holes])
    assert not holes_by_flood_fill(result.mask).any()


@PROPERTY_SETTINGS
@given(holed_objects())
def test_fill_same_color_fills_single_colored_objects_solid(obj: GridObject) -> None:
    transformation = TRANSFORMATIONS["fill_holes_same_color"]
    single_colored = len(set(obj.pixels[obj.mask].tolist())) == 1
    assert transformation.accepts(obj) == single_colored
    if single_colored:
        color = int(obj.pixels[0, 0])
        expected = np.where(obj.mask | holes_by_flood_fill(obj.mask), color, 0)
        assert np.array_equal(transformation.apply(obj).pixels, expected)


@PROPERTY_SETTINGS
@given(objects(max_side=7))
def test_empty_inside_keeps_exactly_the_contour(obj: GridObject) -> None:
    transformation = TRANSFORMATIONS["empty_inside_pixels"]
    if not transformation.accepts(obj):
        return
    result = transformation.apply(obj)
    padded = np.pad(obj.mask, 1)
    for r, c in zip(*np.nonzero(obj.mask)):
        on_contour = not all(padded[r + 1 + dr, c + 1 + dc] for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)))
        assert result.pixels[r, c] == (obj.pixels[r, c] if on_contour else 0)
    assert not result.pixels[~obj.mask].any()


@PROPERTY_SETTINGS
@given(objects())
def test_accepts_agrees_with_apply_and_every_transform_is_total(obj: GridObject) -> None:
    for name, transformation in TRANSFORMATIONS.items():
        result = transformation.transform(obj)
        assert result.pixels.ndim == 2 and (result.n_cells > 0 or name == "crop_contours")
        assert result.pixels.size == 0 or result.pixels.max() <= 9
        if transformation.accepts(obj):
            assert transformation.apply(obj) == result
        else:
            with pytest.raises(TransformationError, match=name):
                transformation.apply(obj)


# ---------------------------------------------------------------- whole grids


def test_apply_step_rejects_leaving_the_grid() -> None:
    with pytest.raises(TransformationError, match="outside the 3x3 grid"):
        apply_step([make([[1]], 0, 1)], "translate_up", (3, 3))
    with pytest.raises(TransformationError, match="outside"):
        apply_step([make([[1, 1]], 1, 0)], "double_right", (3, 3))
    assert apply_step([make([[1]], 1, 1)], "double_right", (3, 3)) == [make([[1, 1]], 1, 1)]


def test_apply_step_rejects_overlap_but_allows_touching() -> None:
    grid = np.zeros((3, 7), dtype=np.uint8)
    grid[1, 1], grid[1, 3] = 1, 2
    doubled = apply_sequence(grid, ["double_right"])
    assert doubled[1].tolist() == [0, 1, 1, 2, 2, 0, 0] and not doubled[[0, 2]].any()
    with pytest.raises(TransformationError, match="objects 0 and 1 overlap at row 1, column 2"):
        apply_sequence(grid, ["extend_contours_same_color"])
    with pytest.raises(TransformationError, match="overlap"):
        apply_step([make([[1]], 0, 0), make([[2]], 0, 1)], "double_right", (1, 4))
    diagonal = np.zeros((5, 5), dtype=np.uint8)
    diagonal[1, 1], diagonal[3, 3] = 1, 2  # the grown boxes share an empty corner cell: no overlap
    expected = [[0, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 0, 2, 0], [0, 0, 2, 2, 2], [0, 0, 0, 2, 0]]
    assert apply_sequence(diagonal, ["extend_contours_same_color"]).tolist() == expected


def test_crop_then_rotate_anchors_on_the_kept_window() -> None:
    """COGITAO: crop_left_side keeps the window rows 1-3, columns 3-4 (only [3, 3] in its last row) as the
    box; rot90 turns the cells and puts their box at the window's corner, (1, 3)."""
    grid = np.zeros((6, 6), dtype=np.uint8)
    grid[1:3, 1] = 3
    grid[3, 1:5] = 3  # an L: rows 1-3, columns 1-4
    expected = np.zeros((6, 6), dtype=np.uint8)
    expected[1:3, 3] = 3
    assert np.array_equal(apply_sequence(grid, ["crop_left_side", "rot90"]), expected)


def place(rows: list[list[int]], shape: tuple[int, int], top: int, left: int) -> np.ndarray:
    grid = np.zeros(shape, dtype=np.uint8)
    pixels = np.array(rows, dtype=np.uint8)
    grid[top : top + pixels.shape[0], left : left + pixels.shape[1]] = pixels
    return grid


def test_cogitao_anchoring_after_crops() -> None:
    """The differential run's examples: COGITAO's outcome, cell for cell."""
    c_shape = [[3, 3, 3, 3], [3, 0, 0, 0], [3, 0, 0, 0], [3, 3, 3, 3]]
    # double_right, then crop_contours keeps [[3], [3]] of the inner window and moves it to (3, 3)
    assert apply_sequence(place(c_shape, (8, 12), 2, 2), ["double_right", "crop_contours"]).tolist() == \
        place([[3], [3]], (8, 12), 3, 3).tolist()
    # crop_bottom_side keeps [[0, 0, 3], [0, 0, 3]]; rot90 puts [[3, 3]] at the window's corner
    j_shape = [[0, 0, 3], [0, 0, 3], [3, 0, 3], [3, 3, 3]]
    assert apply_sequence(place(j_shape, (8, 12), 2, 2), ["crop_bottom_side", "rot90"]).tolist() == \
        place([[3, 3]], (8, 12), 2, 2).tolist()
    # a translation carries the kept window along; double_left then tiles the window, emptied column included
    assert apply_sequence(place(j_shape, (8, 12), 2, 5),
                          ["crop_bottom_side", "translate_down", "double_left"]).tolist() == \
        place([[3, 0, 0, 3], [3, 0, 0, 3]], (8, 12), 3, 2).tolist()


def test_constraints_are_checked_on_the_input_objects_only() -> None:
    """COGITAO's timing: fill_holes_same_color needs a hole in the input object, not after the first fill."""
    ring = make(RING, 1, 1)
    steps = transform_objects([ring], ["fill_holes_same_color", "fill_holes_same_color"], (6, 6))
    assert steps[2] == steps[1] == [make([[2, 2, 2, 2]] * 3 + [[0, 2, 2, 2]], 1, 1)]
    # pad_top makes the ring two-colored, yet the fill after it is fine: its input object has one color
    padded = transform_objects([ring], ["pad_top", "fill_holes_different_color"], (6, 6))[-1][0]
    assert padded.pixels[2:4, 1:3].tolist() == [[3, 3], [2, 3]]
    with pytest.raises(TransformationError, match="fill_holes_same_color cannot be applied .* it has no enclosed hole"):
        check_constraints([make(ROUND)], ["translate_up", "fill_holes_same_color"])


def test_a_step_that_leaves_no_cell_makes_the_sample_invalid() -> None:
    ring = [[1, 1, 1, 1], [1, 0, 0, 1], [1, 0, 0, 1], [1, 1, 1, 1]]
    assert TRANSFORMATIONS["crop_contours"].accepts(make(ring))
    with pytest.raises(TransformationError, match="crop_contours leaves object 0 with no cell"):
        apply_sequence(place(ring, (6, 6), 1, 1), ["crop_contours"])
    # crop_bottom_side keeps the window [[0, 0, 0, 3], [0, 0, 0, 3]]; crop_right_side keeps its empty left half
    j_shape = [[0, 0, 0, 3], [0, 0, 0, 3], [3, 0, 0, 3], [3, 3, 3, 3]]
    with pytest.raises(TransformationError, match="crop_right_side leaves object 0 with no cell"):
        apply_sequence(place(j_shape, (6, 6), 1, 1), ["crop_bottom_side", "crop_right_side"])


def test_emptied_cells_of_a_kept_window_never_paint_over_another_object() -> None:
    """A line inside an L's box: crop_left_side keeps windows that overlap, but only cells count (COGITAO
    pastes the L's emptied cells too and erases the line when it pastes the L last)."""
    grid = place([[4, 0, 0, 0, 0, 0]] * 5 + [[4] * 6], (7, 7), 0, 0)
    grid[1, 2:6] = 7
    expected = np.zeros((7, 7), dtype=np.uint8)
    expected[5, 3:6] = 4
    expected[1, 4:6] = 7
    assert apply_sequence(grid, ["crop_left_side"]).tolist() == expected.tolist()


def test_family_modules_register_every_transformation_under_its_own_name() -> None:
    from vision_bench.tasks.transformations.registry import MODULES

    assert MODULES == ("move", "rotate_mirror", "crop", "color", "fill", "contour", "pad", "tile")
    for name, transformation in TRANSFORMATIONS.items():
        assert transformation.name == name and TRANSFORMATIONS.description(name) == transformation.description
    crops = [name for name in TRANSFORMATIONS if name.startswith("crop_")]
    assert crops == SPEC_ORDER[7:12]  # the crop module registers its five in the table's order
