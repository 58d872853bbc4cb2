"""The object library: hand-computed properties, filters (hypothesis), determinism, recoloring."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.errors import ConfigError, GridError, InfeasibleConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.objects import (
    COLOR_PATTERNS,
    FOOTPRINTS,
    SYMMETRIES,
    ObjectFilter,
    ObjectLibrary,
    ObjectProperties,
    footprint_mask,
    object_properties,
)

ALL_SYMMETRIES = ("horizontal", "vertical", "diagonal", "anti_diagonal", "point")


@pytest.fixture(scope="module")
def library() -> ObjectLibrary:
    return ObjectLibrary(seed=3, size=700)


def props(rows: list[list[int]]) -> ObjectProperties:
    return object_properties(np.array(rows, dtype=np.uint8))


def test_plus_is_a_symmetric_uniform_diamond() -> None:
    p = props([[0, 4, 0], [4, 4, 4], [0, 4, 0]])
    assert (p.height, p.width, p.n_cells, p.n_colors) == (3, 3, 5, 1)
    assert p.symmetries == ALL_SYMMETRIES and p.symmetric
    assert (p.connectivity, p.color_pattern, p.footprint, p.outline, p.hollow) == (
        4, "uniform", "diamond", False, False
    )


def test_ring_is_a_hollow_square_outline() -> None:
    p = props([[2, 2, 2], [2, 0, 2], [2, 2, 2]])
    assert (p.footprint, p.outline, p.hollow, p.n_cells) == ("square", True, True, 8)


def test_l_shape_has_no_symmetry_and_is_irregular() -> None:
    p = props([[1, 0, 0], [1, 1, 1]])
    assert p.symmetries == () and not p.symmetric
    assert (p.footprint, p.connectivity, p.hollow) == ("irregular", 4, False)


def test_diagonal_pair_is_8_connected_with_diagonal_symmetries() -> None:
    p = props([[5, 0], [0, 5]])
    assert p.connectivity == 8
    assert p.symmetries == ("diagonal", "anti_diagonal", "point")


def test_separate_blocks_are_distance_objects_and_padding_is_trimmed() -> None:
    p = props([[0, 0, 0, 0], [0, 3, 0, 3], [0, 0, 0, 0]])
    assert (p.height, p.width, p.connectivity, p.symmetries) == (1, 3, "distance", ("horizontal", "vertical", "point"))


@pytest.mark.parametrize(
    ("rows", "pattern"),
    [
        ([[1, 1], [2, 2], [1, 1]], "row_stripes"),
        ([[1, 1], [1, 1], [2, 2]], "top_bottom"),
        ([[1, 2, 1], [1, 2, 1]], "column_stripes"),
        ([[3, 3, 4], [3, 3, 4]], "left_right"),
        ([[1, 2, 3], [2, 3, 1]], "diagonal_stripes"),
        ([[1, 2, 1], [1, 1, 1], [2, 1, 1]], "random"),
        ([[7, 7], [7, 0]], "uniform"),
    ],
)
def test_color_patterns(rows: list[list[int]], pattern: str) -> None:
    assert props(rows).color_pattern == pattern


def test_footprint_masks_are_hand_computed() -> None:
    assert footprint_mask("ellipse", 3, 5).astype(int).tolist() == [[0, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 0]]
    assert footprint_mask("diamond", 3, 5).astype(int).tolist() == [[0, 0, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 1, 0, 0]]
    disk = footprint_mask("ellipse", 5, 5).astype(np.uint8)
    assert disk.sum() == 21 and props(disk.tolist()).footprint == "disk"
    assert props(footprint_mask("ellipse", 3, 5).astype(np.uint8).tolist()).footprint == "ellipse"
    frame = footprint_mask("diamond", 5, 5, outline=True).astype(np.uint8)
    assert frame.sum() == 8 and (props(frame.tolist()).footprint, props(frame.tolist()).outline) == ("diamond", True)


def test_symmetry_depends_on_colors() -> None:
    assert props([[1, 1], [2, 2]]).symmetries == ("vertical",)


def test_bad_objects_raise_grid_errors() -> None:
    with pytest.raises(GridError, match="no cell"):
        object_properties(np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(GridError, match="cell \\(0, 1\\)"):
        object_properties([[1, 12]])


def test_library_is_deterministic_and_seeded() -> None:
    first, second, other = (ObjectLibrary(seed=seed, size=450) for seed in (5, 5, 6))
    assert len(first) == 450
    assert all(np.array_equal(a, b) for a, b in zip(first.labels, second.labels))
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(first.labels, other.labels))


def test_library_covers_the_vocabulary(library: ObjectLibrary) -> None:
    seen = library.properties
    assert {p.color_pattern for p in seen} == set(COLOR_PATTERNS)
    assert {p.footprint for p in seen} == set(FOOTPRINTS)
    assert {p.connectivity for p in seen} == {4, 8, "distance"}
    assert {s for p in seen for s in p.symmetries} == set(SYMMETRIES)
    assert {min(p.n_colors, 4) for p in seen} == {1, 2, 3, 4}
    assert any(p.hollow for p in seen) and any(p.outline for p in seen)


def test_recolored_samples_keep_the_template_properties(library: ObjectLibrary) -> None:
    rng = random.Random(0)
    for index in range(0, len(library), 7):
        pixels, colors = library.paint(index, rng)
        assert len(set(colors)) == len(colors) == library.properties[index].n_colors
        assert object_properties(pixels) == library.properties[index]


def satisfies(p: ObjectProperties, f: ObjectFilter) -> bool:
    """The filter's documented meaning, written out field by field."""
    checks = [
        f.min_height <= p.height <= f.max_height,
        f.min_width <= p.width <= f.max_width,
        p.n_cells >= f.min_cells and (f.max_cells is None or p.n_cells <= f.max_cells),
        f.min_colors <= p.n_colors <= f.max_colors and (f.n_colors is None or p.n_colors == f.n_colors),
        f.colors is None or p.n_colors <= len(f.colors),
        all(s in p.symmetries for s in f.symmetries),
        f.symmetric is None or p.symmetric == f.symmetric,
        f.connectivity is None or p.connectivity == f.connectivity or (f.connectivity == 8 and p.connectivity == 4),
        f.color_pattern is None or p.color_pattern in f.color_pattern,
        f.footprint is None or p.footprint in f.footprint,
        f.outline is None or p.outline == f.outline,
        f.hollow is None or p.hollow == f.hollow,
    ]
    return all(checks)


filters = st.fixed_dictionaries({
    "max_height": st.integers(1, 15),
    "max_width": st.integers(1, 15),
    "min_cells": st.integers(1, 8),
    "n_colors": st.none() | st.integers(1, 3),
    "colors": st.none() | st.lists(st.integers(1, 9), min_size=1, max_size=4, unique=True).map(tuple),
    "symmetric": st.none() | st.booleans(),
    "symmetries": st.lists(st.sampled_from(SYMMETRIES), max_size=2, unique=True).map(tuple),
    "connectivity": st.none() | st.sampled_from([4, 8, "distance"]),
    "color_pattern": (
        st.none() | st.lists(st.sampled_from(COLOR_PATTERNS), min_size=1, max_size=3, unique=True).map(tuple)
    ),
    "footprint": st.none() | st.lists(st.sampled_from(FOOTPRINTS), min_size=1, max_size=3, unique=True).map(tuple),
    "hollow": st.none() | st.booleans(),
}).filter(lambda d: not (d["symmetric"] is False and d["symmetries"])).map(lambda d: ObjectFilter(**d))


@settings(max_examples=60, deadline=None)
@given(object_filter=filters, seed=st.integers(0, 1000))
def test_filters_select_exactly_the_objects_satisfying_them(library: ObjectLibrary, object_filter: ObjectFilter,
                                                            seed: int) -> None:
    selected = set(library.select(object_filter).tolist())
    assert selected == {i for i, p in enumerate(library.properties) if satisfies(p, object_filter)}
    if selected:
        obj = library.sample(random.Random(seed), object_filter)
        assert satisfies(object_properties(obj.pixels), object_filter)
        assert object_filter.colors is None or set(obj.colors) <= set(object_filter.colors)
    else:
        with pytest.raises(InfeasibleConfigError, match="relax the filter"):
            library.sample(random.Random(seed), object_filter)


def test_user_phrasings_select_what_they_say(library: ObjectLibrary) -> None:
    small_plain = ObjectFilter(max_height=6, max_width=6, n_colors=1, symmetric=True)
    for index in library.select(small_plain):
        p = library.properties[index]
        assert p.height <= 6 and p.width <= 6 and p.n_colors == 1 and p.symmetries
    rich = ObjectFilter(symmetric=False, min_colors=2)
    assert len(library.select(rich)) > 0
    assert all(not library.properties[i].symmetries and library.properties[i].n_colors >= 2
               for i in library.select(rich))


def test_same_seed_same_samples(library: ObjectLibrary) -> None:
    one = [library.sample(random.Random(9)).pixels for _ in range(3)]
    two = [library.sample(random.Random(9)).pixels for _ in range(3)]
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


@pytest.mark.parametrize(
    ("object_filter", "message"),
    [
        ({"max_heigth": 3}, "object_filter.max_heigth: unknown key; did you mean 'max_height'"),
        ({"min_height": 5, "max_height": 2}, "min_height \\(5\\) is larger than max_height \\(2\\)"),
        ({"colors": [0, 3]}, "colors must be distinct object colors 1-9"),
        ({"footprint": "blob"}, "object_filter.footprint"),
        ({"symmetric": False, "symmetries": ["point"]}, "drop one of them"),
    ],
)
def test_bad_filters_are_config_errors_naming_the_key(object_filter: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TaskConfig.from_dict({"transformations": ["rot90"], "object_filter": object_filter})


def test_single_values_are_accepted_for_list_fields() -> None:
    f = ObjectFilter.model_validate({"footprint": "disk", "color_pattern": "uniform", "colors": 3})
    assert (f.footprint, f.color_pattern, f.colors) == (("disk",), ("uniform",), (3,))
