"""The 28 COGITAO object transformations and their application to grids.

`TRANSFORMATIONS` maps each name (in the order of the reference table) to a `Transformation`
with `accepts(obj)` and `apply(obj)`. As in COGITAO, a sequence's constraints are checked on its
input objects (`check_constraints`); `apply_step` then transforms every object of a grid at once
and rejects results that are empty, leave the grid or overlap. `transform_objects`,
`apply_sequence` and `apply_sequence_frames` run a whole sequence.
"""

from vision_bench.tasks.transformations.apply import (
    apply_sequence,
    apply_sequence_frames,
    apply_step,
    check_constraints,
    resolve_sequence,
    transform_objects,
)
from vision_bench.tasks.transformations.base import Transformation
from vision_bench.tasks.transformations.cells import NEXT_COLOR, enclosed_holes, most_frequent_color, next_color
from vision_bench.tasks.transformations.registry import TRANSFORMATION_NAMES, TRANSFORMATIONS

__all__ = [
    "NEXT_COLOR",
    "TRANSFORMATIONS",
    "TRANSFORMATION_NAMES",
    "Transformation",
    "apply_sequence",
    "apply_sequence_frames",
    "apply_step",
    "check_constraints",
    "enclosed_holes",
    "most_frequent_color",
    "next_color",
    "resolve_sequence",
    "transform_objects",
]
