"""COGITAO's Vanilla Transformer encoder as released: the `VisionTransformer` of ktroyan/visualreasoning
(`networks/backbones/vit.py`) at the paper's settings (vit.yaml of 2025-05 and the Vanilla-TF command: learned
APE mixed by sum, no OPE, no RPE, no registers, no cls token).

The `grid_io.cell_stem` convolution gives one WIDTH-wide token per cell of the G x G canvas, row-major (patch
size 1 on the one-hot grid, one cell's pixels on the image); a learned position per canvas cell, drawn N(0, 1) as
COGITAO's `torch.randn` table, is added (`vit.py:154-166,346-347`); with task conditioning the task code's
tokens follow the cells (`vit.py:1032-1034`) without positions, from one embedding table shared by every code
position and drawn N(0, 1) (COGITAO's `nn.Embedding` in `beforearc_model.py:890-891`), so the encoder sees which
transformations the code holds but not their order. DEPTH pre-LN layers (`TransformerLayer`, `vit.py:694-754`):
x + W_o(attention(LN(x))), the attention one biased qkv projection and `scaled_dot_product_attention` over all
tokens with dropout ATTENTION_DROPOUT on its probabilities in training; then x + FFN(LN(x)), the FFN
Linear -> GELU (exact) -> dropout -> Linear -> dropout (FFN_DROPOUT). A final LayerNorm; the task tokens are
dropped: (B, G * G, WIDTH). Every linear layer starts truncated-normal (std 0.02, cut at +-2) with zero bias,
LayerNorms at 1 and 0 (`vit.py:946-994`); the stem keeps PyTorch's initialisation.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.models.cogitao.grid_io import EMBED_DIM
from vision_bench.models.cogitao.positions import CellRotary

WIDTH = EMBED_DIM
DEPTH = 6
HEADS = 4
FFN_WIDTH = 4 * WIDTH
ATTENTION_DROPOUT = 0.1
FFN_DROPOUT = 0.1


def init_linears(module: nn.Module, weight_init: Callable[[torch.Tensor], object]) -> None:
    """Every linear layer of `module`: its weight by `weight_init`, its bias zero (the release's `init_weights`,
    `vit.py:946-994`: truncated-normal 0.02 for the ViTs, xavier-uniform for the looped one)."""
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            weight_init(layer.weight)
            nn.init.zeros_(layer.bias)


def append_task_tokens(tokens: torch.Tensor, table: nn.Embedding | None, task_code: torch.Tensor | None
                       ) -> torch.Tensor:
    """The task code's tokens from `table` after `tokens`, without positions (`vit.py:1032-1034`); `tokens` as
    they are when the model is not task-conditioned (no table)."""
    if table is None:
        return tokens
    assert task_code is not None, "a conditioned model's forward checks the task code"
    return torch.cat([tokens, table(task_code)], dim=1)


class SelfAttention(nn.Module):
    """COGITAO's `MHSA`: one biased projection to queries, keys and values, scaled dot-product attention (no mask;
    dropout on the probabilities in training), one output projection; with `rotary` (Grid-TF, PL-TF: `RoPEMHSA`,
    `vit.py:557-674`) the queries and keys of the cell tokens turned first."""

    def __init__(self, width: int, heads: int, dropout: float, rotary: CellRotary | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.rotary = rotary

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, length, width = tokens.shape
        qkv = self.qkv(tokens).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        queries, keys = qkv[0], qkv[1]
        if self.rotary is not None:
            queries, keys = self.rotary(queries), self.rotary(keys)
        attended = F.scaled_dot_product_attention(queries, keys, qkv[2],
                                                  dropout_p=self.dropout if self.training else 0.0)
        return self.out(attended.transpose(1, 2).reshape(batch, length, width))


class EncoderLayer(nn.Module):
    """Pre-LN: x + attention(LN(x)), then x + FFN(LN(x)) (COGITAO's `TransformerLayer`); `rotary` as
    `SelfAttention`'s."""

    def __init__(self, width: int, heads: int, ffn_width: int, rotary: CellRotary | None = None) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = SelfAttention(width, heads, ATTENTION_DROPOUT, rotary)
        self.ffn_norm = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, ffn_width), nn.GELU(), nn.Dropout(FFN_DROPOUT),
                                 nn.Linear(ffn_width, width), nn.Dropout(FFN_DROPOUT))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = tokens + self.attention(self.attention_norm(tokens))
        return tokens + self.ffn(self.ffn_norm(tokens))


class VanillaTransformerEncoder(nn.Module):
    """(B, C, ...) input -> (B, G * G, WIDTH) cell vectors: `stem` (a `cell_stem` of WIDTH channels) to cell
    tokens, learned positions, the task code's tokens appended when `task_vocab_size` is given, the encoder
    layers, a final LayerNorm, the cell tokens."""

    def __init__(self, stem: nn.Conv2d, grid_size: int, task_vocab_size: int | None) -> None:
        super().__init__()
        self.stem = stem
        self.positions = nn.Parameter(torch.randn(grid_size * grid_size, WIDTH))
        self.layers = nn.ModuleList(EncoderLayer(WIDTH, HEADS, FFN_WIDTH) for _ in range(DEPTH))
        self.norm = nn.LayerNorm(WIDTH)
        init_linears(self, partial(nn.init.trunc_normal_, std=0.02))
        self.task_tokens = None if task_vocab_size is None else nn.Embedding(task_vocab_size, WIDTH)

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        tokens = self.stem(inputs).flatten(2).transpose(1, 2)
        tokens = tokens + self.positions
        cells = tokens.shape[1]
        tokens = append_task_tokens(tokens, self.task_tokens, task_code)
        for layer in self.layers:
            tokens = layer(tokens)
        return self.norm(tokens)[:, :cells]


__all__ = [
    "ATTENTION_DROPOUT",
    "DEPTH",
    "FFN_DROPOUT",
    "FFN_WIDTH",
    "HEADS",
    "WIDTH",
    "EncoderLayer",
    "SelfAttention",
    "VanillaTransformerEncoder",
    "append_task_tokens",
    "init_linears",
]
