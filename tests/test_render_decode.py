"""Decoding images back to grids: exact on clean renders, robust to mild blur and JPEG, all of ARC."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from render import GridError, ImageError, RenderSpec, SpecError, decode, encode, load, placement, render, render_batch
from render.decode import decode_batch


def arc_grids(arc_dir: Path) -> list[np.ndarray]:
    """Every input and output grid of every train and test pair of the ARC training tasks."""
    grids = []
    for path in sorted(arc_dir.glob("*.json")):
        task = json.loads(path.read_text())
        for pair in task["train"] + task["test"]:
            grids += [np.array(pair["input"]), np.array(pair["output"])]
    return grids


@pytest.mark.slow  # all 400 ARC tasks, PNG and JPEG
@pytest.mark.parametrize("layout", ["stretch", "fit"])
def test_every_arc_grid_survives_png_and_jpeg_95(arc_dir: Path, layout: str) -> None:
    grids = arc_grids(arc_dir)
    assert len(grids) > 3000
    spec = RenderSpec(layout=layout)
    failures = {"png": 0, "jpeg": 0}
    for start in range(0, len(grids), 512):
        chunk = grids[start : start + 512]
        shapes = [grid.shape for grid in chunk]
        images = render_batch(chunk, spec)
        for name, options in (("png", {"compression": 1}), ("jpeg", {"quality": 95})):
            loaded = np.stack([load(encode(image, name, **options)) for image in images])
            decoded = decode_batch(loaded, spec, shapes, seeds=[0] * len(chunk))
            failures[name] += sum(not np.array_equal(d, g) for d, g in zip(decoded, chunk))
    assert failures == {"png": 0, "jpeg": 0}


@st.composite
def clean_cases(draw: st.DrawFn) -> tuple[np.ndarray, RenderSpec, int]:
    h, w = draw(st.integers(1, 30)), draw(st.integers(1, 30))
    grid = np.random.default_rng(draw(st.integers(0, 2**32))).integers(0, 10, (h, w))
    fields = {
        "size": (draw(st.integers(8, 160)), draw(st.integers(8, 160))),
        "palette": draw(st.sampled_from(["cogitao-rgb", "arc", "c-arc"])),
        "background": draw(st.sampled_from(["palette", "random", "#203040"])),
        "layout": draw(st.sampled_from(["stretch", "fit", "cell:2", "cell:3:top-right"])),
        "gridlines": draw(st.sampled_from([None, None, True])),
        "antialias": draw(st.sampled_from([1, 1, 2, 3])),
        "jitter": draw(st.sampled_from([None, {"max_shift": 4, "scale": [0.9, 1.2]}])),
    }
    return grid, RenderSpec(**fields), draw(st.integers(0, 10**6))


def rendered_with_cells_of(grid: np.ndarray, spec: RenderSpec, seed: int, pixels: int) -> tuple[np.ndarray, np.ndarray]:
    """The render of `grid` and its visible cells; hypothesis skips the case unless some cell is visible and
    every visible cell spans at least `pixels` output pixels each way (or the spec cannot draw the grid)."""
    try:
        image = render(grid, spec, seed=seed)
    except SpecError:
        assume(False)
    place = placement(grid.shape, spec, seed)
    runs = [np.bincount(labels[labels < n], minlength=n)
            for labels, n in ((place.rows, grid.shape[0]), (place.cols, grid.shape[1]))]
    visible = (runs[0] > 0)[:, None] & (runs[1] > 0)[None, :]
    assume(visible.any() and min(r[r > 0].min() for r in runs) >= pixels * spec.antialias)
    return image, visible


@settings(max_examples=150, deadline=None)
@given(clean_cases())
def test_decode_is_exact_on_clean_renders_with_cells_of_two_pixels(case: tuple[np.ndarray, RenderSpec, int]) -> None:
    grid, spec, seed = case
    image, visible = rendered_with_cells_of(grid, spec, seed, 2)
    decoded = decode(image, spec, grid.shape, seed=seed)
    assert np.array_equal(decoded[visible], grid[visible])
    assert (decoded[~visible] == 0).all()


@pytest.mark.parametrize(("blur", "side"), [("gaussian:1", 30), ("gaussian:3", 30), ("gaussian:6", 12), ("box:5", 30)])
def test_decode_undoes_blur(blur: str, side: int) -> None:
    rng = np.random.default_rng(1)
    grids = rng.integers(0, 10, (20, side, side))
    spec = RenderSpec(blur=blur)
    for decoded, grid in zip(decode_batch(render_batch(grids, spec), spec, [(side, side)] * 20), grids):
        assert np.array_equal(decoded, grid)


@st.composite
def blurred_cases(draw: st.DrawFn) -> tuple[np.ndarray, RenderSpec, int]:
    h, w = draw(st.integers(1, 16)), draw(st.integers(1, 16))
    grid = np.random.default_rng(draw(st.integers(0, 2**32))).integers(0, 10, (h, w))
    fields = {
        "size": (draw(st.integers(64, 160)), draw(st.integers(64, 160))),
        "palette": draw(st.sampled_from(["cogitao-rgb", "arc", "c-arc"])),
        "background": draw(st.sampled_from(["palette", "random", "#203040"])),
        "layout": draw(st.sampled_from(["stretch", "fit", "cell:4", "cell:5:bottom-left"])),
        "gridlines": draw(st.sampled_from([None, True])),
        "antialias": draw(st.sampled_from([1, 2])),
        "jitter": draw(st.sampled_from([None, {"max_shift": 4, "scale": [0.9, 1.2]}])),
        "blur": draw(st.sampled_from(["gaussian:1", "gaussian:2", "box:3", "box:5"])),
    }
    return grid, RenderSpec(**fields), draw(st.integers(0, 10**6))


@settings(max_examples=60, deadline=None)
@given(blurred_cases())
def test_decode_is_exact_under_moderate_blur_with_cells_of_four_pixels(
    case: tuple[np.ndarray, RenderSpec, int],
) -> None:
    grid, spec, seed = case
    image, visible = rendered_with_cells_of(grid, spec, seed, 4)
    assert np.array_equal(decode(image, spec, grid.shape, seed=seed)[visible], grid[visible])


def test_decode_is_robust_to_jpeg_75_with_subsampling_on_large_cells() -> None:
    grids = np.random.default_rng(2).integers(0, 10, (20, 10, 10))
    spec = RenderSpec(background="random")
    for i, (image, grid) in enumerate(zip(render_batch(grids, spec), grids)):
        jpeg = load(encode(image, "jpeg", quality=75, subsampling=True))
        assert np.array_equal(decode(jpeg, spec, grid.shape, seed=i), grid)


def test_float_images_in_unit_range_decode_too() -> None:
    grid = np.arange(12).reshape(3, 4) % 10
    image = render(grid, RenderSpec())
    assert np.array_equal(decode(image.astype(np.float32) / 255, RenderSpec(), (3, 4)), grid)


def test_random_background_needs_the_same_seed() -> None:
    spec = RenderSpec(background="random", size=(16, 16))
    grid = np.zeros((2, 2), dtype=int)
    assert (decode(render(grid, spec, seed=11), spec, (2, 2), seed=11) == 0).all()


@pytest.mark.parametrize(
    ("image", "shape", "error", "message"),
    [
        (np.zeros((64, 64, 3), np.uint8), (3, 3), ImageError,
         "expected RGB images of 128x128x3 .* got shape \\(64, 64, 3\\)"),
        (np.zeros((128, 128), np.uint8), (3, 3), ImageError, "got shape \\(128, 128\\)"),
        (np.full((128, 128, 3), 2.0), (3, 3), ImageError, "floats in \\[0, 1\\]"),
        (np.zeros((128, 128, 3), np.uint8), (0, 3), GridError, "grid_shape must be \\(rows, columns\\)"),
        (np.zeros((128, 128, 3), np.uint8), (3,), GridError, "grid_shape"),
    ],
)
def test_bad_decode_input(image: np.ndarray, shape: tuple, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        decode(image, RenderSpec(), shape)
