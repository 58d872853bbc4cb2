"""RGB image -> grid: average each cell's interior and pick the nearest effective color in Lab.

The placement is the one `render` drew with (same spec, grid shape and seed), so cell borders are
known exactly. Each cell is read from its central region, away from neighbours and gridlines:
the clean pixels of the cell, shrunk by a quarter of their extent on every side. Means come from
integral images, so a batch of same-shape grids decodes in a handful of array operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import cv2
import numpy as np
import numpy.typing as npt

from render.codec import ImageError
from render.filters import blur_kernel
from render.grid import MAX_SIDE, GridError
from render.palettes import srgb_to_lab
from render.raster import color_indices, color_tables, placement
from render.spec import RenderSpec, check_seed


def decode(image: npt.ArrayLike, spec: RenderSpec, grid_shape: Sequence[int], *, seed: int | None = None) -> np.ndarray:
    """The (h, w) uint8 grid drawn in `image` (uint8 (H, W, 3), or float in [0, 1]).

    Exact on clean renders whose cells are at least 2 pixels; cells drawn entirely off the canvas
    (possible with jitter) read as background 0. Jitter and a random background need `seed`.
    """
    return decode_batch(np.asarray(image)[None], spec, [grid_shape], seeds=[check_seed(seed)])[0]


def decode_batch(
    images: npt.ArrayLike,
    spec: RenderSpec,
    grid_shapes: Sequence[Sequence[int]],
    seeds: Sequence[int | None] | None = None,
) -> list[np.ndarray]:
    """`decode` for (N, H, W, 3) images at once; image i uses seeds[i] (default: i, as `render_batch`; None: 0)."""
    pixels = _check_images(images, spec)
    count = len(pixels)
    image_seeds = list(range(count)) if seeds is None else [check_seed(s) for s in seeds]
    if len(grid_shapes) != count or len(image_seeds) != count:
        raise ImageError(
            f"decode_batch got {count} images, {len(grid_shapes)} grid shapes and {len(image_seeds)} seeds; "
            "give one of each per image"
        )
    shapes = [_check_shape(shape) for shape in grid_shapes]
    references = srgb_to_lab(spec.colors_batch(image_seeds if spec.background == "random" else image_seeds[:1]))
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, (shape, seed) in enumerate(zip(shapes, image_seeds)):
        groups.setdefault((*shape, seed if spec.jitter is not None else 0), []).append(i)
    grids: list[np.ndarray] = [np.empty(0)] * count
    for (h, w, seed), members in groups.items():
        (row_lo, row_hi), (col_lo, col_hi) = _windows((h, w), spec, seed)
        top, bottom, left, right = row_lo[:, None], row_hi[:, None], col_lo[None, :], col_hi[None, :]
        sums = np.empty((len(members), h, w, 3), dtype=np.int64)
        for k, i in enumerate(members):
            integral = cv2.integral(pixels[i])
            sums[k] = integral[bottom, right] - integral[top, right] - integral[bottom, left] + integral[top, left]
        area = (bottom - top) * (right - left)
        means = sums / np.maximum(area, 1)[..., None]
        if spec.blur.kind != "none":
            means = _unblur(means, spec, (h, w), seed, [image_seeds[i] for i in members])
        lab = srgb_to_lab(means).reshape(len(members), h * w, 3)
        reference = references[members] if len(references) > 1 else references
        # nearest reference: argmin |lab - ref|^2 = argmin (|ref|^2 - 2 lab . ref)
        distance = np.square(reference).sum(-1)[:, None, :] - 2 * lab @ reference.transpose(0, 2, 1)
        decoded = distance.argmin(axis=-1).astype(np.uint8).reshape(len(members), h, w)
        decoded[:, area == 0] = 0
        for i, grid in zip(members, decoded):
            grids[i] = grid
    return grids


def _unblur(
    means: np.ndarray, spec: RenderSpec, shape: tuple[int, int], seed: int, seeds: list[int]
) -> np.ndarray:
    """Undo the blur on the cell means: (n, h, w, 3) observed means -> estimated cell colors.

    Blurring and window averaging are linear and separable, so the observed means are
    rows @ colors @ cols.T per channel, where `colors` holds every label's color (cells unknown;
    margin and gridline known) and rows / cols say how much of each label reaches each window.
    Subtracting the known labels' share and applying (regularized) inverses of the cell parts
    recovers the cells' colors up to rounding and compression noise.
    """
    h, w = shape
    rows, cols, row_inverse, col_inverse = _mixing(shape, spec, seed)
    labels = color_indices(np.zeros((1, h, w), dtype=np.uint8), 1)[0]
    tables = color_tables(spec, seeds if spec.background == "random" else seeds[:1])
    known = tables[:, labels].astype(np.float64)
    known[:, :h, :w] = 0
    channels_first = means.transpose(0, 3, 1, 2) - rows @ known.transpose(0, 3, 1, 2) @ cols.T
    colors = row_inverse @ channels_first @ col_inverse.T
    return colors.transpose(0, 2, 3, 1).clip(0, 255)


def _inverse(mixing: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Ridge-regularized left inverse (M^T M + ridge I)^-1 M^T: exact enough for mild blur, and
    for strong blur it damps the noise that a plain inverse would amplify (no collapse)."""
    return np.linalg.solve(mixing.T @ mixing + ridge * np.eye(mixing.shape[1]), mixing.T)


@lru_cache(maxsize=256)
def _mixing(shape: tuple[int, int], spec: RenderSpec, seed: int) -> tuple[np.ndarray, ...]:
    """Rows and columns mixing matrices (cells, cells + 2): the share of each label (cells, margin,
    gridline) in each cell's blurred window mean; then the inverses of their cell parts."""
    place = placement(shape, spec, seed)
    kernel = blur_kernel(spec.blur)
    assert kernel is not None
    windows = _windows(shape, spec, seed)
    mixing = []
    for (labels, counts), (lo, hi), n_cells in zip((place.row_coverage, place.col_coverage), windows, shape):
        length = len(labels)
        profile = np.zeros((length, n_cells + 2))
        np.add.at(profile, (np.arange(length)[:, None], labels), counts / place.factor)
        blur = np.zeros((length, length))
        radius = len(kernel) // 2
        position = np.arange(length)
        for tap, weight in enumerate(kernel):
            np.add.at(blur, (position, _reflect_101(position + tap - radius, length)), weight)
        cumulative = np.vstack([np.zeros(n_cells + 2), np.cumsum(blur @ profile, axis=0)])
        mixing.append((cumulative[hi] - cumulative[lo]) / np.maximum(hi - lo, 1)[:, None])
    rows, cols = mixing
    return rows, cols, _inverse(rows[:, : shape[0]]), _inverse(cols[:, : shape[1]])


def _reflect_101(position: np.ndarray, length: int) -> np.ndarray:
    """Indices under OpenCV's BORDER_REFLECT_101 for positions possibly outside 0..length-1."""
    if length == 1:
        return np.zeros_like(position)
    period = 2 * (length - 1)
    position = np.abs(position) % period
    return np.where(position >= length, period - position, position)


@lru_cache(maxsize=1024)
def _windows(shape: tuple[int, int], spec: RenderSpec, seed: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Row and column sampling windows of every cell (see `cell_windows`)."""
    place = placement(shape, spec, seed)
    return cell_windows(place.rows, shape[0], place.factor), cell_windows(place.cols, shape[1], place.factor)


def cell_windows(labels: np.ndarray, n_cells: int, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the [lo, hi) output-pixel window to average along one axis; empty if off the canvas.

    `labels` are the supersampled canvas labels of `render.raster.Placement`. The window is the
    output pixels lying wholly inside the cell's clean run (or the one at its center when none
    does), shrunk by a quarter of its length on each side.
    """
    position = np.flatnonzero(labels < n_cells)
    cells = labels[position]
    first = np.full(n_cells, -1)
    last = np.full(n_cells, -2)
    first[cells[::-1]] = position[::-1]
    last[cells] = position
    visible = first >= 0
    start, stop = first, last + 1
    lo = -(-start // factor)
    hi = stop // factor
    narrow = hi <= lo
    lo[narrow] = (start[narrow] + stop[narrow]) // 2 // factor
    hi[narrow] = lo[narrow] + 1
    margin = (hi - lo) // 4
    lo, hi = lo + margin, hi - margin
    lo[~visible] = hi[~visible] = 0
    return lo, hi


def _check_images(images: npt.ArrayLike, spec: RenderSpec) -> np.ndarray:
    array = np.asarray(images)
    if array.ndim != 4 or array.shape[3] != 3 or array.shape[1:3] != tuple(spec.size):
        raise ImageError(
            f"expected RGB images of {spec.size[0]}x{spec.size[1]}x3 (the spec's size), got shape "
            f"{array.shape[1:]}; decode with the spec the image was rendered with"
        )
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    if array.dtype.kind == "f" and np.isfinite(array).all() and array.min() >= 0 and array.max() <= 1:
        return np.ascontiguousarray(np.rint(array * 255), dtype=np.uint8)
    raise ImageError(f"expected uint8 pixels or floats in [0, 1], got {array.dtype} values")


def _check_shape(grid_shape: Sequence[int]) -> tuple[int, int]:
    shape = tuple(grid_shape)
    if len(shape) != 2 or not all(isinstance(s, (int, np.integer)) and 1 <= s <= MAX_SIDE for s in shape):
        raise GridError(f"grid_shape must be (rows, columns), each 1..{MAX_SIDE}, got {grid_shape!r}")
    return int(shape[0]), int(shape[1])
