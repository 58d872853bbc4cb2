"""Images to bytes and back: PNG (lossless, default) and JPEG, via OpenCV; loading via Pillow.

Encoding uses OpenCV because it is the faster encoder; loading uses Pillow because it refuses
truncated files instead of returning a half-decoded image.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from render.errors import UserError

FORMATS = ("png", "jpeg")
_OPTIONS = {"png": ("compression",), "jpeg": ("quality", "subsampling")}
MAX_PIXELS = 2048 * 2048
"""A default pixel limit for images from elsewhere (`vision-bench score`): four times the largest image `render`
draws (1024 x 1024). A 10 kB PNG can claim 9000 x 9000 pixels, which take 11 GB and minutes to score."""


class ImageError(UserError):
    """Image data that cannot be encoded or decoded: wrong shape or type, corrupt or truncated bytes."""


class ImageTooLargeError(ImageError):
    """An image whose header claims more pixels than the caller's limit (checked before decoding)."""

    def __init__(self, name: str, size: tuple[int, int], max_pixels: int) -> None:
        width, height = self.size = size
        super().__init__(f"{name} is {width}x{height} pixels ({width * height:,}), more than the limit of "
                         f"{max_pixels:,}; raise the limit to {width * height} to read it")


def encode(image: np.ndarray, format: str = "png", **options: int | bool) -> bytes:
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


def load(source: bytes | bytearray | memoryview | str | os.PathLike[str], *,
         max_pixels: int | None = None) -> np.ndarray:
    """Decode PNG/JPEG (or any format Pillow reads) bytes or a file into (H, W, 3) uint8 RGB.

    `max_pixels`: refuse (`ImageTooLargeError`) an image with more pixels before decoding it, in place of
    Pillow's own decompression-bomb limit (about 179 million pixels), which applies when it is None.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, name = bytes(source), f"image data ({len(source)} bytes)"
    else:
        path = Path(source)
        data, name = path.read_bytes(), str(path)
    try:
        with _pixel_limit(max_pixels), Image.open(io.BytesIO(data)) as picture:
            if max_pixels is not None and picture.size[0] * picture.size[1] > max_pixels:
                raise ImageTooLargeError(name, picture.size, max_pixels)
            picture.load()
            return np.array(picture if picture.mode == "RGB" else picture.convert("RGB"))
    except ImageError:
        raise
    except Image.DecompressionBombError as error:
        raise ImageError(f"{name}: the image has more pixels than Pillow decodes ({error}); use a smaller image"
                         ) from None
    except (OSError, SyntaxError, ValueError) as error:
        raise ImageError(f"{name}: cannot decode the image, the file is corrupt or truncated ({error})") from None


def image_size(path: str | os.PathLike[str], max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(width, height) from an image file's header, without decoding it; an `ImageError` when the file is not an
    image, an `ImageTooLargeError` when it has more than `max_pixels` pixels."""
    try:
        with _pixel_limit(max_pixels), Image.open(path) as picture:
            size = picture.size
    except (OSError, SyntaxError, ValueError) as error:
        raise ImageError(f"{path}: cannot read the image ({error}); replace or remove it") from None
    if size[0] * size[1] > max_pixels:
        raise ImageTooLargeError(str(path), size, max_pixels)
    return size


@contextlib.contextmanager
def _pixel_limit(max_pixels: int | None) -> Iterator[None]:
    """Pillow's decompression-bomb limit lifted while an image is opened, when the caller checks `max_pixels`
    itself before decoding (so that a limit above Pillow's can be asked for, and no warning is printed).
    Pillow's limit is a module global: not for images opened in several threads at once."""
    if max_pixels is None:
        yield
        return
    saved = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = None
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS = saved


def _int_option(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ImageError(f"{name} must be an integer {low}..{high}, got {value!r}")
    return int(value)
