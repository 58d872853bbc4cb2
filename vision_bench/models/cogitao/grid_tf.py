"""COGITAO's Grid-TF encoder as released: the `VisionTransformer` of ktroyan/visualreasoning
(`networks/backbones/vit.py`) at the paper's Grid-TF command (`jobs/beforearc_commands_per_study_model.txt`:
visual tokens, 2D sin-cos APE with OPE mixed by `weighted_sum_vec`, RoPE, 6 register tokens) and its vit.yaml of
the paper's time (width 128, 4 heads, 6 layers, dropout 0.1).

It reads the one-hot visual-token canvas (`visual_tokens`, VT_CLASSES channels) of side S: the `grid_io.cell_stem`
convolution gives one WIDTH-wide token per cell, row-major; REGISTERS learned tokens go first (`vit.py:846-851,
1008-1010`, drawn truncated-normal with std 0.02). The positions (`positions.object_positions`) are computed per
sample from the object ids of the input canvas (`visual_tokens.object_ids`), zero for the registers, and mixed with
the tokens by `positions.WeightedSumMixer` (`vit.py:1016-1019`). With task conditioning the task code's tokens
follow (`vit.py:1032-1034`), from one table drawn N(0, 1) (`beforearc_model.py:890-891`), without positions or
rotation, so the encoder sees which transformations the code holds but not their order. Then the Vanilla-TF's
DEPTH pre-LN layers (`vanilla_tf.EncoderLayer`: dropout 0.1 on the attention probabilities and twice in the GELU
FFN) whose attention turns the cell tokens' queries and keys (`positions.CellRotary`, the first 16 of each head's
32 dims), a final LayerNorm, and the cell tokens: (B, S * S, WIDTH). Every linear layer of the encoder starts
truncated-normal (std 0.02, cut at +-2) with zero bias, LayerNorms at 1 and 0 (`vit.py:946-994`); the stem and the
task table keep PyTorch's initialisation.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from vision_bench.models.cogitao.positions import CellRotary, WeightedSumMixer, object_positions
from vision_bench.models.cogitao.vanilla_tf import (
    DEPTH,
    FFN_WIDTH,
    HEADS,
    WIDTH,
    EncoderLayer,
    append_task_tokens,
    init_linears,
)
from vision_bench.models.cogitao.visual_tokens import object_ids

REGISTERS = 6


class GridTransformerEncoder(nn.Module):
    """(B, VT_CLASSES, S, S) one-hot canvas -> (B, S * S, WIDTH) cell vectors (module docstring); `stem` is a
    `cell_stem` of WIDTH channels over the VT_CLASSES one-hot channels. On images (the project's, `objects=False`):
    `stem` is a `visual_tokens.ImageCanvasStem` and every object id is 0, so the object block of the positions is
    one constant vector and only the 2D grid positions vary."""

    def __init__(self, stem: nn.Module, side: int, task_vocab_size: int | None, objects: bool = True) -> None:
        super().__init__()
        self.side = side
        self.stem = stem
        self.objects = objects
        self.registers = nn.Parameter(torch.zeros(1, REGISTERS, WIDTH))
        self.mixer = WeightedSumMixer(WIDTH)
        rotary = CellRotary(side, WIDTH // HEADS, prefix=REGISTERS)
        self.layers = nn.ModuleList(EncoderLayer(WIDTH, HEADS, FFN_WIDTH, rotary) for _ in range(DEPTH))
        self.norm = nn.LayerNorm(WIDTH)
        init_linears(self, partial(nn.init.trunc_normal_, std=0.02))
        nn.init.trunc_normal_(self.registers, std=0.02)
        self.task_tokens = None if task_vocab_size is None else nn.Embedding(task_vocab_size, WIDTH)

    def forward(self, cells: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        batch = cells.shape[0]
        tokens = self.stem(cells).flatten(2).transpose(1, 2)
        if self.objects:
            ids = object_ids(cells.argmax(dim=1))  # the one-hot's classes
        else:
            ids = torch.zeros(batch, self.side * self.side, dtype=torch.long, device=cells.device)
        positions = object_positions(ids, self.side, WIDTH)
        blank = positions.new_zeros(batch, REGISTERS, WIDTH)
        tokens = torch.cat([self.registers.expand(batch, -1, -1), tokens], dim=1)
        tokens = self.mixer(tokens, torch.cat([blank, positions], dim=1))
        tokens = append_task_tokens(tokens, self.task_tokens, task_code)
        for layer in self.layers:
            tokens = layer(tokens)
        return self.norm(tokens)[:, REGISTERS:REGISTERS + self.side * self.side]


__all__ = ["REGISTERS", "GridTransformerEncoder"]
