"""gCOG's Transformer block, the encoder of every stream (IBM/gcog `gcog/models/transformer.py:106-180`,
`TransformerBlock` with absolute positions, the main figures' setting): a linear embedding of the ID-valued token
features to WIDTH, the fixed sinusoidal positions (dropout 0.1), one post-LN layer: e + attention(e) -> LayerNorm,
then x + MLP(x) -> LayerNorm, the MLP Linear -> ReLU -> Linear -> ReLU of WIDTH units (`transformer.py:145-150`;
the paper's A.3.1 says 512), attention `nn.MultiheadAttention` of HEADS heads without dropout; PyTorch's
initialisation throughout, as the release's.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.gcog.tokens import SinusoidalPositions

WIDTH = 256
"""The embedding width, `embedding_dim` (`transformer.py:189,323,425,544`; paper A.3.1: 256)."""
HEADS = 1
"""`nhead` (`transformer.py:187`; paper A.3.1: one head)."""
RULE_POSITIONS = 100
"""The rule stream's position table, `max_tree_depth` (`transformer.py:187,226`)."""


def relu_mlp(*widths: int) -> nn.Sequential:
    """Linear -> ReLU for each consecutive pair of `widths`, the release's MLPs (a ReLU after every layer)."""
    layers: list[nn.Module] = []
    for width_in, width_out in zip(widths, widths[1:]):
        layers += [nn.Linear(width_in, width_out), nn.ReLU()]
    return nn.Sequential(*layers)


class StreamBlock(nn.Module):
    """(B, T, features) tokens -> (B, T, WIDTH): embedding, positions (a table of `length`), post-LN
    self-attention and MLP."""

    def __init__(self, features: int, length: int) -> None:
        super().__init__()
        self.embed = nn.Linear(features, WIDTH)
        self.positions = SinusoidalPositions(WIDTH, length)
        self.attention = nn.MultiheadAttention(WIDTH, HEADS, dropout=0.0, batch_first=True)
        self.attention_norm = nn.LayerNorm(WIDTH)
        self.mlp = relu_mlp(WIDTH, WIDTH, WIDTH)
        self.mlp_norm = nn.LayerNorm(WIDTH)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embedded = self.positions(self.embed(tokens))
        attended, _ = self.attention(embedded, embedded, embedded, need_weights=False)
        hidden = self.attention_norm(attended + embedded)
        return self.mlp_norm(self.mlp(hidden) + hidden)


__all__ = ["HEADS", "RULE_POSITIONS", "WIDTH", "StreamBlock", "relu_mlp"]
