"""gCOG's single-stream Transformer, SSTfmr (IBM/gcog `gcog/models/transformer.py:316-416`,
`MultimodalTransformer`; paper Fig. 2b): rule and stimulus tokens in one sequence, each token's features
zero-padded into a shared vector (rule features first, `transformer.py:397-405`), one `StreamBlock` over the
sequence (positions for RULE_POSITIONS + the stimulus tokens, `:346-356`), then per token the MLP WIDTH -> HIDDEN
-> 2 HIDDEN -> HIDDEN (ReLU after each, `:360-366`) and a LayerNorm (`:367`). The release reads the last token, the
stimulus's EOS (`:410`): that is the readout; the per-cell head reads the same vector at every cell's token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.models.gcog.encoded import Encoded
from vision_bench.models.gcog.stream import RULE_POSITIONS, WIDTH, StreamBlock, relu_mlp

HIDDEN = 512
"""`num_hidden` at the paper's widths (A.3.1: the MLP after the block is 512, 1024, 512)."""


class SingleStreamEncoder(nn.Module):
    """(rule tokens (B, L, R), stimulus tokens (B, N + 1, S)) -> readout (B, HIDDEN) and the N cells' vectors."""

    def __init__(self, rule_features: int, stimulus_features: int, stimulus_tokens: int) -> None:
        super().__init__()
        self.block = StreamBlock(rule_features + stimulus_features, RULE_POSITIONS + stimulus_tokens)
        self.mlp = relu_mlp(WIDTH, HIDDEN, 2 * HIDDEN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, rules: torch.Tensor, stimulus: torch.Tensor) -> Encoded:
        rule_width, stimulus_width = rules.shape[2], stimulus.shape[2]
        tokens = torch.cat([F.pad(rules, (0, stimulus_width)), F.pad(stimulus, (rule_width, 0))], dim=1)
        per_token = self.norm(self.mlp(self.block(tokens)))
        return Encoded(per_token[:, -1], per_token[:, rules.shape[1]:-1])


__all__ = ["HIDDEN", "SingleStreamEncoder"]
