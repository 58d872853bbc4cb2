"""Every private fast path gives exactly what the plain reference it stands in for gives.

Here: the antialiased drawing in `render.raster`, which sums coverage counts instead of drawing the
supersampled canvas and averaging it (issue #15 removed the tricks that bought under 10% of a whole
command). SSIM's batched fast path and its textbook reference have their own parity tests in
`tests/test_ssim_reference.py`.
"""

from __future__ import annotations

import numpy as np
import pytest

from render import RenderSpec
from render.raster import _draw_antialiased_fast, _draw_reference, color_tables, placement

SPECS = {  # options, and whether cell edges fall inside output pixels (so that colors blend)
    "stretch": ({"size": (30, 44)}, True),
    "gridlines": ({"size": (64, 64), "gridlines": {"width": 1, "color": "#555555"}}, True),
    "cell layout with margins": (
        {"size": (40, 50), "layout": {"mode": "cell", "cell_size": 3, "anchor": "bottom-right"}}, False
    ),
    "fit, random background": ({"size": (48, 36), "layout": {"mode": "fit"}, "background": "random"}, False),
}


@pytest.mark.parametrize("factor", [2, 3, 5, 8])
@pytest.mark.parametrize("name", list(SPECS))
def test_antialiased_fast_path_matches_the_reference_bit_for_bit(name: str, factor: int) -> None:
    options, blends = SPECS[name]
    spec = RenderSpec(**options, antialias=factor)
    grids = np.random.default_rng(factor).integers(0, 10, (4, 9, 13), dtype=np.uint8)
    seeds = [3, 1, 4, 1]
    tables = color_tables(spec, seeds if spec.background == "random" else seeds[:1])
    place = placement(grids.shape[1:], spec)
    reference = _draw_reference(grids, place, tables)
    assert reference.shape == (4, *spec.size, 3) and reference.dtype == np.uint8
    colors = len(np.unique(reference.reshape(-1, 3), axis=0))
    assert colors > 11 if blends else colors <= 4 * 11  # blended edges, or only the tables' colors
    np.testing.assert_array_equal(_draw_antialiased_fast(grids, place, tables), reference)
