"""Controlled perturbations of true targets, for asking which metric notices which error.

Semantic perturbations change the symbolic grid (an object moved by one cell, recolored, removed,
an extra object) and are rendered afterwards; pixel perturbations change the rendered image (a
one-pixel shift of the whole image, gaussian blur, JPEG compression) and leave the grid intact.
`identity` and `blank` are the two reference points: a perfect prediction and an empty canvas.

Every perturbation is deterministic given its `numpy.random.Generator`, and returns `None` when
it cannot apply to a grid (no object to move, no free room for an extra object).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from render.codec import encode, load
from vision_bench.registry import Registry
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects

Kind = Literal["grid", "image", "reference"]
Change = Callable[[np.ndarray, np.random.Generator], "np.ndarray | None"]
ImageFunction = Callable[[np.ndarray, np.random.Generator], np.ndarray]

_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


@dataclass(frozen=True)
class Perturbation:
    """A named change of a target: `kind` says whether it acts on the grid (a semantic error), on the
    rendered image (a pixel change that leaves every cell intact), or is a reference point."""

    name: str
    kind: Kind
    function: Change


PERTURBATIONS: Registry[Perturbation] = Registry("perturbation")


def perturbation(name: str, kind: Kind, description: str) -> Callable[[Change], Change]:
    """Register the decorated change as perturbation `name`. A perturbation's place in the registry
    seeds its random draws, so new ones go last, to keep the others' results."""

    def decorate(function: Change) -> Change:
        PERTURBATIONS.add(name, Perturbation(name, kind, function), description)
        return function

    return decorate


@perturbation("identity", "reference", "the target itself (perfect prediction)")
def identity(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The target itself: every metric's best value."""
    return grid.copy()


def next_color(pixels: np.ndarray) -> np.ndarray:
    """The cyclic color increment c -> c % 9 + 1 on object cells; background stays 0."""
    return np.where(pixels != 0, pixels % 9 + 1, 0).astype(np.uint8)


def _others_mask(shape: tuple[int, int], objects: list[GridObject], skip: int) -> np.ndarray:
    return draw_objects(shape, [o for i, o in enumerate(objects) if i != skip]) != 0


@perturbation("move_object", "grid", "one object moved by one cell")
def move_object(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """Move one object by one cell (up, down, left or right) without leaving the grid or overlapping."""
    objects = extract_objects(grid)
    height, width = grid.shape
    for index in rng.permutation(len(objects)):
        obj = objects[index]
        others = _others_mask(grid.shape, objects, int(index))
        for step in rng.permutation(len(_STEPS)):
            moved = obj.moved(obj.top + _STEPS[step][0], obj.left + _STEPS[step][1])
            top, left, bottom, right = moved.bbox
            if top < 0 or left < 0 or bottom > height or right > width:
                continue
            if np.any(others[top:bottom, left:right] & moved.mask):
                continue
            return draw_objects(grid.shape, [o for i, o in enumerate(objects) if i != index] + [moved])
    return None


@perturbation("recolor_object", "grid", "one object recolored with the next color")
def recolor_object(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """Give one object the next color on every one of its cells; its shape and place stay."""
    objects = extract_objects(grid)
    if not objects:
        return None
    index = int(rng.integers(len(objects)))
    obj = objects[index]
    objects[index] = GridObject(next_color(obj.pixels), obj.top, obj.left)
    return draw_objects(grid.shape, objects)


@perturbation("remove_object", "grid", "one object removed")
def remove_object(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """Erase one object (its cells become background)."""
    objects = extract_objects(grid)
    if not objects:
        return None
    index = int(rng.integers(len(objects)))
    return draw_objects(grid.shape, [o for i, o in enumerate(objects) if i != index])


def free_anchors(occupied: np.ndarray, height: int, width: int) -> np.ndarray:
    """Top-left cells where a `height` x `width` box overlaps no dilated occupied cell, as (K, 2)."""
    dilated = cv2.dilate(occupied.astype(np.uint8), np.ones((3, 3), np.uint8))
    integral = cv2.integral(dilated)
    counts = (
        integral[height:, width:] - integral[:-height, width:]
        - integral[height:, :-width] + integral[:-height, :-width]
    )
    return np.argwhere(counts == 0)


@perturbation("add_object", "grid", "an extra copy of an object where it touches nothing")
def add_object(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """Add a copy of one object (or a single cell in an empty grid) where it touches nothing."""
    objects = extract_objects(grid)
    pixels = objects[int(rng.integers(len(objects)))].pixels if objects else np.array([[1]], np.uint8)
    if pixels.shape[0] > grid.shape[0] or pixels.shape[1] > grid.shape[1]:
        return None
    anchors = free_anchors(grid != 0, *pixels.shape)
    if len(anchors) == 0:
        return None
    top, left = (int(v) for v in anchors[int(rng.integers(len(anchors)))])
    return draw_objects(grid.shape, objects + [GridObject(pixels, top, left)])


@perturbation("shift_1px", "image", "the whole image shifted by one pixel")
def shift_image(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Shift the whole image by one pixel in a random direction, repeating the edge it uncovers."""
    dy, dx = _STEPS[int(rng.integers(len(_STEPS)))]
    height, width = image.shape[:2]
    rows = np.clip(np.arange(height) - dy, 0, height - 1)
    cols = np.clip(np.arange(width) - dx, 0, width - 1)
    return image[rows][:, cols]


def gaussian_blur(sigma: float) -> ImageFunction:
    """Gaussian blur with `sigma` pixels (OpenCV, kernel covering +-3 sigma, reflected borders)."""

    def blur(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return cv2.GaussianBlur(image, (0, 0), sigmaX=sigma, sigmaY=sigma)

    return blur


def jpeg(quality: int) -> ImageFunction:
    """JPEG compression at `quality` with 4:2:0 chroma subsampling (what most encoders write)."""

    def compress(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return load(encode(image, "jpeg", quality=quality, subsampling=True))

    return compress


perturbation("blur_sigma1", "image", "gaussian blur, sigma 1 pixel")(gaussian_blur(1.0))
perturbation("jpeg_q90", "image", "JPEG compression, quality 90 (mild)")(jpeg(90))
perturbation("jpeg_q50", "image", "JPEG compression, quality 50 (strong)")(jpeg(50))


@perturbation("blank", "reference", "an all-background image (predicts nothing)")
def blank(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An all-background grid: what a model that predicts nothing gets."""
    return np.zeros_like(grid)
