"""The input normalisation a pretrained timm backbone was trained with: (x - mean) / std per channel.

A model whose options name starting weights (`pretrained` or `pretrained_file`) takes the mean and std of its
backbone's timm `pretrained_cfg` (ImageNet's for most), unless `input_normalization: {mean: [...], std: [...]}`
says otherwise; the values become a build option (`ImageToImageModel.build_options`), so an exported model, which
is rebuilt without its starting weights, normalises its inputs as it was trained. The mean and std are kept as
buffers outside the state dict: checkpoints and exports hold no new tensors. Only the families that build a timm
backbone (unet, bottleneck, vit) take the option; a model trained from scratch reads [0, 1] pixels as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from vision_bench.errors import ConfigError

Normalization = tuple[tuple[float, float, float], tuple[float, float, float]]
"""(mean, std) per RGB channel."""


def check_normalization(value: Any) -> Normalization | None:
    """`input_normalization` as (mean, std), or None when unset; a one-line `ConfigError` for anything else."""
    if value is None:
        return None
    fix = "give input_normalization as {mean: [r, g, b], std: [r, g, b]} with positive std values"
    if not isinstance(value, Mapping) or set(value) != {"mean", "std"}:
        raise ConfigError(f"input_normalization must name mean and std, got {value!r}; {fix}")
    parts = []
    for key in ("mean", "std"):
        numbers = value[key]
        if (not isinstance(numbers, (list, tuple)) or len(numbers) != 3
                or not all(isinstance(n, (int, float)) and math.isfinite(n) for n in numbers)):
            raise ConfigError(f"input_normalization {key} must be three numbers, got {numbers!r}; {fix}")
        parts.append(tuple(float(n) for n in numbers))
    if min(parts[1]) <= 0:
        raise ConfigError(f"input_normalization std must be positive, got {list(parts[1])}; {fix}")
    return parts[0], parts[1]  # type: ignore[return-value]


def pretrained_normalization(module: nn.Module) -> Normalization | None:
    """The mean and std of a timm module's `pretrained_cfg`, when it gives three of each."""
    config = getattr(module, "pretrained_cfg", None) or {}
    try:
        return check_normalization({"mean": config.get("mean"), "std": config.get("std")})
    except ConfigError:
        return None


class InputNormalization(nn.Module):
    """(x - mean) / std per channel of (B, 3, H, W) images in [0, 1]."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, normalization: Normalization) -> None:
        super().__init__()
        mean, std = normalization
        self.normalization = normalization
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return (images - self.mean.to(images.dtype)) / self.std.to(images.dtype)

    def as_option(self) -> dict[str, list[float]]:
        """The `input_normalization` option that rebuilds it."""
        return {"mean": list(self.normalization[0]), "std": list(self.normalization[1])}


__all__ = ["InputNormalization", "Normalization", "check_normalization", "pretrained_normalization"]
