"""Output heads: how raw decoder channels become an image, and the training loss.

`rgb`: 3 channels through a sigmoid, trained with MSE or L1 against the target image.
`palette`: logits over the dataset's 10 effective colors (index 0 = the background actually
drawn); the target class of a pixel is its nearest effective color, the loss is cross-entropy with
background pixels down-weighted (0.2 by default, as in Compositional-ARC), and the predicted
image is the palette color of the argmax.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.registry import unknown_name_message

HEADS = ("rgb", "palette")
RGB_LOSSES = ("mse", "l1")
PALETTE_LOSS = "cross_entropy"
PALETTE_SIZE = 10


class RgbHead(nn.Module):
    """Sigmoid RGB output; MSE or L1 loss."""

    name = "rgb"
    channels = 3

    def __init__(self, loss: str) -> None:
        super().__init__()
        self.loss_name = loss
        self._loss = F.mse_loss if loss == "mse" else F.l1_loss

    def activate(self, raw: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(raw)

    def loss(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self._loss(output.float(), target.float())

    def to_image(self, output: torch.Tensor) -> torch.Tensor:
        return output.float()


class PaletteHead(nn.Module):
    """Per-pixel logits over the effective colors; background-weighted cross-entropy."""

    name = "palette"
    loss_name = PALETTE_LOSS

    def __init__(self, colors: np.ndarray, background_weight: float) -> None:
        super().__init__()
        self.channels = len(colors)
        self.background_weight = background_weight
        self.register_buffer("colors", torch.as_tensor(colors, dtype=torch.float32) / 255.0)
        class_weights = torch.ones(self.channels)
        class_weights[0] = background_weight
        self.register_buffer("class_weights", class_weights)

    def activate(self, raw: torch.Tensor) -> torch.Tensor:
        return raw

    def target_indices(self, target: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) image in [0, 1] -> (B, H, W) index of the nearest effective color (first on ties)."""
        target = target.float()
        distances = torch.stack(
            [(target - color.view(1, 3, 1, 1)).square().sum(dim=1) for color in self.colors], dim=1
        )
        return distances.argmin(dim=1)

    def loss(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(output.float(), self.target_indices(target), weight=self.class_weights)

    def to_image(self, output: torch.Tensor) -> torch.Tensor:
        return self.colors[output.argmax(dim=1)].permute(0, 3, 1, 2).contiguous()


def _palette_array(palette_colors: object) -> np.ndarray:
    if palette_colors is None:
        raise ConfigError(
            "head='palette' needs palette_colors: the (10, 3) uint8 effective colors of the dataset's "
            "render spec (RenderSpec.colors), index 0 being the background"
        )
    colors = np.asarray(palette_colors)
    if colors.shape != (PALETTE_SIZE, 3) or not np.issubdtype(colors.dtype, np.number):
        raise ConfigError(f"palette_colors must be a (10, 3) array of 0-255 RGB values, got shape {colors.shape}")
    if np.any(colors < 0) or np.any(colors > 255) or np.any(colors != np.round(colors)):
        raise ConfigError("palette_colors must hold integer RGB values 0-255")
    return colors.astype(np.uint8)


def build_head(
    head: str, loss: str | None, palette_colors: object, background_weight: float
) -> RgbHead | PaletteHead:
    """The output head named `head`, with its loss; one `UserError` per bad option."""
    if head not in HEADS:
        raise UnknownNameError(unknown_name_message("head", str(head), HEADS))
    if head == "rgb":
        loss = loss or "mse"
        if loss not in RGB_LOSSES:
            raise UnknownNameError(unknown_name_message("rgb loss", str(loss), RGB_LOSSES))
        return RgbHead(loss)
    if loss not in (None, PALETTE_LOSS):
        raise ConfigError(
            f"loss={loss!r} applies to head='rgb'; the palette head trains with background-weighted "
            "cross-entropy (set background_weight instead)"
        )
    weight = background_weight if isinstance(background_weight, (int, float)) else math.nan
    if not (math.isfinite(weight) and weight > 0):
        raise ConfigError(
            f"background_weight must be a positive number (0.2 down-weights background 5x), got {background_weight!r}"
        )
    return PaletteHead(_palette_array(palette_colors), float(weight))
