"""`TRANSFORMATIONS`: the 28 COGITAO transformations, registered in the order of the reference table.

The order is part of the public API: task codes number transformations 1..28 by it. Each family
module registers its transformations (`base.register`) in table order when imported, so `MODULES`
lists the modules in table order and they are imported here, one by one, in that order (not by
import statements, which a formatter may sort). The package imports this module before anything
else can import a family.
"""

from __future__ import annotations

import importlib

from vision_bench.tasks.transformations.base import TRANSFORMATIONS

MODULES = ("move", "rotate_mirror", "crop", "color", "fill", "contour", "pad", "tile")
"""The family modules of `vision_bench.tasks.transformations`, in the reference table's order."""

for _module in MODULES:
    importlib.import_module(f"vision_bench.tasks.transformations.{_module}")

TRANSFORMATION_NAMES = tuple(TRANSFORMATIONS)
"""The names in registry order: transformation k (1-based) of a task code is `TRANSFORMATION_NAMES[k - 1]`."""

__all__ = ["MODULES", "TRANSFORMATIONS", "TRANSFORMATION_NAMES"]
