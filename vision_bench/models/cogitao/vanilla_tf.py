"""COGITAO's Vanilla Transformer encoder (paper 000, appendix I.2): one token per cell, learned 1D positions.

The `grid_io.cell_stem` convolution gives one WIDTH-wide token per cell of the G x G canvas (patch size 1 on the
grid, one cell's pixels on the image); a learned position (a table of G^2 rows, PEMixer "sum") is added; with
task conditioning one token per task-code position is prepended (appendix J.2: the task embedding joins the
sequence before the encoder; no position is added to it). DEPTH pre-LN layers (multi-head self-attention, then
a GELU feed-forward network of FFN_WIDTH, each with a residual connection; no dropout, which the paper gives to
the Grid-TF only), a final LayerNorm, and the task tokens dropped: (B, WIDTH, G, G).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.models.cogitao.grid_io import EMBED_DIM, truncated_normal_
from vision_bench.models.conditioning import TaskCodeEmbedding

WIDTH = EMBED_DIM
DEPTH = 6
HEADS = 4
FFN_WIDTH = 4 * WIDTH


class SelfAttention(nn.Module):
    """Multi-head self-attention: one projection to queries, keys and values, one output projection."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, length, width = tokens.shape
        qkv = self.qkv(tokens).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        return self.out(attended.transpose(1, 2).reshape(batch, length, width))


class EncoderLayer(nn.Module):
    """Pre-LN: x + attention(LN(x)), then x + FFN(LN(x)) with a GELU between the FFN's two linear layers."""

    def __init__(self, width: int, heads: int, ffn_width: int) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = SelfAttention(width, heads)
        self.ffn_norm = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, ffn_width), nn.GELU(), nn.Linear(ffn_width, width))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = tokens + self.attention(self.attention_norm(tokens))
        return tokens + self.ffn(self.ffn_norm(tokens))


class VanillaTransformerEncoder(nn.Module):
    """(B, C, ...) input -> (B, WIDTH, G, G): `stem` (a `cell_stem` of WIDTH channels) to cell tokens, learned
    positions, `task_tokens` prepended when given, the encoder layers, a final LayerNorm, the cell tokens."""

    def __init__(self, stem: nn.Conv2d, grid_size: int, task_tokens: TaskCodeEmbedding | None) -> None:
        super().__init__()
        self.stem = stem
        self.positions = nn.Parameter(torch.empty(grid_size * grid_size, WIDTH))
        self.layers = nn.ModuleList(EncoderLayer(WIDTH, HEADS, FFN_WIDTH) for _ in range(DEPTH))
        self.norm = nn.LayerNorm(WIDTH)
        truncated_normal_(self)
        nn.init.trunc_normal_(self.positions, std=0.02)
        self.task_tokens = task_tokens  # after the initialisation: its table keeps its own

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        cells = self.stem(inputs)
        batch, width, height, columns = cells.shape
        tokens = cells.flatten(2).transpose(1, 2) + self.positions.to(cells.dtype)
        extra = 0
        if self.task_tokens is not None:
            assert task_code is not None, "a conditioned model's forward checks the task code"
            task = self.task_tokens(task_code).to(tokens.dtype)
            tokens, extra = torch.cat([task, tokens], dim=1), task.shape[1]
        for layer in self.layers:
            tokens = layer(tokens)
        tokens = self.norm(tokens)[:, extra:]
        return tokens.transpose(1, 2).reshape(batch, width, height, columns)


__all__ = ["DEPTH", "FFN_WIDTH", "HEADS", "WIDTH", "EncoderLayer", "SelfAttention", "VanillaTransformerEncoder"]
