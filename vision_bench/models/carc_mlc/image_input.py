"""carc:mlc's image input (`input: image`, the project's): the episode read from its rendered canvas, one token per
grid cell, instead of the released 2x2-patch tokens of its grids.

The canvas image must be drawn in whole K-pixel cells from its top-left corner (render layout `cell:K:top-left`, the
cogitao family's image input asks the same). A convolution of kernel = stride = K turns every cell into a
`width`-wide vector, and each grid of the episode (every study example's input and output, the query's input) is
cut from that map at its slot (`tasks.carc.canvas.slot`): one image per grid, 100 cell tokens, row-major. The
sequence has the released layout with cells for patches: per study example its input's 100 tokens, IO_SEP, its
output's 100, SUP_SEP; then the query's 100 and IO_SEP (two learned separator vectors, N(0, 1) as the token table's);
its positions are the released kind over cells (`network.EpisodePositions` with side 10: a learned 1D table, and
learned row and column vectors for the 10 x 10 cells). The decoder is unchanged: it predicts the query's output as
the released 2x2-patch tokens.
"""

from __future__ import annotations

import torch
from torch import nn

from vision_bench.models.carc_mlc.network import EpisodePositions
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.carc.grammar import GRID_SIDE


class CellImageEncoder(nn.Module):
    """(B, 3, S, S) canvas images of K-pixel cells -> the encoder's (B, L, width) input: cell tokens with separators
    and positions."""

    def __init__(self, width: int, cell: int, study_examples: int, dropout: float) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, cell, stride=cell)
        self.separators = nn.Parameter(torch.randn(2, width))
        """IO_SEP, SUP_SEP."""
        self.positions = EpisodePositions(width, study_examples, dropout, side=GRID_SIDE)

    def forward(self, images: torch.Tensor, setup: str, pairs: list[int], query: int | None = None) -> torch.Tensor:
        """The sequence of the study `pairs` (indices of the setup's study pairs, in order) and the query: the
        episode's (`query` None) or, for the copy task, study pair `query`'s input."""
        cells = self.stem(images)  # (B, width, S / K, S / K): one vector per canvas cell

        def grid(corner: tuple[int, int]) -> torch.Tensor:
            top, left = corner
            return cells[:, :, top:top + GRID_SIDE, left:left + GRID_SIDE].flatten(2).transpose(1, 2)

        batch = images.shape[0]
        io_sep, sup_sep = (vector.expand(batch, 1, -1) for vector in self.separators)
        parts = []
        for pair in pairs:
            parts += [grid(canvas.slot(setup, pair, 0)), io_sep, grid(canvas.slot(setup, pair, 1)), sup_sep]
        corner = canvas.query_slots(setup)[0] if query is None else canvas.slot(setup, query, 0)
        parts += [grid(corner), io_sep]
        return self.positions(torch.cat(parts, dim=1))


__all__ = ["CellImageEncoder"]
