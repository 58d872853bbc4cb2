"""Encoding to PNG / JPEG and loading back: lossless PNG, JPEG options, clear errors for bad data."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from render import ImageError, RenderSpec, encode, load, render


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    grid = np.random.default_rng(4).integers(0, 10, (12, 12))
    return render(grid, RenderSpec(size=(64, 80)))


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_png_is_lossless_at_every_compression_level(image: np.ndarray, level: int) -> None:
    data = encode(image, compression=level)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(load(data), image)


def test_png_compression_level_trades_size(image: np.ndarray) -> None:
    assert len(encode(image, compression=9)) < len(encode(image, compression=0))


def test_jpeg_quality_and_subsampling(image: np.ndarray) -> None:
    best = encode(image, "jpeg", quality=100)
    low = encode(image, "jpg", quality=50)
    assert best[:2] == b"\xff\xd8" and len(low) < len(best)
    error_best = np.abs(load(best).astype(int) - image).mean()
    error_low = np.abs(load(low).astype(int) - image).mean()
    assert error_best < error_low
    with (
        Image.open(io.BytesIO(encode(image, "jpeg"))) as full,
        Image.open(io.BytesIO(encode(image, "jpeg", subsampling=True))) as half,
    ):
        assert [c[1:3] for c in full.layer] == [(1, 1)] * 3  # 4:4:4
        assert half.layer[0][1:3] == (2, 2)  # 4:2:0


def test_load_from_a_path_and_from_other_modes(tmp_path: Path, image: np.ndarray) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(encode(image))
    assert np.array_equal(load(path), image)
    assert np.array_equal(load(str(path)), image)
    gray = tmp_path / "gray.png"
    Image.fromarray(np.full((5, 6), 7, np.uint8)).save(gray)
    assert load(gray).shape == (5, 6, 3) and (load(gray) == 7).all()


def test_truncated_and_corrupt_files_name_the_file(tmp_path: Path, image: np.ndarray) -> None:
    for name, data in (("cut.png", encode(image)), ("cut.jpg", encode(image, "jpeg"))):
        path = tmp_path / name
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(ImageError, match=f"{name}: cannot decode the image, the file is corrupt or truncated"):
            load(path)
    with pytest.raises(ImageError, match="image data \\(9 bytes\\): cannot decode"):
        load(b"not a png")


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "absent.png")


@pytest.mark.parametrize(
    ("args", "options", "message"),
    [
        (("gif",), {}, "unknown image format 'gif'"),
        (("png",), {"quality": 90}, "png does not take option\\(s\\) quality; it takes compression"),
        (("jpeg",), {"quality": 0}, "quality must be an integer 1..100"),
        (("jpeg",), {"subsampling": "yes"}, "subsampling must be True or False"),
        (("png",), {"compression": 10}, "compression must be an integer 0..9"),
    ],
)
def test_bad_encode_options(image: np.ndarray, args: tuple, options: dict, message: str) -> None:
    with pytest.raises(ImageError, match=message):
        encode(image, *args, **options)


def test_encode_needs_rgb_uint8(image: np.ndarray) -> None:
    with pytest.raises(ImageError, match="\\(H, W, 3\\) uint8 RGB array"):
        encode(image.astype(np.float32))
    with pytest.raises(ImageError, match="shape \\(64, 80\\)"):
        encode(image[:, :, 0])
