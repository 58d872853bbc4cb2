"""Compositional-ARC's ten transformations (paper 001, appendix B.2), as a registry view of their own.

C-ARC has five kinds of transformation with two settings each. Four coincide exactly with
COGITAO transformations already registered (checked cell by cell on 10x10 grids in
`tests/test_carc.py`) and are the same `Transformation` objects here:

- translate right / down by one cell: `translate_right`, `translate_down`;
- reflect horizontally (rows reversed inside the box) / vertically (columns reversed):
  `mirror_horizontal`, `mirror_vertical`.

Six are new and registered in `CARC_TRANSFORMATIONS` only:

- `carc_rotate_cw` / `carc_rotate_ccw`: a quarter turn about the top-left cell of the object's
  bounding box (Definition 4): offsets (di, dj) become (dj, -di) clockwise and (-dj, di)
  counter-clockwise, so the object leaves its box (to the left, clockwise; upwards,
  counter-clockwise). COGITAO's `rot90` turns the object inside its box instead;
- `extend_up` / `extend_left`: every cell adds the cell above it (left of it) in its color
  (Definition 6); the object grows by one row (column);
- `recolor_red` / `recolor_orange`: every cell becomes color 1 / 2, red and orange in C-ARC's
  palette (Definition 7).

Why a separate view: `TRANSFORMATIONS` holds COGITAO's 28 in table order, which defines task
codes and the "all 28" pools of COGITAO's presets; appending would change them. C-ARC's episodes
read `CARC_TRANSFORMATIONS` and `KINDS`.

C-ARC also refuses a rotation or reflection that leaves the object unchanged (a symmetric object;
released code `primitive_transforms.py`): `UNCHANGED_IS_INVALID` names those.
"""

from __future__ import annotations

import numpy as np

from vision_bench.registry import Registry
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations.base import ANY_OBJECT, Transformation
from vision_bench.tasks.transformations.registry import TRANSFORMATIONS

RED = 1
ORANGE = 2


def rotate_cw(obj: GridObject) -> GridObject:
    """Clockwise quarter turn about the box's top-left cell: (di, dj) -> (dj, -di)."""
    return GridObject(np.rot90(obj.pixels, k=-1), obj.top, obj.left - (obj.height - 1))


def rotate_ccw(obj: GridObject) -> GridObject:
    """Counter-clockwise quarter turn about the box's top-left cell: (di, dj) -> (-dj, di)."""
    return GridObject(np.rot90(obj.pixels, k=1), obj.top - (obj.width - 1), obj.left)


def extend_up(obj: GridObject) -> GridObject:
    """Each cell adds the cell above it, in its own color; the box grows one row upwards."""
    pixels = np.zeros((obj.height + 1, obj.width), dtype=obj.pixels.dtype)
    pixels[:-1] = obj.pixels
    pixels[1:][obj.mask] = obj.pixels[obj.mask]
    return GridObject(pixels, obj.top - 1, obj.left)


def extend_left(obj: GridObject) -> GridObject:
    """Each cell adds the cell left of it, in its own color; the box grows one column leftwards."""
    pixels = np.zeros((obj.height, obj.width + 1), dtype=obj.pixels.dtype)
    pixels[:, :-1] = obj.pixels
    pixels[:, 1:][obj.mask] = obj.pixels[obj.mask]
    return GridObject(pixels, obj.top, obj.left - 1)


def _recolor(color: int):
    def recolor(obj: GridObject) -> GridObject:
        return GridObject(np.where(obj.mask, color, 0).astype(obj.pixels.dtype), obj.top, obj.left)

    return recolor


CARC_TRANSFORMATIONS: Registry[Transformation] = Registry("C-ARC transformation")
"""C-ARC's ten transformations by name, in the order of `KINDS`."""

_NEW = {
    "carc_rotate_cw": Transformation(
        "carc_rotate_cw", "rotate the object 90 degrees clockwise about the top-left cell of its bounding box",
        ANY_OBJECT, rotate_cw),
    "carc_rotate_ccw": Transformation(
        "carc_rotate_ccw", "rotate the object 90 degrees counter-clockwise about the top-left cell of its bounding box",
        ANY_OBJECT, rotate_ccw),
    "extend_up": Transformation(
        "extend_up", "every cell adds the cell above it in its color (the object grows one row up)", ANY_OBJECT,
        extend_up),
    "extend_left": Transformation(
        "extend_left", "every cell adds the cell left of it in its color (the object grows one column left)",
        ANY_OBJECT, extend_left),
    "recolor_red": Transformation(
        "recolor_red", f"every cell of the object becomes color {RED} (red in the C-ARC palette)", ANY_OBJECT,
        _recolor(RED)),
    "recolor_orange": Transformation(
        "recolor_orange", f"every cell of the object becomes color {ORANGE} (orange in the C-ARC palette)",
        ANY_OBJECT, _recolor(ORANGE)),
}

KINDS: dict[str, tuple[str, str]] = {
    "translation": ("translate_right", "translate_down"),
    "rotation": ("carc_rotate_cw", "carc_rotate_ccw"),
    "reflection": ("mirror_horizontal", "mirror_vertical"),
    "extension": ("extend_up", "extend_left"),
    "coloring": ("recolor_red", "recolor_orange"),
}
"""C-ARC's five kinds of transformation (the paper's names) and their two settings each."""

UNCHANGED_IS_INVALID = frozenset({*KINDS["rotation"], *KINDS["reflection"]})
"""Transformations C-ARC refuses when they leave the object as it was."""

for _kind, _names in KINDS.items():
    for _name in _names:
        _transformation = _NEW.get(_name) or TRANSFORMATIONS[_name]
        CARC_TRANSFORMATIONS.add(_name, _transformation, _transformation.description)

KIND_OF = {name: kind for kind, names in KINDS.items() for name in names}
"""The kind of each C-ARC transformation name."""
