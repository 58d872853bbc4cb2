"""Cell helpers against scipy's connected-component labelling, on random masks."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage

from vision_bench.tasks.transformations.cells import count_components, enclosed_holes, is_one_piece

masks = st.tuples(st.integers(1, 9), st.integers(1, 9)).flatmap(lambda shape: arrays(bool, shape))
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
