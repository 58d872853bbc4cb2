"""What a gCOG encoder gives the model's head: the release's readout and, for the Transformer models, one vector per
stimulus cell."""

from __future__ import annotations

from typing import NamedTuple

import torch


class Encoded(NamedTuple):
    """`readout` (B, H): the vector the release's 138-way `w_out` reads (its classification layer's input);
    `cells` (B, N, W): one vector per stimulus cell for the per-cell head, None for the recurrent models, whose
    head reads `readout` alone."""

    readout: torch.Tensor
    cells: torch.Tensor | None


__all__ = ["Encoded"]
