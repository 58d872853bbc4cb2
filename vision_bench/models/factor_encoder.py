"""SVIB's ground-truth factor encoder (its Oracle's representer, representers/gt/model.py `GTEncoder`).

Each object's true factors become one token each, and a small transformer, the *coupler*, binds
the tokens of one object:

- a discrete factor (colour, shape, size) is a row of one embedding table with `vocabulary` rows
  per factor slot: value v of slot m is row v + vocabulary * m (SVIB's `DiscreteEncoder`, a
  4096 x 192 table for 32 slots of 128 values, initialised N(0, 1) as `nn.Embedding` is);
- a float factor (x, y in [0, 1]) is interleaved sines and cosines of v * 2 pi * 10000 ** (2k / width):
  SVIB's `FloatEncoder` uses a positive exponent, so its frequencies run from 2 pi up to about
  2 pi * 9085 (a fixed table, not trained);
- the object's tokens, discrete ones first, get the fixed 1D sin-cos position of their slot, and the
  coupler (`Transformer` without cross-attention: SVIB's `TransformerEncoder`, 4 blocks of 4 heads,
  dropout 0.1, first-block LayerNorm quirk, output gain (2 * 4) ** -0.5) reads each object as its
  own sequence: objects do not attend to each other here, only in the decoder's cross-attention.

Settings: SVIB's configs/gt.py. The output is every object's tokens in order, (B, N * tokens, width).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from vision_bench.models.patch_transformer import Transformer, sincos_1d


@dataclass(frozen=True)
class FactorEncoderSettings:
    """Values per discrete factor slot, slots, token width, longest token sequence (positions), coupler
    blocks, heads and dropout."""

    vocabulary: int = 128
    slots: int = 32
    width: int = 192
    max_tokens: int = 64
    depth: int = 4
    heads: int = 4
    dropout: float = 0.1


SVIB_GT = FactorEncoderSettings()


class FactorEncoder(nn.Module):
    """(B, N, Md) long discrete and (B, N, Mf) float factors -> (B, N * (Md + Mf), width) tokens."""

    coefficients: torch.Tensor
    positions: torch.Tensor

    def __init__(self, settings: FactorEncoderSettings = SVIB_GT) -> None:
        super().__init__()
        self.settings = settings
        self.discrete = nn.Embedding(settings.vocabulary * settings.slots, settings.width)
        # computed as SVIB computes it, in float32: at frequencies near 2 pi * 9085 the sines are as
        # sensitive to the last bit of a coefficient as to the factor's value
        exponents = torch.arange(0, settings.width, 2, dtype=torch.float32) * (math.log(10000.0) / settings.width)
        self.register_buffer("coefficients", torch.exp(exponents) * 2 * math.pi, persistent=False)
        self.register_buffer("positions", sincos_1d(settings.max_tokens, settings.width), persistent=False)
        self.coupler = Transformer(settings.depth, settings.width, settings.heads, settings.dropout, cross=False)
        self.out_dim = settings.width

    def forward(self, discrete: torch.Tensor, floats: torch.Tensor) -> torch.Tensor:
        batch, objects, slots = discrete.shape
        offsets = torch.arange(slots, device=discrete.device) * self.settings.vocabulary
        angles = floats[..., None] * self.coefficients
        float_tokens = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)  # sin, cos, sin, ...
        tokens = torch.cat([self.discrete(discrete + offsets), float_tokens], dim=-2)
        tokens = tokens.flatten(0, 1)  # (B * N, tokens, width): each object is its own sequence
        tokens = tokens + self.positions[: tokens.shape[1]].to(tokens.dtype)
        return self.coupler(tokens).reshape(batch, -1, self.out_dim)


__all__ = ["SVIB_GT", "FactorEncoder", "FactorEncoderSettings"]
