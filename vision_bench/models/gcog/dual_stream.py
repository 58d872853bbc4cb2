"""gCOG's dual-stream Transformer, DSTfmr (IBM/gcog `gcog/models/transformer.py:182-314`, `Transformer`; paper
Fig. 2c): a `StreamBlock` for the rule tokens and one for the stimulus tokens (`:215-234`), each followed by a
Linear WIDTH -> HIDDEN and ReLU (`:236-246`); the rule stream's last token and the stimulus stream's last token
(its EOS) are summed and layer-normed (`:303-306`), then the shared MLP HIDDEN -> 2 HIDDEN -> 2 HIDDEN -> HIDDEN
(ReLU after each, `:252-259`) and a LayerNorm (`:260,310`): the readout. The per-cell head reads the same
computation with each cell's stimulus token in place of the EOS.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.gcog.encoded import Encoded
from vision_bench.models.gcog.stream import RULE_POSITIONS, WIDTH, StreamBlock, relu_mlp

HIDDEN = 512
"""`num_hidden` at the paper's widths (A.3.1: the shared MLP is 512, 1024, 512)."""


class DualStreamEncoder(nn.Module):
    """(rule tokens (B, L, R), stimulus tokens (B, N + 1, S)) -> readout (B, HIDDEN) and the N cells' vectors."""

    def __init__(self, rule_features: int, stimulus_features: int, stimulus_tokens: int) -> None:
        super().__init__()
        self.rule_block = StreamBlock(rule_features, RULE_POSITIONS)
        self.stimulus_block = StreamBlock(stimulus_features, stimulus_tokens)
        self.rule_mlp = relu_mlp(WIDTH, HIDDEN)
        self.stimulus_mlp = relu_mlp(WIDTH, HIDDEN)
        self.merge_norm = nn.LayerNorm(HIDDEN)
        self.mlp = relu_mlp(HIDDEN, 2 * HIDDEN, 2 * HIDDEN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, rules: torch.Tensor, stimulus: torch.Tensor) -> Encoded:
        rule = self.rule_mlp(self.rule_block(rules))[:, -1:]
        per_token = self.stimulus_mlp(self.stimulus_block(stimulus))
        merged = self.norm(self.mlp(self.merge_norm(rule + per_token)))
        return Encoded(merged[:, -1], merged[:, :-1])


__all__ = ["HIDDEN", "DualStreamEncoder"]
