"""gCOG's inputs as its released code builds them (IBM/gcog `gcog/task/dataset_generator.py`): every token is a short
vector of ID-valued features (an index, not a one-hot) with a last EOS dimension, and each sequence ends with an
EOS token that is zero but for that dimension (`dataset_generator.py:55-61,206-209`).

Here a rule token is [the task code's token id, 0] (gCOG's is [operator id, selector ids..., 0],
`dataset_generator.py:170-203`; the project's task code spells a rule one token per position), a grid cell's
stimulus token [its class on the canvas, 0] (gCOG's [colour id, shape id, 0] with 0 for an empty cell,
`stim_generator.py:429-448`; here the background, colour 0, is the empty cell), an image cell's token its patch
pixels and 0. Cells are read row-major, as gCOG's (Y, X) grid reshaped to 100 tokens (`dataset_generator.py:53`).
`SinusoidalPositions` is the released `PositionalEncoding` (`gcog/models/transformer.py:7-29`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

RULE_FEATURES = 2
"""A rule token's features: the task code's token id and the EOS flag."""
GRID_FEATURES = 2
"""A grid cell's features: its class on the canvas and the EOS flag (gCOG's `STIMULI_ARRAY_LENGTH` is 3: colour,
shape and EOS, `gcog/task/config.py:70`)."""
POSITION_DROPOUT = 0.1
"""The dropout of the released `PositionalEncoding` (its default, which `TransformerBlock` keeps:
`transformer.py:11,134`)."""


def with_eos(features: torch.Tensor) -> torch.Tensor:
    """(B, T, F) features -> (B, T + 1, F + 1): a zero EOS column, then the EOS token (zeros, EOS flag 1)."""
    padded = F.pad(features, (0, 1, 0, 1))
    padded[:, -1, -1] = 1.0
    return padded


def rule_tokens(task_code: torch.Tensor | None, batch: int, device: torch.device) -> torch.Tensor:
    """(B, L) task code -> (B, L + 1, RULE_FEATURES) rule tokens: [token id, 0] per code position, then EOS; an
    unconditioned model (no code) reads the EOS token alone."""
    if task_code is None:
        return with_eos(torch.zeros(batch, 0, RULE_FEATURES - 1, device=device))
    return with_eos(task_code.float().unsqueeze(-1))


def grid_features(canvas: torch.Tensor) -> torch.Tensor:
    """(B, G, G) classes -> (B, G * G, 1) ID-valued cell features, row-major."""
    return canvas.flatten(1).float().unsqueeze(-1)


def patch_features(images: torch.Tensor, cell: int) -> torch.Tensor:
    """(B, 3, H, W) images -> (B, (H / cell) * (W / cell), 3 * cell * cell): each cell's pixels, row-major."""
    return F.unfold(images, kernel_size=cell, stride=cell).transpose(1, 2)


class SinusoidalPositions(nn.Module):
    """x + PE[:T] then dropout: the fixed sine / cosine table of Vaswani et al. for `length` positions
    (`transformer.py:7-29`)."""

    def __init__(self, width: int, length: int) -> None:
        super().__init__()
        self.dropout = nn.Dropout(POSITION_DROPOUT)
        position = torch.arange(length).unsqueeze(1)
        frequencies = torch.exp(torch.arange(0, width, 2) * (-math.log(10000.0) / width))
        table = torch.zeros(length, width)
        table[:, 0::2] = torch.sin(position * frequencies)
        table[:, 1::2] = torch.cos(position * frequencies)
        self.register_buffer("table", table, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        table: torch.Tensor = self.table  # type: ignore[assignment]
        return self.dropout(tokens + table[: tokens.shape[1]])


__all__ = [
    "GRID_FEATURES",
    "POSITION_DROPOUT",
    "RULE_FEATURES",
    "SinusoidalPositions",
    "grid_features",
    "patch_features",
    "rule_tokens",
    "with_eos",
]
