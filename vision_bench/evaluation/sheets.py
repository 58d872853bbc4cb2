"""Sample sheets: one row per sample, columns input | target | prediction | error map, then any extra images the
model gives for each sample (`ImageToImageModel.sheet_images`: SSM-Slot's attention per slot).

The error map is the per-pixel absolute error averaged over the RGB channels, drawn with the
'hot' colormap on one fixed scale, `ERROR_RANGE` (0 = exact, 1 = black for white), for every
sheet of every model, so sheets compare by eye; a colour bar under the error column shows that
scale. Sheets are composed with numpy and Pillow (a few milliseconds each; an evaluation draws
many of them).

Text is set in Pillow's built-in font (Aileron, scalable; a bitmap font where Pillow lacks FreeType): it ships
with Pillow, so every machine draws the same sheet offline. Its space is 0.2 em (2 pixels at `FONT_SIZE`), too
narrow to tell "worst test_ood" from "worsttest_ood", so words are set one by one with `WORD_SPACE` between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from vision_bench.errors import UserError
from vision_bench.io.atomic import atomic_output

COLUMNS = ("input", "target", "prediction", "error |pred - target|")
ERROR_RANGE = (0.0, 1.0)
"""The error map's colour scale, the same on every sheet: mean absolute RGB error, 0 (exact) to 1."""
COLORBAR_HEIGHT = 10
COLORBAR_CAPTION = "error scale (every sheet)"
MIN_PANEL = 96
GAP = 6
LABEL_WIDTH = 150
FONT_SIZE = 11
WORD_SPACE = 0.4
"""The space between words, in em (DejaVu Sans's is 0.32 em, Aileron's own 0.2 em)."""
LINE_HEIGHT = 14
INK = (20, 20, 20)
FRAME = (170, 170, 170)


@dataclass(frozen=True)
class SheetRow:
    """One sample: uint8 (H, W, 3) images, a short label (split, index, sequence, scores) and the model's extra
    images as (column name, image) pairs, drawn after the error map."""

    input: np.ndarray
    target: np.ndarray
    prediction: np.ndarray
    label: str
    extras: tuple[tuple[str, np.ndarray], ...] = ()


def error_map(prediction: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Mean absolute RGB error per pixel in [0, 1], as float32 (H, W)."""
    difference = np.abs(prediction.astype(np.float32) - target.astype(np.float32)) / 255.0
    return difference.mean(axis=-1)


def hot_colormap(values: np.ndarray) -> np.ndarray:
    """Values on `ERROR_RANGE` as uint8 RGB: black -> red -> yellow -> white (matplotlib's 'hot');
    values outside the range are clipped, never rescaled."""
    low, high = ERROR_RANGE
    unit = np.clip((np.asarray(values, np.float32) - low) / (high - low), 0.0, 1.0)
    scaled = unit[..., None] * 3.0 - np.array([0.0, 1.0, 2.0], np.float32)
    return (np.clip(scaled, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def colorbar(width: int, height: int = COLORBAR_HEIGHT) -> np.ndarray:
    """The error scale as a (height, width, 3) uint8 strip: `ERROR_RANGE`'s low end on the left."""
    low, high = ERROR_RANGE
    return np.repeat(hot_colormap(np.linspace(low, high, width, dtype=np.float32))[None], height, axis=0)


def to_uint8_image(image: np.ndarray) -> np.ndarray:
    """A (3, H, W) or (H, W, 3) image, float in [0, 1] or uint8, as uint8 (H, W, 3)."""
    array = np.asarray(image)
    if array.ndim != 3:
        raise UserError(f"expected an image with 3 dimensions, got shape {array.shape}")
    if array.shape[0] == 3 and array.shape[-1] != 3:
        array = np.moveaxis(array, 0, -1)
    if array.dtype != np.uint8:
        array = np.clip(np.rint(array.astype(np.float32) * 255.0), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(array)


def _enlarged(image: np.ndarray, factor: int) -> np.ndarray:
    return np.repeat(np.repeat(image, factor, axis=0), factor, axis=1)


SheetFont = ImageFont.FreeTypeFont | ImageFont.ImageFont
"""What `ImageFont.load_default` returns: scalable Aileron with FreeType, else a bitmap font."""


def sheet_font() -> SheetFont:
    """Pillow's built-in font at `FONT_SIZE` (see the module docstring)."""
    return ImageFont.load_default(size=FONT_SIZE)


def _word_space(font: SheetFont) -> float:
    """The advance between two words: `WORD_SPACE` em, or the font's own space where that is wider."""
    return max(font.getlength(" "), round(WORD_SPACE * FONT_SIZE))


def draw_words(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, font: SheetFont) -> None:
    """One line of `text` from its top left corner `xy`, each space `_word_space` wide (two spaces twice that)."""
    x, y = xy
    for word in text.split(" "):
        if word:
            draw.text((x, y), word, fill=INK, font=font)
        x += font.getlength(word) + _word_space(font)


def draw_sheet(rows: list[SheetRow], title: str = "") -> Image.Image:
    """A white sheet: a title line, the column names, one labelled row of four panels per sample (and the rows'
    extra images, the same columns in every row), and the error map's colour bar (with its end values) under the
    error column."""
    if not rows:
        raise UserError("a sample sheet needs at least one sample")
    columns = COLUMNS + tuple(name for name, _ in rows[0].extras)
    height, width = rows[0].target.shape[:2]
    factor = max(1, -(-MIN_PANEL // max(height, width)))
    panel_h, panel_w = height * factor, width * factor
    top = GAP + (LINE_HEIGHT if title else 0) + LINE_HEIGHT
    label_lines = max(len(row.label.splitlines()) for row in rows)
    row_height = max(panel_h, label_lines * LINE_HEIGHT) + GAP
    bar_top = top + row_height * len(rows) + GAP
    canvas = np.full((bar_top + COLORBAR_HEIGHT + LINE_HEIGHT + GAP, LABEL_WIDTH + (panel_w + GAP) * len(columns) + GAP,
                      3), 255, np.uint8)
    error_x = LABEL_WIDTH + (len(COLUMNS) - 1) * (panel_w + GAP)
    canvas[bar_top : bar_top + COLORBAR_HEIGHT, error_x : error_x + panel_w] = colorbar(panel_w)
    for r, row in enumerate(rows):
        y = top + r * row_height
        if tuple(name for name, _ in row.extras) != columns[len(COLUMNS):]:
            raise UserError(f"sheet row {r}: extra columns {[name for name, _ in row.extras]}, expected "
                            f"{list(columns[len(COLUMNS):])} like row 0")
        panels = (row.input, row.target, row.prediction, hot_colormap(error_map(row.prediction, row.target)),
                  *(image for _, image in row.extras))
        for c, panel in enumerate(panels):
            if panel.shape[:2] != (height, width):
                raise UserError(f"sheet row {r}: images are {panel.shape[:2]}, expected {(height, width)} like row 0")
            x = LABEL_WIDTH + c * (panel_w + GAP)
            canvas[y : y + panel_h, x : x + panel_w] = _enlarged(panel, factor)
    sheet = Image.fromarray(canvas)
    draw = ImageDraw.Draw(sheet)
    font = sheet_font()
    if title:
        draw_words(draw, (GAP, GAP), title, font)
    for c, name in enumerate(columns):
        draw_words(draw, (LABEL_WIDTH + c * (panel_w + GAP), top - LINE_HEIGHT), name, font)
    for r, row in enumerate(rows):
        y = top + r * row_height
        for i, line in enumerate(row.label.splitlines()):
            draw_words(draw, (GAP, y + i * LINE_HEIGHT), line, font)
        for c in range(len(columns)):
            x = LABEL_WIDTH + c * (panel_w + GAP)
            draw.rectangle((x - 1, y - 1, x + panel_w, y + panel_h), outline=FRAME)
    draw.rectangle((error_x - 1, bar_top - 1, error_x + panel_w, bar_top + COLORBAR_HEIGHT), outline=FRAME)
    draw_words(draw, (GAP, bar_top), COLORBAR_CAPTION, font)
    low, high = ERROR_RANGE
    label_y = bar_top + COLORBAR_HEIGHT + 1
    draw_words(draw, (error_x, label_y), f"{low:g}", font)
    draw.text((error_x + panel_w, label_y), f"{high:g}", fill=INK, font=font, anchor="ra")  # one word: no spaces
    return sheet


def save_png(image: Image.Image, path: Path) -> Path:
    """Save as PNG through a temporary file so a crash never leaves a truncated image."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary:
        image.save(temporary, format="PNG")
    return path


def write_sheet(rows: list[SheetRow], path: Path, title: str = "") -> Path:
    """Draw and save a sample sheet; return its path."""
    return save_png(draw_sheet(rows, title), path)
