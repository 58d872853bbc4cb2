"""Pixel metrics on [0, 1] RGB batches: MSE (mean and SVIB's per-image sum), PSNR, masked MSE.

Every function takes float (B, 3, H, W) batches on any device and returns one value per sample.
`pixel_errors` makes one pass over the batch, in chunks small enough to stay in cache, and
collects every sum the pixel metrics need; an evaluation computes it once for all of them.
`fg_mse` and `changed_mse` look only at the pixels that matter for object tasks, so copying the
(mostly background) input does not score well. A masked MSE with an empty mask is NaN, and
aggregates leave NaN samples out of the mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import torch

from vision_bench.metrics.chunks import map_chunks
from vision_bench.metrics.inputs import MetricInputError, matching_images

Array = TypeVar("Array", np.ndarray, torch.Tensor)

PSNR_CAP_DB = 100.0
"""Aggregates replace an infinite PSNR (identical images) by this value before averaging."""

PIXEL_TOLERANCE = 0.05
"""Largest per-channel difference (in [0, 1] units, about 13/255) still read as "the same color".

It absorbs JPEG and resampling noise (a few levels) and is far below the gap between any two
palette colors, so it never hides a real color change.
"""

CPU_CHUNK = 4
"""Images per CPU task: a chunk's temporaries (under 1 MiB each at 128x128) stay in cache, and a task
is long enough for two threads to overlap (at 2 images the task overhead made a second thread useless)."""
DEVICE_CHUNK = 512


def _ratio(total: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    return torch.where(count > 0, total / count.clamp(min=1), torch.full_like(total, float("nan")))


@dataclass(frozen=True)
class PixelErrors:
    """Per-sample sums of the squared error (over the three channels) over all, foreground and
    changed pixels, with the pixel counts (None where the inputs to find those pixels were not given)."""

    pixels: int
    total: torch.Tensor
    foreground: tuple[torch.Tensor, torch.Tensor] | None = None
    changed: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def mse(self) -> torch.Tensor:
        return self.total / (3 * self.pixels)

    @property
    def mse_sum(self) -> torch.Tensor:
        return self.total

    @property
    def psnr(self) -> torch.Tensor:
        return -10.0 * torch.log10(self.mse)

    @property
    def fg_mse(self) -> torch.Tensor:
        if self.foreground is None:
            raise MetricInputError("fg_mse needs input images with a background color, or a foreground mask")
        total, count = self.foreground
        return _ratio(total / 3, count)

    @property
    def changed_mse(self) -> torch.Tensor:
        if self.changed is None:
            raise MetricInputError("changed_mse needs the input images")
        total, count = self.changed
        return _ratio(total / 3, count)


def differs(images: Array, reference: Array, tolerance: float = PIXEL_TOLERANCE) -> Array:
    """(B, H, W) true where some channel of `images` is more than `tolerance` away from `reference`."""
    return (abs(images - reference) > tolerance).any(1)


def error_sums(squared: Array, target: Array, input: Array | None, background: Array | None,
               foreground: Array | None, tolerance: float) -> list[Array]:
    """[total, (fg sum, fg count), (changed sum, changed count)] for one chunk, from its squared
    errors (pred - target)^2 (B, 3, H, W).

    Written with operators and positional axes only, so numpy arrays (CPU threads) and torch
    tensors (other devices) run the same code.
    """
    errors = squared[:, 0] + squared[:, 1] + squared[:, 2]  # 2x faster in numpy than .sum(1)
    count = errors.shape[0]
    sums = [errors.reshape(count, -1).sum(1)]
    if foreground is None and background is not None and input is not None:
        foreground = differs(target, background, tolerance) | differs(input, background, tolerance)
    masks = [foreground] if foreground is not None else []
    if input is not None:
        masks.append(differs(target, input, tolerance))
    for mask in masks:
        sums += [(errors * mask).reshape(count, -1).sum(1), mask.reshape(count, -1).sum(1)]
    return sums


def _rows(array: Array | None, part: slice) -> Array | None:
    return None if array is None else array[part]


@dataclass(frozen=True)
class PixelBatch(Generic[Array]):
    """The tensors (or their numpy views) of one `pixel_errors` call, checked: images (B, 3, H, W),
    `background` expanded to (B, 3, 1, 1) and `foreground` a (B, H, W) bool mask, each None when not given."""

    pred: Array
    target: Array
    input: Array | None
    background: Array | None
    foreground: Array | None

    @classmethod
    def checked(cls, pred: torch.Tensor, target: torch.Tensor, input: torch.Tensor | None,
                background: torch.Tensor | None, foreground_mask: torch.Tensor | None) -> PixelBatch[torch.Tensor]:
        pred, target = matching_images(pred, target, ("pred", "target"), check_range=False)
        if input is not None:
            input, _ = matching_images(input, target, ("input", "target"), check_range=False)
        batch, _, height, width = target.shape
        if foreground_mask is not None:
            if foreground_mask.shape != (batch, height, width):
                raise MetricInputError(
                    f"foreground_mask: expected shape {(batch, height, width)}, got {tuple(foreground_mask.shape)}"
                )
            foreground_mask = foreground_mask.to(target.device, torch.bool)
        if background is not None:
            background = background.to(target.device, target.dtype).expand(batch, 3, 1, 1)
        return PixelBatch(pred, target, input, background, foreground_mask)

    def arrays(self: PixelBatch[torch.Tensor]) -> PixelBatch[np.ndarray]:
        """The (CPU) tensors as numpy arrays."""
        pred, target, input, background, foreground = (
            None if t is None else t.detach().numpy()
            for t in (self.pred, self.target, self.input, self.background, self.foreground)
        )
        assert pred is not None and target is not None
        return PixelBatch(pred, target, input, background, foreground)

    def chunk_sums(self, part: slice, squared: Array, tolerance: float) -> list[Array]:
        """`error_sums` of the rows `part`, whose squared errors (pred - target)^2 are `squared`."""
        return error_sums(squared, self.target[part], _rows(self.input, part), _rows(self.background, part),
                          _rows(self.foreground, part), tolerance)

    def errors(self, columns: list[torch.Tensor]) -> PixelErrors:
        """`PixelErrors` from the per-sample columns of `error_sums`, concatenated over chunks."""
        has_foreground = self.foreground is not None or (self.background is not None and self.input is not None)
        rest = iter(columns[1:])
        foreground = (next(rest), next(rest)) if has_foreground else None
        changed = (next(rest), next(rest)) if self.input is not None else None
        height, width = self.target.shape[-2:]
        return PixelErrors(pixels=height * width, total=columns[0], foreground=foreground, changed=changed)


def pixel_errors(
    pred: torch.Tensor,
    target: torch.Tensor,
    input: torch.Tensor | None = None,
    *,
    background: torch.Tensor | None = None,
    foreground_mask: torch.Tensor | None = None,
    tolerance: float = PIXEL_TOLERANCE,
) -> PixelErrors:
    """All pixel-metric sums in one chunked pass.

    Foreground pixels are those where the target or the input differs from `background`
    ((B, 3, 1, 1) colors), unless `foreground_mask` (B, H, W) gives them; changed pixels are
    those where the target differs from the input.
    """
    batch = PixelBatch.checked(pred, target, input, background, foreground_mask)
    size = batch.target.shape[0]
    if batch.target.device.type == "cpu":
        arrays = batch.arrays()

        def kernel(part: slice) -> list[np.ndarray]:
            squared = arrays.pred[part] - arrays.target[part]
            squared *= squared
            return arrays.chunk_sums(part, squared, tolerance)

        columns = [torch.from_numpy(np.concatenate(column)) for column in zip(*map_chunks(kernel, size, CPU_CHUNK))]
    else:
        parts = []
        for start in range(0, size, DEVICE_CHUNK):
            part = slice(start, start + DEVICE_CHUNK)
            parts.append(batch.chunk_sums(part, (batch.pred[part] - batch.target[part]) ** 2, tolerance))
        columns = [torch.cat(column) for column in zip(*parts)]
    return batch.errors(columns)


def mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error per image over all 3 x H x W values in [0, 1]."""
    return pixel_errors(pred, target).mse


def mse_sum(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Squared error summed over the 3 x H x W values of each image (SVIB's convention)."""
    return pixel_errors(pred, target).mse_sum


def psnr(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Peak signal-to-noise ratio in dB with data range 1; identical images give +inf."""
    return pixel_errors(pred, target).psnr


def fg_mse(pred: torch.Tensor, target: torch.Tensor, input: torch.Tensor, background: torch.Tensor,
           tolerance: float = PIXEL_TOLERANCE) -> torch.Tensor:
    """MSE over foreground pixels (target or input differs from `background` (B, 3, 1, 1)); NaN when both are blank."""
    return pixel_errors(pred, target, input, background=background, tolerance=tolerance).fg_mse


def changed_mse(pred: torch.Tensor, target: torch.Tensor, input: torch.Tensor,
                tolerance: float = PIXEL_TOLERANCE) -> torch.Tensor:
    """MSE over the pixels the transformation changed; NaN when target and input look the same."""
    return pixel_errors(pred, target, input, tolerance=tolerance).changed_mse
