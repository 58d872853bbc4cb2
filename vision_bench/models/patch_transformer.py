"""SVIB's patch-transformer decoder, shared by its I2I-CNN, I2I-ViT and Oracle, and its transformer blocks.

The decoder reads a set of representation vectors (the *memory*: an encoder's output, or the
Oracle's grid tokens) projected to its width. It asks one query per output patch; a query is the
fixed 2D sin-cos embedding of the patch's (row, column), nothing else. Non-causal decoder blocks
(self-attention over the patches, cross-attention to the memory, feed-forward) and a final
LayerNorm follow, and a linear head writes each patch's pixels. Settings: SVIB's
configs/patch_transformer.py. Blocks as in SVIB's predictors/patch_transformer/transformer.py:
pre-norm, attention projections without bias, ReLU feed-forward 4x wide, dropout on the attention
weights and on each residual branch, the first block normalising its input in place, and output
projections initialised with gain (3 * depth) ** -0.5 in a decoder, (2 * depth) ** -0.5 in an encoder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.models.options import positive_int


@dataclass(frozen=True)
class PatchDecoderSettings:
    """Patch size (pixels per side), blocks, width, attention heads and dropout of the decoder."""

    patch_size: int = 4
    depth: int = 8
    width: int = 192
    heads: int = 4
    dropout: float = 0.1


SVIB_DECODER = PatchDecoderSettings()


def linear(
    in_features: int, out_features: int, *, bias: bool = True, gain: float = 1.0, relu: bool = False
) -> nn.Linear:
    """A linear layer initialised as SVIB's: Xavier-uniform with `gain`, Kaiming-uniform before a ReLU, zero bias."""
    layer = nn.Linear(in_features, out_features, bias=bias)
    if relu:
        nn.init.kaiming_uniform_(layer.weight, nonlinearity="relu")
    else:
        nn.init.xavier_uniform_(layer.weight, gain=gain)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


def sincos_1d(length: int, dim: int) -> torch.Tensor:
    """(length, dim) fixed positions 0..length-1: interleaved sines and cosines (sin, cos, sin, ...) of the
    position times the geometric frequencies 10000 ** (-2k / dim), the transformer's table."""
    frequencies = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    angles = torch.arange(length, dtype=torch.float32)[:, None] * frequencies
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)


def sincos_2d(height: int, width: int, dim: int) -> torch.Tensor:
    """(height * width, dim) fixed positions, row-major: the first half of each vector encodes the row,
    the second half the column, each as `sincos_1d` of half the width."""
    if dim % 4:
        raise ConfigError(f"a 2D sin-cos position embedding needs a width divisible by 4, got {dim}")
    half = dim // 2
    rows = sincos_1d(height, half)[:, None, :].expand(height, width, half)
    columns = sincos_1d(width, half)[None, :, :].expand(height, width, half)
    return torch.cat([rows, columns], dim=-1).reshape(height * width, dim)


def unpatchify(patches: torch.Tensor, grid: int, patch: int, channels: int) -> torch.Tensor:
    """(B, grid * grid, patch * patch * channels) row-major patches -> (B, channels, grid * patch, grid * patch)."""
    image = patches.reshape(-1, grid, grid, patch, patch, channels).permute(0, 5, 1, 3, 2, 4)
    return image.reshape(-1, channels, grid * patch, grid * patch)


class Attention(nn.Module):
    """Multi-head attention with bias-free projections; dropout on the weights and on the output."""

    def __init__(self, dim: int, heads: int, dropout: float, gain: float) -> None:
        super().__init__()
        if dim % heads:
            raise ConfigError(f"width {dim} is not divisible by {heads} attention heads; pick a width that is")
        self.heads = heads
        self.dropout = dropout
        self.query = linear(dim, dim, bias=False)
        self.key = linear(dim, dim, bias=False)
        self.value = linear(dim, dim, bias=False)
        self.out = linear(dim, dim, bias=False, gain=gain)
        self.out_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, context: torch.Tensor, context_mask: torch.Tensor | None = None) -> torch.Tensor:
        """`x` attends to `context`; with `context_mask` (B, M), only to the tokens where it is true."""
        batch, length, dim = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(batch, t.shape[1], self.heads, -1).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(context)), split(self.value(context))
        mask = None if context_mask is None else context_mask[:, None, None, :]
        mixed = F.scaled_dot_product_attention(q, k, v, mask, dropout_p=self.dropout if self.training else 0.0)
        return self.out_dropout(self.out(mixed.transpose(1, 2).reshape(batch, length, dim)))


class TransformerBlock(nn.Module):
    """Pre-norm self-attention, cross-attention to a memory (decoder blocks), ReLU feed-forward."""

    def __init__(self, dim: int, heads: int, dropout: float, gain: float, *, cross: bool, first: bool) -> None:
        super().__init__()
        self.first = first
        self.self_norm = nn.LayerNorm(dim)
        self.self_attention = Attention(dim, heads, dropout, gain)
        self.cross_norm = nn.LayerNorm(dim) if cross else None
        self.cross_attention = Attention(dim, heads, dropout, gain) if cross else None
        self.feed_forward_norm = nn.LayerNorm(dim)
        self.feed_forward = nn.Sequential(
            linear(dim, 4 * dim, relu=True), nn.ReLU(), linear(4 * dim, dim, gain=gain), nn.Dropout(dropout)
        )

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor | None = None, memory_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        if self.first:  # SVIB: the residual stream starts from the normalised input
            x = self.self_norm(x)
            x = x + self.self_attention(x, x)
        else:
            normed = self.self_norm(x)
            x = x + self.self_attention(normed, normed)
        if self.cross_norm is not None and self.cross_attention is not None:
            x = x + self.cross_attention(self.cross_norm(x), memory, memory_mask)
        return x + self.feed_forward(self.feed_forward_norm(x))


class Transformer(nn.Module):
    """`depth` blocks and a final LayerNorm; with `cross`, every block also attends to a memory."""

    def __init__(self, depth: int, dim: int, heads: int, dropout: float, *, cross: bool) -> None:
        super().__init__()
        gain = ((3 if cross else 2) * positive_int(depth, "depth")) ** -0.5
        self.blocks = nn.ModuleList(
            TransformerBlock(dim, heads, dropout, gain, cross=cross, first=index == 0) for index in range(depth)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor | None = None, memory_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, memory, memory_mask)
        return self.norm(x)


class PatchTransformerDecoder(nn.Module):
    """(B, M, memory_dim) memory -> (B, out_channels, S, S) raw output: one sin-cos query per patch.

    `memory_mask` (B, M), true for the tokens to read, lets a batch hold memories of different sizes
    (svib:oracle's grids); SVIB's models read every token.
    """

    queries: torch.Tensor

    def __init__(
        self, memory_dim: int, image_size: int, out_channels: int, settings: PatchDecoderSettings = SVIB_DECODER
    ) -> None:
        super().__init__()
        patch = settings.patch_size
        if image_size % patch:
            raise ConfigError(
                f"image_size={image_size} is not a multiple of the patch decoder's {patch}-pixel patches; "
                f"use a multiple of {patch}"
            )
        self.settings = settings
        self.grid = image_size // patch
        self.out_channels = out_channels
        self.project = linear(memory_dim, settings.width, bias=False)
        self.register_buffer("queries", sincos_2d(self.grid, self.grid, settings.width), persistent=False)
        self.transformer = Transformer(settings.depth, settings.width, settings.heads, settings.dropout, cross=True)
        self.head = linear(settings.width, patch * patch * out_channels)

    def forward(self, memory: torch.Tensor, memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        memory = self.project(memory)
        queries = self.queries.to(memory.dtype).expand(memory.shape[0], -1, -1)
        patches = self.head(self.transformer(queries, memory, memory_mask))
        return unpatchify(patches, self.grid, self.settings.patch_size, self.out_channels)
