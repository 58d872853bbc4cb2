"""Symbolic grids to RGB images and back (numpy, OpenCV and Pillow only; never imports torch).

`render.torch_backend` (imported explicitly) draws padded grid batches on a torch device.
"""

from render.codec import ImageError, encode, load
from render.decode import decode, decode_batch
from render.errors import UserError
from render.grid import GridError, validate_grid
from render.palettes import PALETTES, PaletteError
from render.raster import placement, render, render_batch
from render.spec import RenderSpec, SpecError

__all__ = [
    "PALETTES",
    "GridError",
    "ImageError",
    "PaletteError",
    "RenderSpec",
    "SpecError",
    "UserError",
    "decode",
    "decode_batch",
    "encode",
    "load",
    "placement",
    "render",
    "render_batch",
    "validate_grid",
]
