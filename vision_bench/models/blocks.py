"""Convolutional decoder pieces shared by the U-Net and bottleneck decoders."""

from __future__ import annotations

import math

from torch import nn

MAX_WIDTH_FACTOR = 16
DECODER_WIDTH_HELP = "channels of the decoder at full resolution, doubling per halving (capped at 16x)"
"""The help of the `decoder_width` option of both families."""


def width_at(reduction: int, full_resolution_width: int) -> int:
    """Channels at a given stride: `full_resolution_width` at stride 1, doubling per halving, capped at 16x."""
    return full_resolution_width * min(reduction, MAX_WIDTH_FACTOR)


def conv_block(in_channels: int, out_channels: int) -> nn.Sequential:
    """Two 3x3 convolutions, each followed by GroupNorm (batch-size independent) and ReLU."""
    groups = math.gcd(8, out_channels)
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
        nn.GroupNorm(groups, out_channels),
        nn.ReLU(inplace=True),
        nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False),
        nn.GroupNorm(groups, out_channels),
        nn.ReLU(inplace=True),
    )


def halvings(reduction: int) -> list[int]:
    """Strides visited when upsampling by 2 from `reduction` down to full resolution; always ends at 1."""
    steps = []
    while reduction > 1:
        reduction = max(1, reduction // 2)
        steps.append(reduction)
    return steps or [1]
