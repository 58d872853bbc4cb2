"""Per-object label masks of every frame, drawn at image resolution (as SVIB ships object masks).

Mask pixel value k (1-based) means "object k of the sample's `objects` list", 0 means background
(also margins and gridlines). Input objects are found as the connected pieces inside each object's
bounding box; each object the sample's rule picks (`selected`, true when absent: studies without
rules transform every object) is then carried through the sequence with its transformations, the
others (distractors) stay where they are, so an object keeps its number in every frame even where
objects touch after a step. A sample whose frames are not one per step (a Compositional-ARC
episode, an SVIB scene: input and target only) is labelled from its boxes instead: each object in
its input box (`bbox`) in both grids, and its result in its output box (`output_bbox`) of the
target (a scene's objects stay far enough apart that no box holds a piece of the other object).
Masks use the renderer's own cell placement (`render.raster.placement`) without blur, so they line
up with the images.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from render.raster import placement
from render.spec import RenderSpec
from vision_bench.tasks.grid import GridObject, extract_objects
from vision_bench.tasks.transformations import TRANSFORMATIONS

if TYPE_CHECKING:
    from vision_bench.tasks.sample import TaskSample

MAX_OBJECTS = 255

Box = tuple[int, int, int, int]


def _objects_in_boxes(grid: np.ndarray, boxes: Sequence[Box]) -> list[GridObject]:
    """One `GridObject` per box: the pieces of `grid` whose bounding box lies in it (the smallest box wins)."""
    keep = [np.zeros((bottom - top, right - left), dtype=bool) for top, left, bottom, right in boxes]
    for piece in extract_objects(grid):
        p_top, p_left, p_bottom, p_right = piece.bbox
        owners = [
            k for k, (top, left, bottom, right) in enumerate(boxes)
            if top <= p_top and left <= p_left and p_bottom <= bottom and p_right <= right
        ]
        if owners:
            k = min(owners, key=lambda j: (boxes[j][2] - boxes[j][0]) * (boxes[j][3] - boxes[j][1]))
            top, left = boxes[k][:2]
            keep[k][p_top - top : p_bottom - top, p_left - left : p_right - left] |= piece.mask
    objects = []
    for (top, left, bottom, right), mask in zip(boxes, keep):
        pixels = np.where(mask, grid[top:bottom, left:right], 0).astype(np.uint8)
        objects.append(GridObject(pixels, top, left))
    return objects


def _paint(labels: np.ndarray, objects: Sequence[GridObject]) -> None:
    """Write object k's cells (1-based) into `labels`, clipped to the grid."""
    for number, obj in enumerate(objects, start=1):
        top, left, bottom, right = obj.bbox
        region = labels[max(top, 0) : bottom, max(left, 0) : right]
        mask = obj.mask[max(-top, 0) :, max(-left, 0) :][: region.shape[0], : region.shape[1]]
        region[mask] = number


def _box(values: Sequence[int]) -> Box:
    top, left, bottom, right = (int(value) for value in values)
    return top, left, bottom, right


def _sequence_label_grids(sample: TaskSample) -> list[np.ndarray]:
    """Frames one per step: picked objects follow the sequence, the others stay."""
    objects = _objects_in_boxes(sample.input, [_box(obj["bbox"]) for obj in sample.objects])
    moving = [bool(obj.get("selected", True)) for obj in sample.objects]
    grids = []
    for step, frame in enumerate(sample.frames):
        if step:
            transformation = TRANSFORMATIONS[sample.sequence[step - 1]]
            objects = [transformation.transform(obj) if move else obj for obj, move in zip(objects, moving)]
        labels = np.zeros(np.asarray(frame).shape, dtype=np.uint8)
        _paint(labels, objects)
        grids.append(labels)
    return grids


def _boxed_label_grids(sample: TaskSample) -> list[np.ndarray]:
    """Input and target only: objects in their `bbox` in both, and in their `output_bbox` in the target."""
    first, last = np.asarray(sample.frames[0]), np.asarray(sample.frames[-1])
    inputs = [_box(obj["bbox"]) for obj in sample.objects]
    outputs = [_box(obj["output_bbox"]) for obj in sample.objects]
    input_labels = np.zeros(first.shape, dtype=np.uint8)
    _paint(input_labels, _objects_in_boxes(first, inputs))
    target_labels = np.zeros(last.shape, dtype=np.uint8)
    _paint(target_labels, _objects_in_boxes(last, inputs))
    _paint(target_labels, _objects_in_boxes(last, outputs))
    return [input_labels, target_labels]


def label_grids(sample: TaskSample) -> list[np.ndarray]:
    """One label grid per frame: cell value k = object k (1-based), 0 = background."""
    if len(sample.objects) > MAX_OBJECTS:
        raise ValueError(f"masks hold at most {MAX_OBJECTS} objects, this sample has {len(sample.objects)}")
    if len(sample.frames) != len(sample.sequence) + 1:
        return _boxed_label_grids(sample)
    return _sequence_label_grids(sample)


def mask_image(labels: np.ndarray, spec: RenderSpec, seed: int) -> np.ndarray:
    """(H, W) uint8: each pixel's object number, from the pixel centre's cell under `spec`."""
    place = placement(labels.shape, spec, seed)
    h, w = labels.shape
    offset = place.factor // 2
    rows, cols = place.rows[offset :: place.factor].astype(np.intp), place.cols[offset :: place.factor].astype(np.intp)
    padded = np.zeros((h + 2, w + 2), dtype=np.uint8)
    padded[:h, :w] = labels
    return padded[rows[:, None], cols[None, :]]


__all__ = ["label_grids", "mask_image"]
