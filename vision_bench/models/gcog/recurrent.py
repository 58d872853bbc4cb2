"""gCOG's RNN and GRU (IBM/gcog `gcog/models/rnn.py:5-90` and `:92-175`): at every rule token the whole stimulus,
flattened, is read again beside the token (`rnn.py:78-83`), so the network need not remember it; one layer of
HIDDEN units (ReLU for the RNN, `rnn.py:29-34`), zero initial state, a LayerNorm on the last hidden state
(`rnn.py:86`), which is the readout; PyTorch's initialisation."""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.gcog.encoded import Encoded

HIDDEN = 512
"""`num_hidden` (`rnn.py:13,100`; paper Fig. 2a: 512 units)."""


class RecurrentEncoder(nn.Module):
    """(rule tokens (B, L, R), stimulus tokens (B, T, S)) -> the layer-normed last hidden state; `kind` is `rnn`
    or `gru`."""

    def __init__(self, kind: str, rule_features: int, stimulus_inputs: int) -> None:
        super().__init__()
        width = rule_features + stimulus_inputs
        self.recurrent: nn.RNN | nn.GRU = (
            nn.RNN(width, HIDDEN, nonlinearity="relu", batch_first=True) if kind == "rnn"
            else nn.GRU(width, HIDDEN, batch_first=True))
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, rules: torch.Tensor, stimulus: torch.Tensor) -> Encoded:
        flat = stimulus.flatten(1).unsqueeze(1).expand(-1, rules.shape[1], -1)
        _, last = self.recurrent(torch.cat([rules, flat], dim=2))
        return Encoded(self.norm(last[-1]), None)


__all__ = ["HIDDEN", "RecurrentEncoder"]
