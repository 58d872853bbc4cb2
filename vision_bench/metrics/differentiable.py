"""SSIM and LPIPS as differentiable torch functions, for a loss in a user's own training loop.

The evaluation's `metrics.ssim.ssim` and `LpipsScorer` compute under `torch.no_grad` (SSIM on the CPU
through OpenCV); these compute the same values with torch operations that carry gradients to the
predictions, on the inputs' device:

- `ssim_differentiable(pred, target)`: mean SSIM per image (B,), the arithmetic of `metrics.ssim`'s
  module docstring (four Gaussian-filtered maps of s = x + y and d = x - y, centred so that float32
  keeps its precision) written out of place, with the depthwise convolutions of `filter_valid_conv`;
- `LpipsLoss(net)`: LPIPS per image (B,) for [0, 1] batches, through the official module built from the
  checked local weight files (`vision-bench weights get lpips`), frozen and in eval mode. Training's
  `lpips` loss term (`models.heads.RgbHead`) is this module.
"""

from __future__ import annotations

import os

import torch
from torch import nn

from vision_bench.metrics.inputs import MetricInputError, matching_images
from vision_bench.metrics.ssim import K1, K2, WINDOW, filter_valid_conv, gaussian_window
from vision_bench.weights.lpips import build_lpips


def ssim_differentiable(pred: torch.Tensor, target: torch.Tensor, *, data_range: float = 1.0) -> torch.Tensor:
    """Mean SSIM per image (B,) of two (B, C, H, W) float batches of at least 11x11 pixels, with gradients; equal
    to the evaluation's `ssim` (tests: within 1e-6 in float32)."""
    pred, target = matching_images(pred, target, ("pred", "target"), check_range=False)
    if min(pred.shape[-2:]) < WINDOW:
        height, width = pred.shape[-2:]
        raise MetricInputError(f"ssim needs images of at least {WINDOW}x{WINDOW} pixels, got {height}x{width}")
    taps = gaussian_window(dtype=pred.dtype, device=pred.device)
    s = pred + target - data_range
    d = pred - target
    mu_s, mu_d, ss, dd = filter_valid_conv(torch.stack([s, d, s * s, d * d]), taps)
    c1, c2 = 2 * (K1 * data_range) ** 2, 2 * (K2 * data_range) ** 2
    means = (mu_s + data_range) ** 2 + c1
    spreads = ss - mu_s**2 + c2
    variance_d = dd - mu_d**2
    ssim_map = (means - mu_d**2) * (spreads - variance_d) / ((means + mu_d**2) * (spreads + variance_d))
    return ssim_map.flatten(1).mean(dim=1)


class LpipsLoss(nn.Module):
    """LPIPS-`net` v0.1 per image (B,) of [0, 1] batches (mapped to [-1, 1] as LPIPS expects); the network is
    frozen (no parameter trains) and gradients flow to the inputs. Raises `weights.lpips.WeightsProblem` when
    the local weight files are missing or refused (`vision-bench weights get lpips --net NET`)."""

    def __init__(self, net: str = "alex", folder: str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        self.network = build_lpips(net, folder)

    def train(self, mode: bool = True) -> LpipsLoss:
        """The network stays in eval mode (LPIPS's dropout is for its own training only)."""
        super().train(mode)
        self.network.eval()
        return self

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.network(pred.float() * 2 - 1, target.float() * 2 - 1).reshape(-1)


__all__ = ["LpipsLoss", "ssim_differentiable"]
