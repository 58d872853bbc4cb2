"""Symbolic grids to RGB images and back (numpy, OpenCV and Pillow only; never imports torch)."""

from render.errors import UserError
from render.grid import GridError, validate_grid

__all__ = ["GridError", "UserError", "validate_grid"]
