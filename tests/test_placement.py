"""Object placement: the bit-set occupancy agrees with a plain boolean grid."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vision_bench.tasks.placement import PlacementShape, bits_mask, mask_bits

masks = st.tuples(st.integers(1, 6), st.integers(1, 6)).flatmap(lambda shape: arrays(bool, shape))


@given(mask=masks, extra=st.integers(0, 5))
def test_mask_bits_round_trip(mask: np.ndarray, extra: int) -> None:
    stride = mask.shape[1] + extra
    grid = bits_mask(mask_bits(mask, stride), mask.shape[0], stride)
    assert np.array_equal(grid[:, : mask.shape[1]], mask)
    assert not grid[:, mask.shape[1]:].any()


@settings(max_examples=50)
@given(mask=masks.filter(lambda m: m.any()), data=st.data())
def test_shifted_bits_collide_exactly_when_the_masks_overlap(mask: np.ndarray, data: st.DataObject) -> None:
    """Placing a shape at (top, left) is a left shift by top * stride + left; an AND finds shared cells."""
    height, width = 9, 10
    stride = width
    occupied = data.draw(arrays(bool, (height, width)))
    top = data.draw(st.integers(0, height - mask.shape[0]))
    left = data.draw(st.integers(0, width - mask.shape[1]))
    collides = bool(mask_bits(occupied, stride) & (mask_bits(mask, stride) << (top * stride + left)))
    window = occupied[top : top + mask.shape[0], left : left + mask.shape[1]]
    assert collides == bool((window & mask).any())


def test_placement_shape_fills_holes_and_grows_a_one_cell_halo() -> None:
    ring = np.ones((3, 3), dtype=bool)
    ring[1, 1] = False
    shape = PlacementShape.of(ring)
    assert shape.filled.all() and shape.halo.shape == (5, 5) and shape.halo.all()
    assert shape.packing_area == 16 and shape.first_column == 0
    filled_bits, halo_bits = shape.bits(7)
    assert np.array_equal(bits_mask(filled_bits, 3, 7)[:, :3], shape.filled)
    assert np.array_equal(bits_mask(halo_bits, 5, 7)[:, :5], shape.halo)
