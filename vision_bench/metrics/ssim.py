"""Structural similarity (Wang et al. 2004), batched.

Settings match `skimage.metrics.structural_similarity(a, b, channel_axis=-1, gaussian_weights=True,
sigma=1.5, use_sample_covariance=False, data_range=1.0)`: an 11-tap Gaussian window (sigma 1.5),
population covariance, K1 = 0.01, K2 = 0.03, the SSIM map averaged over the pixels whose window
lies inside the image (scikit-image crops the same 5-pixel border), then over the channels.
`_ssim_reference` computes it as the formula reads; `ssim` runs the private fast path `_ssim_fast`.

The fast path's local statistics come from four filtered maps instead of the usual five: with
s = x + y and d = x - y, 2 mu_x mu_y = (mu_s^2 - mu_d^2) / 2, mu_x^2 + mu_y^2 = (mu_s^2 + mu_d^2) / 2,
and the same for the (co)variances, so SSIM = (mu_s^2 - mu_d^2 + 2 C1)(var_s - var_d + 2 C2) /
((mu_s^2 + mu_d^2 + 2 C1)(var_s + var_d + 2 C2)).

On CPU, chunks of images run in parallel threads (numpy and OpenCV release the GIL): the
separable Gaussian is one OpenCV call over all maps of a chunk stacked into a tall image (a
valid output row of a plane only reads rows of that plane). This is several times faster than a
depthwise `conv2d` and needs no barrier per operation, so it also holds up on a busy machine.
On other devices the same arithmetic runs in torch with two depthwise `conv2d` calls.
"""

from __future__ import annotations

from typing import TypeVar

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from vision_bench.metrics.chunks import map_chunks
from vision_bench.metrics.inputs import MetricInputError, matching_images

WINDOW = 11
SIGMA = 1.5
K1 = 0.01
K2 = 0.03
CPU_CHUNK = 2
"""Images per CPU task: the four maps of a chunk (1.5 MiB for 128x128) stay in a core's L2 cache."""
DEVICE_CHUNK = 256

Array = TypeVar("Array", np.ndarray, torch.Tensor)


def gaussian_window(size: int = WINDOW, sigma: float = SIGMA, *, dtype: torch.dtype = torch.float32,
                    device: torch.device | str | None = None) -> torch.Tensor:
    """The normalized 1-D Gaussian taps scipy's `gaussian_filter` uses for this size and sigma."""
    offsets = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    taps = torch.exp(-0.5 * (offsets / sigma) ** 2)
    return (taps / taps.sum()).to(dtype=dtype, device=device)


@torch.no_grad()
def ssim(pred: torch.Tensor, target: torch.Tensor, *, data_range: float = 1.0) -> torch.Tensor:
    """Mean SSIM per image (B,) over channels and valid window positions.

    The value of `_ssim_reference`, computed by `_ssim_fast` (about 20x faster on 64x64 images;
    parity in `tests/test_ssim_reference.py`).
    """
    pred, target = ssim_images(pred, target)
    return _ssim_fast(pred, target, data_range)


def _ssim_reference(pred: torch.Tensor, target: torch.Tensor, data_range: float) -> torch.Tensor:
    """SSIM as Wang et al. (2004) write it, for batches checked by `ssim_images`: the plain reference.

    Local means, variances and the covariance under the Gaussian window, at the positions where the
    window lies inside the image, then the SSIM map averaged over positions and channels. It computes
    in float64, so that E[x^2] - E[x]^2 loses nothing, and returns the input's dtype.
    """
    x, y = pred.double(), target.double()
    taps = gaussian_window(dtype=torch.float64, device=x.device)

    def local_mean(images: torch.Tensor) -> torch.Tensor:
        return filter_valid_conv(images, taps)  # the 2-D Gaussian window is separable

    mu_x, mu_y = local_mean(x), local_mean(y)
    var_x = local_mean(x * x) - mu_x**2
    var_y = local_mean(y * y) - mu_y**2
    cov_xy = local_mean(x * y) - mu_x * mu_y
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    luminance = (2 * mu_x * mu_y + c1) / (mu_x**2 + mu_y**2 + c1)
    contrast_structure = (2 * cov_xy + c2) / (var_x + var_y + c2)
    return (luminance * contrast_structure).mean(dim=(1, 2, 3)).to(pred.dtype)


def _ssim_fast(pred: torch.Tensor, target: torch.Tensor, data_range: float) -> torch.Tensor:
    """`_ssim_reference` from four filtered maps (see the module docstring), in chunks: OpenCV in
    threads on CPU, depthwise `conv2d` elsewhere."""
    taps = gaussian_window(dtype=pred.dtype, device=pred.device)
    if pred.device.type == "cpu":
        return _ssim_cpu(pred.numpy(), target.numpy(), taps.numpy(), data_range)
    return torch.cat([
        _ssim_device(pred[start:start + DEVICE_CHUNK], target[start:start + DEVICE_CHUNK], taps, data_range)
        for start in range(0, pred.shape[0], DEVICE_CHUNK)
    ])


def ssim_images(pred: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both batches checked for SSIM (same shape, at least 11x11 pixels) as contiguous float32 or float64."""
    pred, target = matching_images(pred, target, ("pred", "target"), check_range=False)
    height, width = pred.shape[-2:]
    if height < WINDOW or width < WINDOW:
        raise MetricInputError(f"ssim needs images of at least {WINDOW}x{WINDOW} pixels, got {height}x{width}")
    if pred.dtype not in (torch.float32, torch.float64):
        pred, target = pred.float(), target.float()
    return pred.detach().contiguous(), target.detach().contiguous()


def _ssim_cpu(x: np.ndarray, y: np.ndarray, taps: np.ndarray, data_range: float) -> torch.Tensor:
    def kernel(part: slice) -> np.ndarray:
        return ssim_of_maps(difference_maps(x[part], y[part], data_range), taps, data_range)

    return torch.from_numpy(np.concatenate(map_chunks(kernel, x.shape[0], CPU_CHUNK)))


def difference_maps(a: np.ndarray, b: np.ndarray, data_range: float) -> np.ndarray:
    """The maps SSIM filters for one CPU chunk, (4, *a.shape): s - data_range, d, (s - data_range)^2
    and d^2, with s = a + b and d = a - b.

    `maps[3]` is the squared error, which the pixel metrics sum.
    """
    maps = np.empty((4, *a.shape), dtype=a.dtype)
    np.add(a, b, out=maps[0])
    maps[0] -= data_range  # centered: E[s^2] - E[s]^2 stays accurate in float32
    np.subtract(a, b, out=maps[1])
    np.square(maps[0], out=maps[2])
    np.square(maps[1], out=maps[3])
    return maps


def ssim_of_maps(maps: np.ndarray, taps: np.ndarray, data_range: float) -> np.ndarray:
    """Mean SSIM per image of one CPU chunk from its `difference_maps` (left unchanged)."""
    border = (len(taps) - 1) // 2
    height, width = maps.shape[-2:]
    stats = gaussian_filter_opencv(maps, taps)
    # The rows near a plane's top and bottom mix planes (see `gaussian_filter_opencv`), so the
    # arithmetic skips them; the other rows of a plane are one contiguous block, which numpy runs
    # at full speed (3x faster than a view cropped on all sides).
    mu_s, mu_d, ss, dd = stats.reshape(4, -1, height, width)[:, :, border:-border]
    ssim_map = _ssim_map(mu_s, mu_d, ss, dd, np.empty(mu_s.shape, dtype=maps.dtype), data_range)
    return ssim_map.reshape(*maps.shape[1:-2], -1, width)[..., border:-border].mean(axis=(1, 2, 3))


def _ssim_device(x: torch.Tensor, y: torch.Tensor, taps: torch.Tensor, data_range: float) -> torch.Tensor:
    s = x + y - data_range
    d = x - y
    mu_s, mu_d, ss, dd = filter_valid_conv(torch.stack([s, d, s * s, d * d]), taps)
    return _ssim_map(mu_s, mu_d, ss, dd, torch.empty_like(mu_s), data_range).reshape(x.shape[0], -1).mean(dim=1)


def _ssim_map(mu_s: Array, mu_d: Array, ss: Array, dd: Array, temporary: Array, data_range: float) -> Array:
    """The SSIM map (in `mu_s`) from local means of s - data_range and d and of their squares.

    Works in place: overwrites all five arrays and allocates nothing, numpy or torch alike.
    """
    multiply, add = (np.multiply, np.add) if isinstance(mu_s, np.ndarray) else (torch.mul, torch.add)
    c1, c2 = 2 * (K1 * data_range) ** 2, 2 * (K2 * data_range) ** 2
    mu_d2 = multiply(mu_d, mu_d, out=temporary)
    dd -= mu_d2  # var_d
    mu_s2 = multiply(mu_s, mu_s, out=mu_d)
    ss -= mu_s2  # var_s
    mu_s += data_range
    mu_s *= mu_s
    mu_s += c1
    luminance_denominator = add(mu_s, mu_d2, out=mu_d)
    mu_s -= mu_d2  # luminance numerator
    ss += c2
    structure_denominator = add(ss, dd, out=temporary)
    ss -= dd  # contrast-structure numerator
    mu_s *= ss
    luminance_denominator *= structure_denominator
    mu_s /= luminance_denominator
    return mu_s


def gaussian_filter_opencv(maps: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Gaussian-filter every (H, W) plane of `maps` (..., H, W) with one OpenCV call.

    The planes are stacked into one tall image, so only positions at least `border` pixels from
    a plane's edges are meaningful (a valid output row of a plane only reads rows of that plane).
    """
    width = maps.shape[-1]
    tall = np.ascontiguousarray(maps).reshape(-1, width)
    return cv2.sepFilter2D(tall, -1, taps, taps, borderType=cv2.BORDER_REFLECT).reshape(maps.shape)


def filter_valid_conv(maps: torch.Tensor, taps: torch.Tensor) -> torch.Tensor:
    """Gaussian-filter every (H, W) plane with two `conv2d` calls on any device, keeping the valid positions."""
    height, width = maps.shape[-2:]
    border = (taps.numel() - 1) // 2
    planes = maps.reshape(-1, 1, height, width)
    planes = F.conv2d(planes, taps.view(1, 1, -1, 1))
    planes = F.conv2d(planes, taps.view(1, 1, 1, -1))
    return planes.view(*maps.shape[:-2], height - 2 * border, width - 2 * border)
