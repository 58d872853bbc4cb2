"""Blur applied after drawing: Gaussian or box, on uint8 images, with OpenCV.

The torch backend reproduces it with the same kernels, border mode and rounding, so the
definitions here (kernel size rule, reflect-101 borders, round half up) are the reference.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from render.spec import Blur

BORDER = cv2.BORDER_REFLECT_101


def gaussian_kernel(sigma: float) -> np.ndarray:
    """The 1-D Gaussian weights (float64, summing to 1) used for `sigma`: 2*ceil(3*sigma)+1 taps."""
    size = 2 * math.ceil(3 * sigma) + 1
    return cv2.getGaussianKernel(size, sigma, cv2.CV_64F).ravel()


def blur_kernel(blur: Blur) -> np.ndarray | None:
    """The separable 1-D kernel of `blur`, or None when it is off."""
    if blur.kind == "gaussian":
        assert blur.sigma is not None
        return gaussian_kernel(blur.sigma)
    if blur.kind == "box":
        assert blur.size is not None
        return np.full(blur.size, 1.0 / blur.size)
    return None


def blur_images(images: np.ndarray, blur: Blur) -> None:
    """Blur each (H, W, 3) uint8 image of `images` (N, H, W, 3) in place with OpenCV.

    Gaussian blur filters in float32 with the exact kernel and rounds half up once at the end
    (OpenCV's own uint8 GaussianBlur quantizes the kernel and can be off by 2 levels); box blur
    sums integers, so OpenCV's uint8 path is already exact.
    """
    kernel = blur_kernel(blur)
    if kernel is None:
        return
    for image in images:
        if blur.kind == "gaussian":
            filtered = cv2.sepFilter2D(image, cv2.CV_32F, kernel, kernel, borderType=BORDER)
            np.floor(filtered + 0.5, out=filtered)
            image[...] = filtered
        else:
            cv2.blur(image, (len(kernel), len(kernel)), dst=image, borderType=BORDER)
