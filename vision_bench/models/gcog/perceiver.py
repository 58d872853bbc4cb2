"""gCOG's Perceiver-like model (IBM/gcog `gcog/models/transformer.py:537-679`, `Perceiver`; paper Fig. 2e and
A.3.1): the DSTfmr's two `StreamBlock`s (`:568-587`) and LATENTS latent tokens of LATENT_WIDTH units, zero at the
start of every sample (`:645-648`). The latents attend to the rule stream (queries from the latents, keys and
values from the stream, `:590-593,658`), the result is layer-normed and passed through a residual Linear + ReLU
(`:659-660`), added to the latents and layer-normed (`:662`); the latents attend to themselves, added and
layer-normed (`:664-665`); the same with the stimulus stream (`:668-675`, its own cross-attention, LayerNorm and
Linear + ReLU); a last Linear + ReLU (`:676`). One latent LayerNorm (`:610`) and one latent self-attention
(`:611`) serve every step, as released. The release reads the last latent (`:678`): the readout; the per-cell
head reads each cell's stimulus-stream vector beside it.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.gcog.cross_attention import beside
from vision_bench.models.gcog.encoded import Encoded
from vision_bench.models.gcog.stream import HEADS, RULE_POSITIONS, WIDTH, StreamBlock, relu_mlp

LATENT_WIDTH = 256
"""`num_hidden`, the latents' width (`transformer.py:544`; paper A.3.1: 256 latent units)."""
LATENTS = 10
"""The number of latent tokens (`transformer.py:646`, "arbitrary")."""


class ReadIn(nn.Module):
    """Latents attend to a stream's tokens; the output layer-normed, then plus a Linear + ReLU of itself."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(LATENT_WIDTH, HEADS, dropout=0.0, batch_first=True, kdim=WIDTH,
                                               vdim=WIDTH)
        self.mlp = relu_mlp(LATENT_WIDTH, LATENT_WIDTH)
        self.norm = nn.LayerNorm(LATENT_WIDTH)

    def forward(self, latents: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        attended, _ = self.attention(latents, tokens, tokens, need_weights=False)
        attended = self.norm(attended)
        return self.mlp(attended) + attended


class PerceiverEncoder(nn.Module):
    """(rule tokens (B, L, R), stimulus tokens (B, N + 1, S)) -> readout (B, LATENT_WIDTH) and the N cells' stimulus
    vectors with it, (B, N, WIDTH + LATENT_WIDTH)."""

    def __init__(self, rule_features: int, stimulus_features: int, stimulus_tokens: int) -> None:
        super().__init__()
        self.rule_block = StreamBlock(rule_features, RULE_POSITIONS)
        self.stimulus_block = StreamBlock(stimulus_features, stimulus_tokens)
        self.rule_read = ReadIn()
        self.stimulus_read = ReadIn()
        self.latent_norm = nn.LayerNorm(LATENT_WIDTH)
        self.latent_attention = nn.MultiheadAttention(LATENT_WIDTH, HEADS, dropout=0.0, batch_first=True)
        self.latent_mlp = relu_mlp(LATENT_WIDTH, LATENT_WIDTH)

    def _attend_latents(self, latents: torch.Tensor) -> torch.Tensor:
        attended, _ = self.latent_attention(latents, latents, latents, need_weights=False)
        return self.latent_norm(attended + latents)

    def forward(self, rules: torch.Tensor, stimulus: torch.Tensor) -> Encoded:
        rule = self.rule_block(rules)
        cells = self.stimulus_block(stimulus)
        latents = rule.new_zeros(rule.shape[0], LATENTS, LATENT_WIDTH)
        latents = self._attend_latents(self.latent_norm(self.rule_read(latents, rule) + latents))
        latents = self._attend_latents(self.latent_norm(self.stimulus_read(latents, cells) + latents))
        readout = self.latent_mlp(latents)[:, -1]
        return Encoded(readout, beside(cells[:, :-1], readout))


__all__ = ["LATENTS", "LATENT_WIDTH", "PerceiverEncoder", "ReadIn"]
