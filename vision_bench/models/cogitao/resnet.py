"""COGITAO's ResNet encoder as released: `CustomResNet` and `CustomBasicBlock` of ktroyan/visualreasoning
(`networks/backbones/resnet.py:216-304`), the network its paper runs built (`resnet.yaml`: `network_size: null`).

A stem of 32 channels (the `grid_io.cell_stem` convolution, BatchNorm, ReLU), five residual blocks of stride 1
without pooling (`BLOCKS`: in, out, kernel; padding kernel // 2), and a final 1x1 convolution to EMBED_DIM (128);
the output is one vector per cell, row-major. A block is `relu(BN(conv2(relu(BN(conv1(x))))) + skip(x))`, every
convolution with a bias, the skip a 1x1 convolution with BatchNorm where the channels change (the identity
elsewhere). PyTorch's initialisation throughout, as COGITAO's. The receptive field is 13x13 cells.

Task conditioning (the project's FiLM, `TaskFiLM`, opt-in with `task_conditioning`) scales and shifts every
block's output. COGITAO's ResNet had none: its task tokens are appended after the cell vectors and their logits
cut off before the loss (`models/beforearc_model.py:1039-1050`), so no task information reached a cell.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.cogitao.grid_io import EMBED_DIM
from vision_bench.models.conditioning import TaskFiLM

STEM_WIDTH = 32
BLOCKS = ((32, 64, 3), (64, 128, 3), (128, 128, 1), (128, 256, 3), (256, 128, 1))
"""`CustomResNet`'s residual blocks: (in channels, out channels, kernel); stride 1, padding kernel // 2."""


class ResidualBlock(nn.Module):
    """`CustomBasicBlock` at stride 1: conv-BN-ReLU-conv-BN plus the skip (1x1 conv-BN where the channels change),
    then ReLU; the names are COGITAO's."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int) -> None:
        super().__init__()
        padding = kernel // 2
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel, padding=padding)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel, padding=padding)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.skip: nn.Module = nn.Identity()
        if in_channels != out_channels:
            self.skip = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1), nn.BatchNorm2d(out_channels))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(features)))
        return torch.relu(self.bn2(self.conv2(out)) + self.skip(features))


class ResNetEncoder(nn.Module):
    """(B, C, ...) input -> (B, G * G, EMBED_DIM) cell vectors, row-major: `stem` (a `cell_stem` of STEM_WIDTH
    channels) + BN + ReLU, the residual blocks (each output modulated by `film` when given), the final 1x1
    convolution."""

    def __init__(self, stem: nn.Conv2d, film: TaskFiLM | None) -> None:
        super().__init__()
        self.stem = nn.Sequential(stem, nn.BatchNorm2d(STEM_WIDTH), nn.ReLU())
        self.blocks = nn.ModuleList(ResidualBlock(*block) for block in BLOCKS)
        self.final = nn.Conv2d(BLOCKS[-1][1], EMBED_DIM, 1)
        self.film = film

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        features = self.stem(inputs)
        code = None
        if self.film is not None:
            assert task_code is not None, "a conditioned model's forward checks the task code"
            code = self.film.code_vector(task_code)
        for index, block in enumerate(self.blocks):
            features = block(features)
            if self.film is not None and code is not None:
                features = self.film.modulate(index, features, code)
        return self.final(features).flatten(2).transpose(1, 2)


def film_channels() -> list[int]:
    """The channels of the feature maps FiLM modulates: every residual block's output."""
    return [out_channels for _, out_channels, _ in BLOCKS]


__all__ = ["BLOCKS", "STEM_WIDTH", "ResNetEncoder", "ResidualBlock", "film_channels"]
