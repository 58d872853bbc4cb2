"""Images to bytes and back: PNG (lossless, default) and JPEG, via OpenCV; loading via Pillow.

Encoding uses OpenCV because it is the faster encoder; loading uses Pillow because it refuses
truncated files instead of returning a half-decoded image.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from render.errors import UserError

FORMATS = ("png", "jpeg")
_OPTIONS = {"png": ("compression",), "jpeg": ("quality", "subsampling")}


class ImageError(UserError):
    """Image data that cannot be encoded or decoded: wrong shape or type, corrupt or truncated bytes."""


def encode(image: np.ndarray, format: str = "png", **options: Any) -> bytes:
    """Encode an (H, W, 3) uint8 RGB image.

    PNG options: `compression` 0-9 (zlib level, default 6). JPEG options: `quality` 1-100
    (default 95) and `subsampling` (4:2:0 chroma subsampling, default False; COGITAO-RGB uses
    quality 100 without subsampling).
    """
    kind = "jpeg" if format.lower() in ("jpeg", "jpg") else format.lower()
    if kind not in FORMATS:
        raise ImageError(f"unknown image format {format!r}; use 'png' or 'jpeg'")
    unknown = sorted(set(options) - set(_OPTIONS[kind]))
    if unknown:
        allowed = ", ".join(_OPTIONS[kind])
        raise ImageError(f"{kind} does not take option(s) {', '.join(unknown)}; it takes {allowed}")
    if not (isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3):
        kind_of = f"{type(image).__name__} of shape {getattr(image, 'shape', None)}"
        raise ImageError(f"encode expects an (H, W, 3) uint8 RGB array, got {kind_of}")
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    if kind == "png":
        level = _int_option(options.get("compression", 6), "compression", 0, 9)
        ok, data = cv2.imencode(".png", bgr, [cv2.IMWRITE_PNG_COMPRESSION, level])
    else:
        quality = _int_option(options.get("quality", 95), "quality", 1, 100)
        subsampling = options.get("subsampling", False)
        if not isinstance(subsampling, bool):
            raise ImageError(f"subsampling must be True or False, got {subsampling!r}")
        sampling = cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420 if subsampling else cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444
        parameters = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, sampling]
        ok, data = cv2.imencode(".jpg", bgr, parameters)
    if not ok:
        raise ImageError(f"OpenCV could not encode a {image.shape[0]}x{image.shape[1]} image as {kind}")
    return data.tobytes()


def load(source: bytes | bytearray | memoryview | str | os.PathLike[str]) -> np.ndarray:
    """Decode PNG/JPEG (or any format Pillow reads) bytes or a file into (H, W, 3) uint8 RGB."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, name = bytes(source), f"image data ({len(source)} bytes)"
    else:
        path = Path(source)
        data, name = path.read_bytes(), str(path)
    try:
        with Image.open(io.BytesIO(data)) as picture:
            picture.load()
            return np.array(picture if picture.mode == "RGB" else picture.convert("RGB"))
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise ImageError(f"{name}: cannot decode the image, the file is corrupt or truncated ({error})") from None


def _int_option(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ImageError(f"{name} must be an integer {low}..{high}, got {value!r}")
    return int(value)
