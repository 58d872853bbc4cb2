"""gCOG's cross-attention Transformer, CrossAttn (IBM/gcog `gcog/models/transformer.py:681-794`,
`SimpleCrossAttn`; paper Fig. 2d and A.3.1): the DSTfmr's two `StreamBlock`s (`:711-730`); attention with the rule
stream's tokens as queries and the stimulus stream's as keys and values (WIDTH, HEADS heads, `:733-736,786`); a
LayerNorm of its output plus the rule stream's output (`:788`); the MLP WIDTH -> HIDDEN -> HIDDEN (ReLU after
each, `:739-744`) and a LayerNorm (`:745,791`). The release reads the rule's last token, its EOS (`:793`): the
readout. The rule tokens are the queries, so no vector belongs to a stimulus cell: the per-cell head reads each
cell's stimulus-stream vector beside the readout.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.gcog.encoded import Encoded
from vision_bench.models.gcog.stream import HEADS, RULE_POSITIONS, WIDTH, StreamBlock, relu_mlp

HIDDEN = 512
"""`num_hidden` at the paper's widths (A.3.1: a 2-layer MLP of 512 units)."""


def beside(cells: torch.Tensor, readout: torch.Tensor) -> torch.Tensor:
    """(B, N, W) cell vectors and (B, H) readout -> (B, N, W + H): the readout after each cell's vector."""
    return torch.cat([cells, readout.unsqueeze(1).expand(-1, cells.shape[1], -1)], dim=2)


class CrossAttentionEncoder(nn.Module):
    """(rule tokens (B, L, R), stimulus tokens (B, N + 1, S)) -> readout (B, HIDDEN) and the N cells' stimulus
    vectors with it, (B, N, WIDTH + HIDDEN)."""

    def __init__(self, rule_features: int, stimulus_features: int, stimulus_tokens: int) -> None:
        super().__init__()
        self.rule_block = StreamBlock(rule_features, RULE_POSITIONS)
        self.stimulus_block = StreamBlock(stimulus_features, stimulus_tokens)
        self.cross_attention = nn.MultiheadAttention(WIDTH, HEADS, dropout=0.0, batch_first=True)
        self.cross_norm = nn.LayerNorm(WIDTH)
        self.mlp = relu_mlp(WIDTH, HIDDEN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, rules: torch.Tensor, stimulus: torch.Tensor) -> Encoded:
        rule = self.rule_block(rules)
        cells = self.stimulus_block(stimulus)
        attended, _ = self.cross_attention(rule, cells, cells, need_weights=False)
        readout = self.norm(self.mlp(self.cross_norm(attended) + rule))[:, -1]
        return Encoded(readout, beside(cells[:, :-1], readout))


__all__ = ["HIDDEN", "CrossAttentionEncoder", "beside"]
