"""The project's connected-component labelling (OpenCV) and the cell helpers against scipy's, on random masks."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage

from vision_bench.metrics.objects import single_color_objects
from vision_bench.tasks.grid import count_components, ordered_labels
from vision_bench.tasks.transformations.cells import enclosed_holes, is_one_piece

masks = st.tuples(st.integers(1, 9), st.integers(1, 9)).flatmap(lambda shape: arrays(bool, shape))
grids = st.tuples(st.integers(1, 9), st.integers(1, 9)).flatmap(
    lambda shape: arrays(np.uint8, shape, elements=st.integers(0, 3)))
STRUCTURES = {4: ndimage.generate_binary_structure(2, 1), 8: ndimage.generate_binary_structure(2, 2)}


@given(mask=masks, connectivity=st.sampled_from([4, 8]))
def test_component_counts_match_scipy(mask: np.ndarray, connectivity: int) -> None:
    assert count_components(mask, connectivity) == ndimage.label(mask, structure=STRUCTURES[connectivity])[1]


@given(mask=masks)
def test_holes_are_the_background_regions_that_cannot_reach_the_border(mask: np.ndarray) -> None:
    padded = np.pad(~mask, 1, constant_values=True)
    labels, _ = ndimage.label(padded, structure=STRUCTURES[4])
    expected = (labels != labels[0, 0])[1:-1, 1:-1] & ~mask
    holes = enclosed_holes(mask)
    assert np.array_equal(holes, expected)
    assert not holes.flags.writeable
    assert is_one_piece(mask) == (ndimage.label(mask, structure=STRUCTURES[8])[1] == 1)


@given(mask=masks, connectivity=st.sampled_from([4, 8]))
def test_ordered_labels_are_scipys_labels(mask: np.ndarray, connectivity: int) -> None:
    """Same components, numbered in row-major order of their first cell, as `ndimage.label` numbers them (the
    order of a grid's objects)."""
    count, labels = ordered_labels(mask, connectivity)
    expected, found = ndimage.label(mask, structure=STRUCTURES[connectivity])
    assert count - 1 == found and np.array_equal(labels, expected)


@given(grid=grids)
def test_single_colour_objects_are_scipys_components_of_each_colour(grid: np.ndarray) -> None:
    expected = []
    for color in range(1, 10):
        labels, _ = ndimage.label(grid == color, structure=STRUCTURES[8])
        for index, box in enumerate(ndimage.find_objects(labels), start=1):
            expected.append((color, labels[box] == index))
    key = lambda objects: sorted((c, m.shape, m.tobytes()) for c, m in objects)  # noqa: E731
    assert key(single_color_objects(grid)) == key(expected)
