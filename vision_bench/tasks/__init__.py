"""Procedural grid tasks: grids and objects, the object library, the 28 transformations, the generator.

`TRANSFORMATIONS` and `apply_sequence` are re-exported here; everything in this package is numpy /
scipy only, so importing it never imports torch.
"""

from vision_bench.tasks.transformations import TRANSFORMATIONS, apply_sequence, apply_sequence_frames

__all__ = ["TRANSFORMATIONS", "apply_sequence", "apply_sequence_frames"]
