"""COGITAO's ResNet encoder (paper 000, appendix I.1): residual blocks at full resolution, no downsampling.

A stem of 32 channels (the `grid_io.cell_stem` convolution, BatchNorm, ReLU), five residual blocks of stride 1
without pooling (`BLOCKS`: in, out, kernel), and a final 1x1 convolution to the embedding width (the paper's
`embed_dim`, read as the models' embedding dimension, `EMBED_DIM`, 128). The paper does
not detail a block; each is a basic residual block (He et al. 2016): two convolutions of the block's kernel,
each followed by BatchNorm, a ReLU between them and after the sum, and a 1x1 convolution with BatchNorm on the
shortcut where the channels change (the identity elsewhere). Task conditioning (FiLM, `TaskFiLM`) scales and
shifts every block's output.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.cogitao.grid_io import EMBED_DIM, truncated_normal_
from vision_bench.models.conditioning import TaskFiLM

STEM_WIDTH = 32
BLOCKS = ((32, 64, 3), (64, 128, 3), (128, 128, 1), (128, 256, 3), (256, 128, 1))
"""Appendix I.1's residual blocks: (in channels, out channels, kernel); stride 1, padding kernel // 2."""


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN plus the shortcut (1x1 conv-BN where the channels change), then ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int) -> None:
        super().__init__()
        padding = kernel // 2
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel, padding=padding, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel, padding=padding, bias=False),
            nn.BatchNorm2d(out_channels),
        )
        self.shortcut: nn.Module = nn.Identity()
        if in_channels != out_channels:
            self.shortcut = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False),
                                          nn.BatchNorm2d(out_channels))
        self.activation = nn.ReLU()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.activation(self.body(features) + self.shortcut(features))


class ResNetEncoder(nn.Module):
    """(B, C, ...) input -> (B, EMBED_DIM, G, G): `stem` (a `cell_stem` of STEM_WIDTH channels) + BN + ReLU, the
    residual blocks (each output modulated by `film` when given), the final 1x1 convolution."""

    def __init__(self, stem: nn.Conv2d, film: TaskFiLM | None) -> None:
        super().__init__()
        self.stem = nn.Sequential(stem, nn.BatchNorm2d(STEM_WIDTH), nn.ReLU())
        self.blocks = nn.ModuleList(ResidualBlock(*block) for block in BLOCKS)
        self.final = nn.Conv2d(BLOCKS[-1][1], EMBED_DIM, 1)
        truncated_normal_(self)
        self.film = film  # after the initialisation: FiLM starts at the identity

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
        return self.final(features)


def film_channels() -> list[int]:
    """The channels of the feature maps FiLM modulates: every residual block's output."""
    return [out_channels for _, out_channels, _ in BLOCKS]


__all__ = ["BLOCKS", "STEM_WIDTH", "ResNetEncoder", "ResidualBlock", "film_channels"]
