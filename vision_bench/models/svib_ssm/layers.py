"""What SVIB's two state-space models share (its ssms/*/utils.py): initialised convolutions, the GRU cell,
the Cartesian position embedding, and the Gaussian KL and negative log-likelihood of their objectives.

Initialisation as SVIB's `conv2d`, `linear` and `gru_cell`: Kaiming-uniform (ReLU gain) for a layer
followed by a ReLU, else Xavier-uniform; zero biases. Linear layers come from
`vision_bench.models.patch_transformer.linear`, which is SVIB's `linear` (the same function in both
folders). PyTorch's own initialisation is kept where SVIB keeps it (transposed convolutions,
LayerNorms).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def conv2d(
    in_channels: int, out_channels: int, kernel: int, stride: int = 1, padding: int = 0, *, relu: bool = False
) -> nn.Conv2d:
    """A biased convolution initialised as SVIB's `conv2d`: Kaiming-uniform before a ReLU, else Xavier-uniform;
    zero bias."""
    layer = nn.Conv2d(in_channels, out_channels, kernel, stride, padding)
    if relu:
        nn.init.kaiming_uniform_(layer.weight, nonlinearity="relu")
    else:
        nn.init.xavier_uniform_(layer.weight)
    assert layer.bias is not None, "a Conv2d has a bias unless built with bias=False"
    nn.init.zeros_(layer.bias)
    return layer


def conv_relu(in_channels: int, out_channels: int, kernel: int, stride: int, padding: int) -> list[nn.Module]:
    """SVIB's `Conv2dBlock`: a Kaiming-initialised convolution and a ReLU (two entries of a Sequential)."""
    return [conv2d(in_channels, out_channels, kernel, stride, padding, relu=True), nn.ReLU()]


def gru_cell(input_size: int, hidden_size: int) -> nn.GRUCell:
    """A GRU cell initialised as SVIB's `gru_cell`: Xavier-uniform input weights, orthogonal hidden weights,
    zero biases."""
    cell = nn.GRUCell(input_size, hidden_size)
    nn.init.xavier_uniform_(cell.weight_ih)
    nn.init.orthogonal_(cell.weight_hh)
    nn.init.zeros_(cell.bias_ih)
    nn.init.zeros_(cell.bias_hh)
    return cell


def cartesian_grid(side: int) -> torch.Tensor:
    """(4, side, side): the pixel centres' x, y, 1 - x and 1 - y in (0, 1), x along the columns."""
    coords = torch.linspace(0.0, 1.0, side + 1)
    coords = 0.5 * (coords[:-1] + coords[1:])
    grid_y, grid_x = torch.meshgrid(coords, coords, indexing="ij")
    return torch.stack((grid_x, grid_y, 1 - grid_x, 1 - grid_y), dim=0)


class CartesianPositions(nn.Module):
    """SVIB's `CartesianPositionalEmbedding`: adds a 1x1 convolution (Xavier, zero bias) of the fixed
    `cartesian_grid` to a (B, channels, side, side) feature map. SVIB keeps the grid as a frozen
    parameter; here it is a buffer, recomputed and not saved."""

    grid: torch.Tensor

    def __init__(self, channels: int, side: int) -> None:
        super().__init__()
        self.projection = conv2d(4, channels, 1)
        self.register_buffer("grid", cartesian_grid(side).unsqueeze(0), persistent=False)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return features + self.projection(self.grid.to(features.dtype))


def normal_kl(mean1: torch.Tensor, logvar1: torch.Tensor, mean2: torch.Tensor, logvar2: torch.Tensor) -> torch.Tensor:
    """Elementwise KL(N(mean1, exp logvar1) || N(mean2, exp logvar2)), SVIB's `normal_kl`."""
    return 0.5 * (
        -1.0 + logvar2 - logvar1 + torch.exp(logvar1 - logvar2) + ((mean1 - mean2) ** 2) * torch.exp(-logvar2)
    )


def normal_nll(mean: torch.Tensor, logvar: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Elementwise -log N(target; mean, exp logvar), SVIB's `normal_nll`."""
    return 0.5 * (logvar + math.log(2 * math.pi) + ((mean - target) ** 2) * torch.exp(-logvar))
