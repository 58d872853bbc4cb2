"""Grid -> RGB image: cell placement per layout, then a vectorized expansion of cells to pixels.

Every layout reduces to a *grid box* on the canvas (top, left, height, width) filled by the
nearest-neighbour rule of Pillow's NEAREST resize: pixel x shows cell floor((x + 0.5) * w /
width) (see `cell_edges`). Each pixel row and column gets a label (cell index, margin or
gridline); those labels drive drawing here, decoding in `render.decode` and drawing on the GPU
in `render.torch_backend`, so all three agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from render.filters import blur_images
from render.grid import validate_grid
from render.palettes import palette_array
from render.spec import (
    SCALE_STREAM,
    SHIFT_X_STREAM,
    SHIFT_Y_STREAM,
    RenderSpec,
    SpecError,
    check_seed,
    seeded_uniform,
)

LINE = 10  # color-table index of gridline pixels; 0-9 are the grid colors


@dataclass(frozen=True, eq=False)
class Placement:
    """Per-pixel labels of one grid on the supersampled canvas (the output size times `factor`).

    `rows[y]` is the cell row drawn at canvas row y, or `h` (margin) or `h + 1` (gridline); `cols`
    likewise with `w`. A pixel is background if its row or column is margin, else gridline if its
    row or column is gridline, else the cell (rows[y], cols[x]).
    """

    grid_shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    factor: int

    @cached_property
    def row_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """Run-length encoding of `rows`: (labels, lengths)."""
        return _runs(self.rows)

    @cached_property
    def col_runs(self) -> tuple[np.ndarray, np.ndarray]:
        return _runs(self.cols)

    @cached_property
    def row_coverage(self) -> tuple[np.ndarray, np.ndarray]:
        """Which labels cover each output row and with how many supersampled rows (see `_coverage`)."""
        return _coverage(self.row_runs, self.factor)

    @cached_property
    def col_coverage(self) -> tuple[np.ndarray, np.ndarray]:
        return _coverage(self.col_runs, self.factor)


def _coverage(runs: tuple[np.ndarray, np.ndarray], factor: int) -> tuple[np.ndarray, np.ndarray]:
    """(labels, counts), each (output pixels, K): output pixel y is made of counts[y, k] supersampled
    pixels of label labels[y, k], k < K (unused slots have count 0)."""
    values, lengths = runs
    stops = np.cumsum(lengths)
    starts = stops - lengths
    first, last = starts // factor, (stops - 1) // factor
    per_run = last - first + 1
    run = np.repeat(np.arange(len(values)), per_run)
    pixel = first[run] + np.arange(len(run)) - (np.cumsum(per_run) - per_run)[run]
    count = np.minimum(stops[run], (pixel + 1) * factor) - np.maximum(starts[run], pixel * factor)
    slot = np.arange(len(run)) - np.searchsorted(pixel, pixel, side="left")
    labels = np.zeros((pixel[-1] + 1, slot.max() + 1), dtype=np.intp)
    counts = np.zeros(labels.shape, dtype=np.uint16)
    labels[pixel, slot], counts[pixel, slot] = values[run], count
    return labels, counts


def _runs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run-length encoding of a label vector: (values, lengths)."""
    change = np.empty(len(labels), dtype=bool)
    change[0], change[1:] = True, labels[1:] != labels[:-1]
    starts = np.flatnonzero(change)
    lengths = np.diff(starts, append=len(labels))
    return labels[starts], lengths


@lru_cache(maxsize=4096)
def cell_edges(n_cells: int, length: int) -> np.ndarray:
    """(n_cells + 1,) read-only boundaries of the cells in a box of `length` pixels, from 0 to `length`.

    Pixel x of the box shows cell floor((x + 0.5) * n_cells / length), computed the way Pillow's
    NEAREST resize does (a running double-precision sum), so that even exact ties such as 4 cells
    over 10 pixels fall on the same side as in Pillow.
    """
    step = n_cells / length
    increments = np.full(length, step)
    increments[0] = 0.5 * step
    cells = np.minimum(np.cumsum(increments).astype(np.int64), n_cells - 1)
    edges = np.searchsorted(cells, np.arange(n_cells + 1), side="left")
    edges.setflags(write=False)
    return edges


def _axis_labels(n_cells: int, extent: int, start: int, length: int, line_width: int) -> np.ndarray:
    """Labels of the `extent` canvas pixels along one axis: cell index, margin (n) or gridline (n + 1)."""
    edges = start + cell_edges(n_cells, length)
    position = np.arange(extent)
    labels = np.searchsorted(edges, position, side="right") - 1
    inside = (position >= edges[0]) & (position < edges[-1])
    labels[~inside] = n_cells
    if line_width:
        line_start = edges - line_width // 2
        line_start[0], line_start[-1] = edges[0], edges[-1] - line_width
        coverage = np.zeros(extent + 1, dtype=np.int64)
        np.add.at(coverage, np.clip(line_start, 0, extent), 1)
        np.add.at(coverage, np.clip(line_start + line_width, 0, extent), -1)
        labels[(np.cumsum(coverage[:-1]) > 0) & inside] = n_cells + 1
    return labels.astype(np.int32 if n_cells + 1 > 127 else np.int8)


def _grid_box(shape: tuple[int, int], spec: RenderSpec) -> tuple[int, int, int, int]:
    """(top, left, height, width) of the grid box in output pixels, before jitter."""
    (h, w), (height, width) = shape, spec.size
    layout = spec.layout
    if layout.mode == "stretch":
        if h > height or w > width:
            raise SpecError(
                f"a {h}x{w} grid does not fit {height}x{width} pixels with layout 'stretch' "
                "(each cell needs a pixel); use a larger size"
            )
        return 0, 0, height, width
    cell = min(height // h, width // w) if layout.mode == "fit" else layout.cell_size
    assert cell is not None
    if cell < 1 or h * cell > height or w * cell > width:
        raise SpecError(
            f"a {h}x{w} grid does not fit {height}x{width} pixels with layout {layout.mode!r}"
            + (f" and {cell}-pixel cells" if layout.mode == "cell" else "")
            + "; use a larger size or smaller cells"
        )
    vertical, horizontal = _anchor_fractions(layout.anchor)
    return (height - h * cell) * vertical // 2, (width - w * cell) * horizontal // 2, h * cell, w * cell


def _anchor_fractions(anchor: str) -> tuple[int, int]:
    """Twice the fraction of the free space above and to the left of the box (0, 1 or 2)."""
    vertical = 0 if anchor.startswith("top") else 2 if anchor.startswith("bottom") else 1
    horizontal = 0 if anchor.endswith("left") else 2 if anchor.endswith("right") else 1
    return vertical, horizontal


def _jittered(
    box: tuple[int, ...], shape: tuple[int, int], spec: RenderSpec, seeds: Sequence[int]
) -> list[tuple[int, ...]]:
    """The box scaled about its center and shifted by whole pixels, per seed, from its jitter streams."""
    assert spec.jitter is not None
    low, high = spec.jitter.scale
    scales = low + (high - low) * seeded_uniform(seeds, SCALE_STREAM)
    reach = spec.jitter.max_shift
    dys, dxs = (
        (seeded_uniform(seeds, s) * (2 * reach + 1)).astype(int) - reach for s in (SHIFT_Y_STREAM, SHIFT_X_STREAM)
    )
    top, left, height, width = box
    boxes: list[tuple[int, ...]] = []
    for scale, dy, dx in zip(scales.tolist(), dys.tolist(), dxs.tolist()):
        new_height, new_width = max(shape[0], round(height * scale)), max(shape[1], round(width * scale))
        new_top, new_left = top + (height - new_height) // 2 + dy, left + (width - new_width) // 2 + dx
        boxes.append((new_top, new_left, new_height, new_width))
    return boxes


def placement(shape: tuple[int, int], spec: RenderSpec, seed: int | None = None) -> Placement:
    """Where each cell of an (h, w) grid lands under `spec` (the seed matters only with jitter)."""
    return placements(shape, spec, [check_seed(seed)])[0]


def placements(shape: tuple[int, int], spec: RenderSpec, seeds: Sequence[int]) -> list[Placement]:
    """`placement` for many seeds at once (one shared placement unless the spec jitters)."""
    if spec.jitter is None:
        return [_fixed_placement(shape, spec)] * len(seeds)
    return [_placement(shape, spec, box) for box in _jittered(_grid_box(shape, spec), shape, spec, seeds)]


@lru_cache(maxsize=1024)
def _fixed_placement(shape: tuple[int, int], spec: RenderSpec) -> Placement:
    return _placement(shape, spec, _grid_box(shape, spec))


@lru_cache(maxsize=1024)
def _placement(shape: tuple[int, int], spec: RenderSpec, box: tuple[int, ...]) -> Placement:
    """The labels for a grid box given in output pixels, computed on the supersampled canvas."""
    factor = spec.antialias
    top, left, height, width = (side * factor for side in box)
    line_width = spec.gridlines.width * factor if spec.gridlines else 0
    smallest = min(height // shape[0], width // shape[1])
    if line_width and smallest < 2 * line_width + 1:
        raise SpecError(
            f"{line_width // factor}-pixel gridlines leave no room in the cells of a {shape[0]}x{shape[1]} "
            f"grid at {spec.size[0]}x{spec.size[1]} pixels; cells need at least 2 x width + 1 pixels"
        )
    rows = _axis_labels(shape[0], spec.size[0] * factor, top, height, line_width)
    cols = _axis_labels(shape[1], spec.size[1] * factor, left, width, line_width)
    for labels in (rows, cols):
        labels.setflags(write=False)
    return Placement(shape, rows, cols, factor)


def color_tables(spec: RenderSpec, seeds: Sequence[int]) -> np.ndarray:
    """(N, 11, 3) uint8: the ten effective colors for each seed, then the gridline color."""
    if spec.background != "random":
        return np.repeat(_fixed_color_table(spec), len(seeds), axis=0)
    line = palette_array([spec.gridlines.color if spec.gridlines else "#000000"])
    colors = spec.colors_batch(seeds)
    return np.concatenate([colors, np.broadcast_to(line, (len(seeds), 1, 3))], axis=1)


@lru_cache(maxsize=64)
def _fixed_color_table(spec: RenderSpec) -> np.ndarray:
    line = palette_array([spec.gridlines.color if spec.gridlines else "#000000"])
    table = np.concatenate([spec.colors(), line])[None]
    table.setflags(write=False)
    return table


def render(grid: npt.ArrayLike, spec: RenderSpec, *, seed: int | None = None) -> np.ndarray:
    """Draw one grid: (H, W, 3) uint8. `seed` picks the random background and jitter (None = 0)."""
    array = validate_grid(grid)
    return _render_stack(array[None], spec, [check_seed(seed)])[0]


def render_batch(
    grids: Sequence[npt.ArrayLike] | np.ndarray, spec: RenderSpec, seeds: Sequence[int] | None = None
) -> np.ndarray:
    """Draw many grids of any sizes: (N, H, W, 3) uint8; image i uses seeds[i] (default: i)."""
    count = len(grids)
    seeds = list(range(count)) if seeds is None else [check_seed(s) for s in seeds]
    if len(seeds) != count:
        raise SpecError(f"render_batch got {count} grids but {len(seeds)} seeds; give one seed per grid")
    if isinstance(grids, np.ndarray) and grids.ndim == 3 and count:
        return _render_stack(_validate_stack(grids), spec, seeds)
    arrays = [validate_grid(grid, f"grids[{i}]") for i, grid in enumerate(grids)]
    groups: dict[tuple[int, int], list[int]] = {}
    for i, array in enumerate(arrays):
        groups.setdefault(array.shape, []).append(i)
    if not arrays:
        return np.empty((0, *spec.size, 3), dtype=np.uint8)
    if len(groups) == 1:
        return _render_stack(np.stack(arrays), spec, seeds)
    out = np.empty((count, *spec.size, 3), dtype=np.uint8)
    for members in groups.values():
        stack = np.stack([arrays[i] for i in members])
        out[members] = _render_stack(stack, spec, [seeds[i] for i in members])
    return out


def _validate_stack(grids: np.ndarray) -> np.ndarray:
    """A (N, h, w) array of same-size grids as uint8, checked at once; errors name the first bad grid."""
    if grids.dtype.kind in "iu" and 1 <= min(grids.shape[1:]) and max(grids.shape[1:]) <= 100:
        if grids.dtype == np.uint8 and grids.max(initial=0) <= 9:
            return np.ascontiguousarray(grids)
        if grids.min(initial=0) >= 0 and grids.max(initial=0) <= 9:
            return grids.astype(np.uint8)
    for i, grid in enumerate(grids):
        validate_grid(grid, f"grids[{i}]")
    return np.ascontiguousarray(grids, dtype=np.uint8)


def _render_stack(grids: np.ndarray, spec: RenderSpec, seeds: list[int]) -> np.ndarray:
    """Draw same-shape uint8 grids (N, h, w) in one pass, or one by one under jitter (each image then
    has its own placement), then blur them as the spec asks."""
    per_image_colors = spec.background == "random"
    tables = color_tables(spec, seeds if per_image_colors else seeds[:1])
    if spec.jitter is None:
        images = _draw(grids, placement(grids.shape[1:], spec), tables)
    else:
        images = np.concatenate([
            _draw(grids[i : i + 1], place, tables[i : i + 1] if per_image_colors else tables)
            for i, place in enumerate(placements(grids.shape[1:], spec, seeds))
        ])
    blur_images(images, spec.blur)
    return images


def color_indices(grids: np.ndarray, n_tables: int) -> np.ndarray:
    """Color-table indices (n, h + 2, w + 2): the grid, then a margin row and column (background,
    0) and a gridline row and column (LINE); offset into image i's table when tables differ."""
    n, h, w = grids.shape
    labels = np.zeros((n, h + 2, w + 2), dtype=np.intp)
    labels[:, :h, :w] = grids
    labels[:, h + 1, :w] = labels[:, :h, w + 1] = labels[:, h + 1, w + 1] = LINE
    if n_tables > 1:
        labels += (np.arange(n) * (LINE + 1))[:, None, None]
    return labels


def _draw(grids: np.ndarray, place: Placement, tables: np.ndarray) -> np.ndarray:
    """Expand cells to pixels: (n, h, w) uint8 grids and (1 or n, 11, 3) color tables -> (n, H, W, 3)."""
    # The reference draws factor^2 times the pixels and then averages them: with antialias 2 that
    # made a whole `export` take 40% longer (docs/benchmarks.md, "Speed tricks"), so antialiased
    # specs take the fast path, which gets the same bytes from coverage counts without the canvas.
    if place.factor > 1:
        return _draw_antialiased_fast(grids, place, tables)
    return _draw_reference(grids, place, tables)


def _draw_reference(grids: np.ndarray, place: Placement, tables: np.ndarray) -> np.ndarray:
    """The definition of drawing: each cell gets its color, the cells are repeated along rows and
    columns as the placement's labels say (the supersampled canvas), and each output pixel is the
    mean of its factor x factor canvas pixels, rounded half up."""
    cells = tables.reshape(-1, 3)[color_indices(grids, len(tables))]
    canvas = np.take(np.take(cells, place.rows, axis=1), place.cols, axis=2)
    factor = place.factor
    if factor == 1:
        return canvas
    area = factor * factor
    sums = sum(canvas[:, i::factor, j::factor].astype(np.uint16) for i in range(factor) for j in range(factor))
    return ((sums + area // 2) // area).astype(np.uint8)  # type: ignore[union-attr]


def _draw_antialiased_fast(grids: np.ndarray, place: Placement, tables: np.ndarray) -> np.ndarray:
    """`_draw_reference` for factor > 1, without drawing the supersampled canvas.

    Each output pixel is the mean of its factor x factor supersampled pixels, rounded half up.
    Supersampled pixels only repeat labels, so block sums come from coverage counts: first along
    columns on the h + 2 label rows, then along rows. Output rows inside one label row are copies
    of that row's rounded mean; only rows straddling a boundary are blended. Sums stay exact.
    """
    area = place.factor * place.factor
    colors = tables.reshape(-1, 3).astype(np.uint16)[color_indices(grids, len(tables))]
    col_labels, col_counts = place.col_coverage
    wide = sum(np.take(colors, col_labels[:, k], axis=2) * col_counts[:, k, None] for k in range(len(col_labels.T)))
    row_labels, row_counts = place.row_coverage
    pure = ((wide * np.uint16(place.factor) + area // 2) // area).astype(np.uint8)
    image = np.take(pure, row_labels[:, 0], axis=1)
    mixed = np.flatnonzero(row_counts[:, 0] < place.factor)
    if len(mixed):
        sums = sum(
            np.take(wide, row_labels[mixed, k], axis=1) * row_counts[mixed, k, None, None]
            for k in range(len(row_labels.T))
        )
        image[:, mixed] = (sums + area // 2) // area
    return image
