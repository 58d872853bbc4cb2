"""Rasterizing grids: golden pixels per layout, background and gridlines; Pillow parity; batches; filters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from render import GridError, RenderSpec, SpecError, placement, render, render_batch
from render.palettes import PALETTES, palette_array
from render.raster import cell_edges

WHITE, BLUE, RED, GREEN = (255, 255, 255), (0, 116, 217), (255, 65, 54), (46, 204, 64)
LINE = (0x55, 0x55, 0x55)


def painted(size: tuple[int, int], background: tuple, boxes: list[tuple[int, int, int, int, tuple]]) -> np.ndarray:
    """An expected image: `background`, then each (top, left, bottom, right, color) box painted in order."""
    image = np.empty((*size, 3), dtype=np.uint8)
    image[:] = background
    for top, left, bottom, right, color in boxes:
        image[top:bottom, left:right] = color
    return image


def test_stretch_golden_even_cells() -> None:
    image = render([[1, 2], [3, 0]], RenderSpec(size=(8, 8)))
    expected = painted((8, 8), WHITE, [(0, 0, 4, 4, BLUE), (0, 4, 4, 8, RED), (4, 0, 8, 4, GREEN)])
    assert np.array_equal(image, expected)


def test_stretch_uneven_cells_follow_pillow_nearest() -> None:
    image = render([[1, 2, 3]], RenderSpec(size=(8, 8)))
    expected = painted((8, 8), WHITE, [(0, 0, 8, 3, BLUE), (0, 3, 8, 5, RED), (0, 5, 8, 8, GREEN)])
    assert np.array_equal(image, expected)
    assert set(placement((15, 15), RenderSpec()).col_runs[1].tolist()) == {8, 9}  # COGITAO-RGB's uneven cells
    # 4 cells over 10 pixels: pixel 7 is an exact tie (7.5 * 0.4 = 3); Pillow's running sum puts it in cell 2
    assert cell_edges(4, 10).tolist() == [0, 2, 5, 8, 10]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 100), st.integers(1, 100), st.integers(8, 300), st.integers(8, 300), st.integers(0, 2**32))
def test_stretch_equals_pillow_nearest_resize(h: int, w: int, height: int, width: int, seed: int) -> None:
    if h > height or w > width:
        return
    grid = np.random.default_rng(seed).integers(0, 10, (h, w))
    palette = palette_array(PALETTES["cogitao-rgb"])
    expected = np.asarray(Image.fromarray(palette[grid]).resize((width, height), Image.NEAREST))
    assert np.array_equal(render(grid, RenderSpec(size=(height, width))), expected)


def test_fit_centers_square_cells_with_background_margin() -> None:
    image = render([[1, 2, 3], [0, 0, 1]], RenderSpec(size=(8, 8), layout="fit", background="black"))
    # cells of min(8 // 2, 8 // 3) = 2 pixels: the 4x6 box sits at top 2, left 1
    boxes = [(2, 1, 4, 3, BLUE), (2, 3, 4, 5, RED), (2, 5, 4, 7, GREEN), (4, 1, 6, 5, (0, 0, 0)), (4, 5, 6, 7, BLUE)]
    assert np.array_equal(image, painted((8, 8), (0, 0, 0), boxes))


@pytest.mark.parametrize(
    ("anchor", "top", "left"),
    [("top-left", 0, 0), ("center", 3, 3), ("bottom-right", 6, 6),
     ("top", 0, 3), ("right", 3, 6), ("bottom-left", 6, 0)],
)
def test_cell_layout_anchors(anchor: str, top: int, left: int) -> None:
    spec = RenderSpec(size=(10, 10), layout=f"cell:2:{anchor}", background="#102030")
    image = render([[1, 2], [3, 1]], spec)
    boxes = [
        (top, left, top + 2, left + 2, BLUE),
        (top, left + 2, top + 2, left + 4, RED),
        (top + 2, left, top + 4, left + 2, GREEN),
        (top + 2, left + 2, top + 4, left + 4, BLUE),
    ]
    assert np.array_equal(image, painted((10, 10), (16, 32, 48), boxes))


def test_gridlines_frame_every_cell() -> None:
    image = render([[1, 2], [3, 0]], RenderSpec(size=(10, 10), layout="fit", gridlines=True))
    boxes = [(0, 0, 5, 5, BLUE), (0, 5, 5, 10, RED), (5, 0, 10, 5, GREEN)]
    expected = painted((10, 10), WHITE, boxes)
    for line in (0, 5, 9):
        expected[line, :] = LINE
        expected[:, line] = LINE
    assert np.array_equal(image, expected)


def test_wide_gridlines_are_centered_on_inner_boundaries_and_stay_out_of_margins() -> None:
    magenta = (255, 0, 255)
    spec = RenderSpec(size=(12, 16), layout="cell:5", gridlines="#FF00FF:2", palette="arc")
    image = render([[1, 2]], spec)  # box 5x10 at top 3, left 3; boundaries at columns 3, 8, 13
    expected = painted((12, 16), (0, 0, 0), [(3, 3, 8, 8, BLUE), (3, 8, 8, 13, RED)])
    expected[3:5, 3:13] = expected[6:8, 3:13] = magenta
    expected[3:8, 3:5] = expected[3:8, 7:9] = expected[3:8, 11:13] = magenta
    assert np.array_equal(image, expected)
    assert (image[5, 5] == BLUE).all() and (image[5, 9] == RED).all()


def test_random_background_is_one_color_per_seed() -> None:
    spec = RenderSpec(size=(8, 8), background="random")
    first, again, other = render([[0, 1]], spec, seed=3), render([[0, 1]], spec, seed=3), render([[0, 1]], spec, seed=4)
    assert np.array_equal(first, again)
    assert tuple(first[0, 0]) == tuple(spec.colors(3)[0]) != tuple(other[0, 0])
    assert (first[:, 4:] == BLUE).all()


def test_jitter_is_seeded_bounded_and_keeps_the_drawing() -> None:
    spec = RenderSpec(size=(32, 32), layout="cell:4", jitter={"max_shift": 3, "scale": [1.0, 1.0]})
    grid = np.ones((2, 2), dtype=int)
    images = [render(grid, spec, seed=s) for s in range(12)]
    assert np.array_equal(images[5], render(grid, spec, seed=5))
    tops = {int(np.argwhere((im == BLUE).all(-1))[:, 0].min()) for im in images}
    assert tops <= set(range(12 - 3, 12 + 4)) and len(tops) > 1
    assert all(((im == BLUE).all(-1)).sum() == 64 for im in images)
    scaled = RenderSpec(size=(32, 32), layout="cell:4", jitter={"scale": [2.0, 2.0]})
    assert ((render(grid, scaled) == BLUE).all(-1)).sum() == 256


def test_render_batch_matches_render_for_mixed_sizes_and_seeds() -> None:
    rng = np.random.default_rng(0)
    grids = [rng.integers(0, 10, (rng.integers(1, 12), rng.integers(1, 12))) for _ in range(9)]
    specs = [
        RenderSpec(size=(40, 48), layout="fit", background="random", gridlines=True),
        RenderSpec(size=(40, 48), background="random", jitter={"max_shift": 2, "scale": [0.8, 1.2]}, antialias=2),
    ]
    for spec in specs:
        batch = render_batch(grids, spec, seeds=[10 + i for i in range(9)])
        assert batch.shape == (9, 40, 48, 3) and batch.dtype == np.uint8
        for i, grid in enumerate(grids):
            assert np.array_equal(batch[i], render(grid, spec, seed=10 + i))
        assert np.array_equal(render_batch(grids, spec)[4], render(grids[4], spec, seed=4))
    stacked = render_batch(np.stack([grids[0]] * 3), RenderSpec())
    assert np.array_equal(stacked[2], render(grids[0], RenderSpec()))
    assert render_batch([], RenderSpec()).shape == (0, 128, 128, 3)


def test_antialias_blends_edges_and_keeps_cell_interiors() -> None:
    spec = RenderSpec(size=(8, 8), antialias=4, palette="arc")
    image = render([[1, 2, 0]], spec)  # boundaries at 8/3 and 16/3 pixels
    assert (image[:, 0:2] == BLUE).all() and (image[:, 3] == RED).all() and (image[:, 6:] == 0).all()
    supersampled = np.array([BLUE] * 11 + [RED] * 10 + [(0, 0, 0)] * 11, dtype=np.uint16)  # 32 columns
    expected = (4 * supersampled.reshape(8, 4, 3).sum(axis=1) + 8) // 16
    assert np.array_equal(image[0], expected.astype(np.uint8))
    # 2x: 3 cells over 16 supersampled columns (5, 6, 5); output column 2 is half blue, half red,
    # and means ending in .5 round up: (0 + 255) / 2 -> 128, (116 + 65) / 2 -> 91, (217 + 54) / 2 -> 136
    halves = render([[1, 2, 3]], RenderSpec(size=(8, 8), antialias=2))
    assert tuple(halves[0, 2]) == (128, 91, 136) and tuple(halves[0, 1]) == BLUE


@pytest.mark.parametrize("blur", ["gaussian:1.5", "gaussian:3", "box:5"])
def test_blur_keeps_the_mean_color_and_spreads_edges(blur: str) -> None:
    grid = np.zeros((8, 8), dtype=int)
    grid[2:6, 2:6] = 2
    sharp = render(grid, RenderSpec(size=(64, 64)))
    soft = render(grid, RenderSpec(size=(64, 64), blur=blur))
    assert np.abs(soft.reshape(-1, 3).mean(0) - sharp.reshape(-1, 3).mean(0)).max() < 0.5
    row = 32
    changed = np.flatnonzero((soft[row] != sharp[row]).any(-1))
    assert changed.min() < 16 <= changed.max() and changed.min() >= 16 - 10
    assert np.array_equal(soft[32, 32], sharp[32, 32])
    assert (soft[row, 15] != sharp[row, 15]).any() and (soft[row, 16] != sharp[row, 16]).any()


def test_bigger_sigma_spreads_further() -> None:
    grid = [[0, 2]]
    widths = []
    for sigma in (0.5, 1.0, 2.0):
        row = render(grid, RenderSpec(size=(8, 64), blur=f"gaussian:{sigma}"))[4, :, 1].astype(int)
        widths.append(int(((row > 65) & (row < 255)).sum()))
    assert widths[0] < widths[1] < widths[2]


@pytest.mark.parametrize(
    ("grid", "spec", "message"),
    [
        (np.zeros((100, 100), int), RenderSpec(size=(8, 8), layout="fit"),
         "a 100x100 grid does not fit 8x8 pixels with layout 'fit'"),
        (np.zeros((20, 5), int), RenderSpec(size=(16, 16)),
         "a 20x5 grid does not fit 16x16 pixels with layout 'stretch'"),
        (np.zeros((3, 3), int), RenderSpec(size=(8, 8), layout="cell:3"),
         "a 3x3 grid does not fit 8x8 pixels with layout 'cell' and 3-pixel cells"),
        (np.zeros((4, 4), int), RenderSpec(size=(8, 8), gridlines=True), "gridlines leave no room"),
    ],
)
def test_impossible_sizes(grid: np.ndarray, spec: RenderSpec, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        render(grid, spec)


def test_invalid_grids_and_seeds() -> None:
    with pytest.raises(GridError, match="grid: cell \\(0, 1\\) is 10"):
        render([[1, 10]], RenderSpec())
    with pytest.raises(GridError, match="grids\\[1\\]: not rectangular"):
        render_batch([[[1]], [[1, 2], [3]]], RenderSpec())
    with pytest.raises(GridError, match="grids\\[1\\]: cell \\(0, 0\\) is -1"):
        render_batch(np.array([[[1]], [[-1]]]), RenderSpec())
    with pytest.raises(SpecError, match="2 grids but 1 seeds"):
        render_batch([[[1]], [[2]]], RenderSpec(), seeds=[0])
    with pytest.raises(SpecError, match="seed must be"):
        render([[1]], RenderSpec(), seed=-5)


@pytest.mark.parametrize("gridlines", [None, {"width": 1, "color": "#555555"}])
@pytest.mark.parametrize("factor", [2, 3])
def test_antialiasing_is_the_rounded_block_mean_of_the_supersampled_drawing(factor: int,
                                                                            gridlines: dict | None) -> None:
    """With `antialias: f`, each pixel is the mean of its f x f pixels in the drawing f times as large
    (the stretch layout scales exactly), rounded half up."""
    grids = np.random.default_rng(factor).integers(0, 10, (3, 7, 9))
    spec = RenderSpec(size=(30, 40), antialias=factor, gridlines=gridlines)
    large = render_batch(grids, RenderSpec(size=(30 * factor, 40 * factor), gridlines=
                                           None if gridlines is None else {**gridlines, "width": factor}))
    sums = large.reshape(3, 30, factor, 40, factor, 3).sum(axis=(2, 4))
    expected = (sums + factor * factor // 2) // (factor * factor)
    np.testing.assert_array_equal(render_batch(grids, spec), expected)
