"""The positions of Grid-TF and PL-TF as COGITAO released them (ktroyan/visualreasoning,
`networks/backbones/vit.py`): fixed 2D sin-cos tables, the object positional encoding, the PE mixer and the axial
pixel RoPE. Every table is computed from the canvas side (or the object ids), none is learned or stored.

- `sincos_2d` (PL-TF; `create_ape`, `vit.py:168-206`): for a canvas of side S and width D, q = D / 4 frequencies
  w_k = 1 / 10000^(k / q) and each cell's [sin(col w), cos(col w), sin(row w), cos(row w)], row-major.
- `object_positions` (Grid-TF; `create_ape_with_ope`, `vit.py:216-292`): per sample, [sin(id w'), cos(id w')] of
  the cell's object id over D / 4 frequencies (D / 2 dims), then [sin, cos] of the row and of the column over
  D / 8 frequencies (D / 4 dims each). The release's meshgrid puts the row before the column here
  (`vit.py:256`), the other order from `sincos_2d`; kept.
- `WeightedSumMixer` (Grid-TF; `weighted_sum_vec`, `vit.py:122-135,334-337`): a * n(x) + b * n(p), n the L2
  normalisation of each token (`F.normalize`), a and b learned (1, D) vectors starting at 1. Tokens with a zero
  position (the registers) get a * n(x). PL-TF adds its positions (`sum`).
- `CellRotary` (`RoPEMHSA`, `vit.py:557-674`, with rotary-embedding-torch 0.8.6's `RotaryEmbedding(dim=r,
  freqs_for='pixel', max_freq=S // 2)`, r = head_dim / 4): r / 2 frequencies linspace(1, (S // 2) / 2) * pi, the
  positions of each axis linspace(-1, 1, S), each angle used for one interleaved pair of dims; the first r dims of
  every head's queries and keys turn with the row, the next r with the column, the rest not at all. Only the cell
  tokens turn: the registers before them and the task tokens after them stay as they are. timm's pixel-frequency
  rotary helpers (`build_rotary_pos_embed`, `apply_rot_embed`) compute exactly these angles and this rotation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from timm.layers import apply_rot_embed, build_rotary_pos_embed
from torch import nn


def frequencies(count: int, device: torch.device | None = None) -> torch.Tensor:
    """1 / 10000^(k / count) for k < count, float32, as the release computes them."""
    return 1.0 / (10000 ** (torch.arange(count, dtype=torch.float32, device=device) / count))


def _coordinates(side: int, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(row, column) of each canvas cell, row-major, float32."""
    index = torch.arange(side, dtype=torch.float32, device=device)
    rows, cols = torch.meshgrid(index, index, indexing="ij")
    return rows.flatten(), cols.flatten()


def _sin_cos(values: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    angles = values.unsqueeze(-1) * omega
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def sincos_2d(side: int, width: int) -> torch.Tensor:
    """(side * side, width) float32: [sin(col w), cos(col w), sin(row w), cos(row w)] per cell (module docstring)."""
    rows, cols = _coordinates(side)
    omega = frequencies(width // 4)
    return torch.cat([_sin_cos(cols, omega), _sin_cos(rows, omega)], dim=1)


def object_positions(ids: torch.Tensor, side: int, width: int) -> torch.Tensor:
    """(B, side * side) object ids -> (B, side * side, width) float32: [object | row | column] (module docstring)."""
    rows, cols = _coordinates(side, ids.device)
    cell = frequencies(width // 8, ids.device)
    grid = torch.cat([_sin_cos(rows, cell), _sin_cos(cols, cell)], dim=1).expand(ids.shape[0], -1, -1)
    return torch.cat([_sin_cos(ids.float(), frequencies(width // 4, ids.device)), grid], dim=-1)


class WeightedSumMixer(nn.Module):
    """a * n(tokens) + b * n(positions), a and b learned per dim (COGITAO's `weighted_sum_vec`)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.input_weight = nn.Parameter(torch.ones(1, width))
        self.position_weight = nn.Parameter(torch.ones(1, width))

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return self.input_weight * F.normalize(tokens, dim=-1) + self.position_weight * F.normalize(positions, dim=-1)


class CellRotary(nn.Module):
    """COGITAO's axial pixel RoPE over a side x side canvas of cell tokens that start at token `prefix` (module
    docstring); `forward` turns queries or keys (B, heads, tokens, head_dim)."""

    sin: torch.Tensor
    cos: torch.Tensor

    def __init__(self, side: int, head_dim: int, prefix: int) -> None:
        super().__init__()
        self.turned = 2 * (head_dim // 4)  # r dims per axis (8 for the presets' 32-dim heads), both axes
        sin, cos = build_rotary_pos_embed([side, side], dim=self.turned, max_res=side // 2, linear_bands=True,
                                          in_pixels=True)
        self.register_buffer("sin", sin, persistent=False)
        self.register_buffer("cos", cos, persistent=False)
        self.prefix = prefix
        self.cells = side * side

    def forward(self, heads: torch.Tensor) -> torch.Tensor:
        start, end = self.prefix, self.prefix + self.cells
        cells = heads[:, :, start:end]
        turned = apply_rot_embed(cells[..., : self.turned], self.sin, self.cos)
        return torch.cat([heads[:, :, :start], torch.cat([turned, cells[..., self.turned:]], dim=-1),
                          heads[:, :, end:]], dim=2)


__all__ = ["CellRotary", "WeightedSumMixer", "frequencies", "object_positions", "sincos_2d"]
