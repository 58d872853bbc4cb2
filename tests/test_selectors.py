"""Selectors pick exactly the documented objects, and their combinations obey the boolean laws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.errors import ConfigError
from vision_bench.tasks.grid import GridObject, extract_objects
from vision_bench.tasks.selectors import (
    ALL_OBJECTS,
    SHAPES,
    AllOf,
    AnyOf,
    ColorSelector,
    NearSelector,
    Not,
    ShapeSelector,
    footprint,
    judge_alone,
    parse_selector,
    select,
    selector_name,
)


@st.composite
def grid_objects(draw: st.DrawFn) -> GridObject:
    """A small object: 1-3 x 1-3 box, at least one cell, one or two colours, anywhere on a 12x12 area."""
    height, width = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    cells = draw(st.lists(st.booleans(), min_size=height * width, max_size=height * width))
    mask = np.array(cells, dtype=bool).reshape(height, width)
    mask[draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))] = True
    colors = draw(st.lists(st.integers(1, 4), min_size=height * width, max_size=height * width))
    pixels = np.where(mask, np.array(colors).reshape(height, width), 0).astype(np.uint8)
    if draw(st.booleans()):  # most objects single-coloured, as the generator's presets draw them
        pixels = np.where(mask, colors[0], 0).astype(np.uint8)
    return GridObject(pixels, draw(st.integers(0, 9)), draw(st.integers(0, 9)))


object_lists = st.lists(grid_objects(), min_size=0, max_size=6)
leaves = st.one_of(
    st.just(ALL_OBJECTS),
    st.builds(ColorSelector, color=st.integers(1, 4)),
    st.builds(ShapeSelector, shape=st.sampled_from(["dot", "domino_h", "domino_v", "square2", "corner_l"])),
)
selectors = st.recursive(leaves, lambda inner: st.one_of(
    st.builds(NearSelector, indicator=inner, distance=st.integers(1, 3)),
    st.builds(AllOf, selectors=st.lists(inner, min_size=1, max_size=3).map(tuple)),
    st.builds(AnyOf, selectors=st.lists(inner, min_size=1, max_size=3).map(tuple)),
    st.builds(Not, selector=inner),
), max_leaves=5)


def cells_of(obj: GridObject) -> list[tuple[int, int]]:
    return [(obj.top + r, obj.left + c) for r in range(obj.height) for c in range(obj.width) if obj.pixels[r, c]]


# ----------------------------------------------------------------------------- each kind, by brute force


@settings(max_examples=60, deadline=None)
@given(object_lists, st.integers(1, 4))
def test_color_picks_the_objects_whose_every_cell_has_that_colour(objects: list[GridObject], color: int) -> None:
    expected = tuple(all(obj.pixels[r - obj.top, c - obj.left] == color for r, c in cells_of(obj)) for obj in objects)
    assert select(ColorSelector(color=color), objects) == expected


@settings(max_examples=60, deadline=None)
@given(object_lists, st.sampled_from(sorted(SHAPES)))
def test_shape_picks_the_objects_with_exactly_that_footprint(objects: list[GridObject], name: str) -> None:
    def normalised(obj: GridObject) -> set[tuple[int, int]]:
        cells = cells_of(obj)
        top, left = min(r for r, _ in cells), min(c for _, c in cells)
        return {(r - top, c - left) for r, c in cells}

    wanted = {(r, c) for r, row in enumerate(SHAPES[name]) for c, cell in enumerate(row) if cell == "#"}
    assert select(ShapeSelector(shape=name), objects) == tuple(normalised(obj) == wanted for obj in objects)


@settings(max_examples=60, deadline=None)
@given(object_lists, st.integers(1, 4), st.integers(1, 3))
def test_near_picks_objects_within_the_distance_of_another_indicator(objects: list[GridObject], color: int,
                                                                      distance: int) -> None:
    indicator = ColorSelector(color=color)
    is_indicator = select(indicator, objects)
    expected = tuple(
        any(j != k and is_indicator[j] and min(max(abs(a - c), abs(b - d)) for a, b in cells_of(obj)
                                                for c, d in cells_of(other)) <= distance
            for j, other in enumerate(objects))
        for k, obj in enumerate(objects))
    assert select(NearSelector(indicator=indicator, distance=distance), objects) == expected


def test_hand_made_grid() -> None:
    grid = np.zeros((8, 8), dtype=np.uint8)
    grid[0, 0] = 5                      # a grey dot: the indicator
    grid[0, 2:4] = 2                    # a red domino two cells away (Chebyshev 2)
    grid[5:7, 5:7] = 2                  # a red square far away
    grid[3, 0] = 2                      # a red dot three rows down (Chebyshev 3)
    objects = extract_objects(grid)     # reading order: grey dot, red domino, red dot, red square
    assert [footprint(obj) for obj in objects] == [("#",), ("##",), ("#",), ("##", "##")]
    near_grey = NearSelector(indicator=ColorSelector(color=5), distance=2)
    assert select(near_grey, objects) == (False, True, False, False)
    assert select(near_grey.model_copy(update={"distance": 3}), objects) == (False, True, True, False)
    assert select(NearSelector(indicator=ColorSelector(color=5)), objects) == (False,) * 4  # adjacency: none
    assert select(AllOf(selectors=(ColorSelector(color=2), ShapeSelector(shape="dot"))), objects) == (
        False, False, True, False)
    assert select(ShapeSelector(shape=["##", "##"]), objects) == (False, False, False, True)
    assert select(ALL_OBJECTS, objects) == (True,) * 4
    assert select(ALL_OBJECTS, []) == ()


# ----------------------------------------------------------------------------- boolean laws


@settings(max_examples=60, deadline=None)
@given(object_lists, selectors, selectors)
def test_combinations_obey_the_boolean_laws(objects: list[GridObject], a: object, b: object) -> None:
    sa, sb = select(a, objects), select(b, objects)
    assert select(Not(selector=Not(selector=a)), objects) == sa
    assert select(AllOf(selectors=(a, b)), objects) == tuple(x and y for x, y in zip(sa, sb))
    assert select(AnyOf(selectors=(a, b)), objects) == tuple(x or y for x, y in zip(sa, sb))
    assert select(AllOf(selectors=(a, b)), objects) == select(AllOf(selectors=(b, a)), objects)
    assert select(Not(selector=AllOf(selectors=(a, b))), objects) == select(
        AnyOf(selectors=(Not(selector=a), Not(selector=b))), objects)
    assert select(AnyOf(selectors=(a, Not(selector=a))), objects) == (True,) * len(objects)
    assert select(AllOf(selectors=(a, Not(selector=a))), objects) == (False,) * len(objects)
    assert select(AllOf(selectors=(a,)), objects) == sa == select(AnyOf(selectors=(a,)), objects)


@settings(max_examples=60, deadline=None)
@given(object_lists, selectors)
def test_a_verdict_alone_holds_among_any_other_objects(objects: list[GridObject], selector: object) -> None:
    flags = select(selector, objects)
    for obj, flag in zip(objects, flags):
        verdict = judge_alone(selector, obj)
        assert verdict is None or verdict == flag


@settings(max_examples=40, deadline=None)
@given(selectors)
def test_the_yaml_form_round_trips(selector: object) -> None:
    data = selector.model_dump(mode="json")  # type: ignore[attr-defined]
    assert parse_selector(data) == selector
    assert selector_name(parse_selector(data)) == selector_name(selector)


# ----------------------------------------------------------------------------- config form


def test_yaml_forms_and_names() -> None:
    assert parse_selector("all") == ALL_OBJECTS
    rule = parse_selector({"kind": "all_of", "selectors": [
        {"kind": "color", "color": 2}, {"kind": "not", "selector": {"kind": "shape", "shape": "plus3"}},
        {"kind": "near", "indicator": {"kind": "shape", "shape": ["#.", "##"]}, "distance": 2}]})
    assert selector_name(rule) == "all_of(color=2, not(shape=plus3), near<=2(shape=corner_l))"
    assert selector_name(ShapeSelector(shape=["#.#", "###"])) == "shape=#.#/###"


@pytest.mark.parametrize(("data", "message"), [
    ({"kind": "colour", "color": 2}, "does not match any of the expected tags"),
    ({"kind": "color", "color": 10}, "color"),
    ({"kind": "shape", "shape": "blob"}, "unknown shape 'blob'"),
    ({"kind": "shape", "shape": ["#.", "###"]}, "equally long rows"),
    ({"kind": "shape", "shape": [".#", ".#"]}, "cropped"),
    ({"kind": "near", "indicator": "all", "distance": 9}, "distance"),
    ({"kind": "all_of", "selectors": []}, "selectors"),
])
def test_bad_selectors_raise_one_line_config_errors(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        parse_selector(data)
    assert "\n" not in str(error.value)


@settings(max_examples=60, deadline=None)
@given(object_lists, selectors)
def test_a_task_code_gives_back_a_selector_that_picks_the_same_objects(objects: list[GridObject],
                                                                        selector: object) -> None:
    from vision_bench.tasks.task_code import decode_selector, selector_tokens

    assert select(decode_selector(selector_tokens(selector)), objects) == select(selector, objects)
