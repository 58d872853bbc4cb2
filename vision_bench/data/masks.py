"""Per-object label masks of every frame, drawn at image resolution (as SVIB ships object masks).

Mask pixel value k (1-based) means "object k of the sample's `objects` list", 0 means background
(also margins and gridlines). Input objects are found as the connected pieces inside each object's
bounding box; each is then carried through the sequence with its transformations, so an object
keeps its number in every frame even where objects touch after a step. Masks use the renderer's
own cell placement (`render.raster.placement`) without blur, so they line up with the images.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from render.raster import placement
from render.spec import RenderSpec
from vision_bench.tasks.grid import GridObject, extract_objects
from vision_bench.tasks.transformations import TRANSFORMATIONS

MAX_OBJECTS = 255


def _input_objects(sample: Any) -> list[GridObject]:
    """One `GridObject` per metadata object: the pieces whose bounding box lies in its box (the smallest box wins)."""
    boxes = [tuple(obj["bbox"]) for obj in sample.objects]
    keep = [np.zeros((bottom - top, right - left), dtype=bool) for top, left, bottom, right in boxes]
    for piece in extract_objects(sample.input):
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
        pixels = np.where(mask, sample.input[top:bottom, left:right], 0).astype(np.uint8)
        objects.append(GridObject(pixels, top, left))
    return objects


def label_grids(sample: Any) -> list[np.ndarray]:
    """One label grid per frame: cell value k = object k (1-based), 0 = background."""
    if len(sample.objects) > MAX_OBJECTS:
        raise ValueError(f"masks hold at most {MAX_OBJECTS} objects, this sample has {len(sample.objects)}")
    objects = _input_objects(sample)
    grids = []
    for step, frame in enumerate(sample.frames):
        if step:
            transformation = TRANSFORMATIONS[sample.sequence[step - 1]]
            objects = [transformation.transform(obj) for obj in objects]
        labels = np.zeros(np.asarray(frame).shape, dtype=np.uint8)
        for number, obj in enumerate(objects, start=1):
            top, left, bottom, right = obj.bbox
            region = labels[max(top, 0) : bottom, max(left, 0) : right]
            mask = obj.mask[max(-top, 0) :, max(-left, 0) :][: region.shape[0], : region.shape[1]]
            region[mask] = number
        grids.append(labels)
    return grids


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
