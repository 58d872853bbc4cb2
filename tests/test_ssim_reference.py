"""SSIM's plain reference reads as the formula and equals scikit-image; the fast path equals the reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.metrics import structural_similarity

from vision_bench.metrics.ssim import _ssim_device, _ssim_reference, gaussian_window, ssim

PATTERNS = ("uniform", "constant", "binary", "near white", "blocks", "same image")
FLOAT32_TOLERANCE = 3e-4
"""The fast path's float32 error: where both images are flat, E[d^2] - E[d]^2 is a few float32 ulps of
a second moment up to 1 instead of 0, over a denominator of 2 C2 = 1.8e-3. The worst seen: 1.2e-4
(OpenCV) and 1.5e-4 (conv2d) for a flat 0.23 or 0.36 against a flat 1.0."""


def skimage_ssim(a: torch.Tensor, b: torch.Tensor, data_range: float = 1.0) -> np.ndarray:
    """scikit-image's SSIM per pair, with the settings the project documents, in float64."""
    return np.array([
        structural_similarity(x.permute(1, 2, 0).double().numpy(), y.permute(1, 2, 0).double().numpy(),
                              channel_axis=-1, gaussian_weights=True, sigma=1.5,
                              use_sample_covariance=False, data_range=data_range)
        for x, y in zip(a, b)
    ])


def images(pattern: str, shape: tuple[int, int, int, int], rng: np.random.Generator) -> np.ndarray:
    """A batch in [0, 1] following `pattern` (each channel drawn on its own)."""
    batch, channels, height, width = shape
    if pattern == "constant":
        return np.broadcast_to(rng.random((batch, channels, 1, 1)), shape).copy()
    if pattern == "binary":
        return (rng.random(shape) < 0.5).astype(np.float64)
    if pattern == "near white":
        return 1 - 1e-3 * rng.random(shape)
    if pattern == "blocks":  # a rendered grid: flat cells of a few colors
        cells = rng.integers(0, 4, (batch, channels, -(-height // 4), -(-width // 4))) / 3
        return np.repeat(np.repeat(cells, 4, axis=2), 4, axis=3)[..., :height, :width]
    return rng.random(shape)


@st.composite
def image_pairs(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(pred, target, data_range): several sizes (most near the 11x11 window), patterns and batch sizes."""
    height = draw(st.one_of(st.integers(11, 16), st.just(64)))
    width = draw(st.one_of(st.integers(11, 16), st.just(40)))
    shape = (draw(st.integers(1, 5)), 3, height, width)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pred_pattern, target_pattern = draw(st.sampled_from(PATTERNS)), draw(st.sampled_from(PATTERNS))
    target = images(target_pattern, shape, rng)
    pred = target.copy() if pred_pattern == "same image" else images(pred_pattern, shape, rng)
    data_range = draw(st.sampled_from([1.0, 255.0]))
    return torch.from_numpy(pred * data_range), torch.from_numpy(target * data_range), data_range


@settings(max_examples=100, deadline=None)
@given(image_pairs())
def test_fast_path_matches_the_reference_in_float64(pair: tuple[torch.Tensor, torch.Tensor, float]) -> None:
    pred, target, data_range = pair
    reference = _ssim_reference(pred, target, data_range)
    assert reference.dtype == torch.float64 and reference.shape == (pred.shape[0],)
    torch.testing.assert_close(ssim(pred, target, data_range=data_range), reference, atol=1e-9, rtol=0)
    taps = gaussian_window(dtype=torch.float64)
    torch.testing.assert_close(_ssim_device(pred, target, taps, data_range), reference, atol=1e-9, rtol=0)


@settings(max_examples=60, deadline=None)
@given(image_pairs())
def test_fast_path_matches_the_reference_in_float32(pair: tuple[torch.Tensor, torch.Tensor, float]) -> None:
    pred, target, data_range = pair[0].float(), pair[1].float(), pair[2]
    reference = _ssim_reference(pred.double(), target.double(), data_range)
    fast = ssim(pred, target, data_range=data_range)
    assert fast.dtype == _ssim_reference(pred, target, data_range).dtype == torch.float32
    torch.testing.assert_close(fast.double(), reference, atol=FLOAT32_TOLERANCE, rtol=0)
    device = _ssim_device(pred, target, gaussian_window(), data_range)
    torch.testing.assert_close(device.double(), reference, atol=FLOAT32_TOLERANCE, rtol=0)


@pytest.mark.parametrize(("height", "width", "pred_pattern", "target_pattern"), [
    (11, 11, "uniform", "uniform"),
    (12, 17, "blocks", "uniform"),
    (32, 24, "constant", "near white"),
    (64, 64, "blocks", "blocks"),
    (20, 13, "binary", "constant"),
])
def test_reference_equals_scikit_image(height: int, width: int, pred_pattern: str, target_pattern: str) -> None:
    rng = np.random.default_rng(height * width)
    shape = (3, 3, height, width)
    pred, target = (torch.from_numpy(images(pattern, shape, rng)) for pattern in (pred_pattern, target_pattern))
    np.testing.assert_allclose(_ssim_reference(pred, target, 1.0).numpy(), skimage_ssim(pred, target),
                               atol=1e-12, rtol=0)
    np.testing.assert_allclose(_ssim_reference(255 * pred, 255 * target, 255.0).numpy(),
                               skimage_ssim(255 * pred, 255 * target, 255.0), atol=1e-12, rtol=0)


def test_reference_hand_computed_on_constant_images() -> None:
    """Flat images have no variance, so SSIM is the luminance term (2 a b + C1) / (a^2 + b^2 + C1)."""
    a, b = 0.7, 0.3
    pred, target = (torch.full((1, 3, 13, 12), value, dtype=torch.float64) for value in (a, b))
    c1 = 0.01**2
    expected = (2 * a * b + c1) / (a**2 + b**2 + c1)
    assert _ssim_reference(pred, target, 1.0).item() == pytest.approx(expected, abs=1e-12)
    assert _ssim_reference(target, target, 1.0).item() == pytest.approx(1.0, abs=1e-12)

