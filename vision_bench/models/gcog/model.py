"""`gcog:rnn`, `gcog:gru`, `gcog:sst`, `gcog:dst`, `gcog:crossattn`, `gcog:perceiver`: gCOG's six encoders as its
authors released them (IBM/gcog `gcog/models/rnn.py`, `gcog/models/transformer.py`; paper 004, Fig. 2 and
A.3.1), reading the task as rule tokens and the input grid as stimulus tokens, one per cell.

gCOG's models are 138-way classifiers of an answer; here a gCOG task is grid-to-grid, so the same encoders feed
the project's per-cell head and the model predicts one of the ten colours and padding per canvas cell, as the
cogitao family does (`CogitaoModel`: the canvas, the checks, the cross-entropy over every canvas cell, the
predicted grids and their drawing are its). The Transformer models' head is COGITAO's MLP (`grid_io.cell_head`)
on each cell's vector (`Encoded.cells`); the recurrent models have no vector per cell, so their head is the
release's output layer widened to a class per cell, Linear(HIDDEN, G * G * 11) on the readout.

Rule tokens are the task code's tokens, ID-valued, then EOS (`tokens.rule_tokens`); an unconditioned model reads the
EOS token alone. Option `input`: `grid` reads the canvas's classes, `image` each cell's pixels of the rendered
input (render layout cell:K:top-left), as token features (`tokens.patch_features`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from vision_bench.errors import UnknownNameError
from vision_bench.models.base import MODELS, TrainableModel
from vision_bench.models.cogitao.grid_io import CLASSES, DEFAULT_GRID_SIZE, INPUTS, cell_head
from vision_bench.models.cogitao.model import CogitaoModel, CogitaoOptions
from vision_bench.models.drawing import render_spec_of
from vision_bench.models.gcog import cross_attention, dual_stream, perceiver, recurrent, single_stream
from vision_bench.models.gcog.stream import WIDTH
from vision_bench.models.gcog.tokens import (
    GRID_FEATURES,
    RULE_FEATURES,
    grid_features,
    patch_features,
    rule_tokens,
    with_eos,
)
from vision_bench.models.options import SharedOptions, check_from_scratch, option, positive_int
from vision_bench.registry import unknown_name_message

ENCODERS = {
    "sst": single_stream.SingleStreamEncoder,
    "dst": dual_stream.DualStreamEncoder,
    "crossattn": cross_attention.CrossAttentionEncoder,
    "perceiver": perceiver.PerceiverEncoder,
}
"""The Transformer presets' encoders, (rule features, stimulus features, stimulus tokens) -> module."""
CELL_WIDTHS = {
    "sst": single_stream.HIDDEN,
    "dst": dual_stream.HIDDEN,
    "crossattn": WIDTH + cross_attention.HIDDEN,
    "perceiver": WIDTH + perceiver.LATENT_WIDTH,
}
"""The width of each Transformer preset's per-cell vector, which the head reads."""
PRESETS = ("rnn", "gru", *ENCODERS)


@dataclass(frozen=True)
class GcogOptions(CogitaoOptions):
    """CogitaoOptions's two options, said of gCOG's tokens."""

    input: str = option(
        "grid", "grid: the input grid's cells, one token of its class each; image: the rendered input image, one "
        "token of its pixels per cell (render layout cell:K:top-left)")
    grid_size: int | None = option(
        None, "the side of the square canvas of cells the grids are padded to; None: for grid input the "
        f"experiment's largest grid when training builds the model, else {DEFAULT_GRID_SIZE}; for image input "
        "image_size / K")

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise UnknownNameError(unknown_name_message("gcog input", str(self.input), INPUTS))
        if self.grid_size is not None:
            positive_int(self.grid_size, "grid_size")


@MODELS.register(
    "gcog",
    "gCOG's released encoders (RNN, GRU, single- and dual-stream Transformers, cross-attention, Perceiver-like) "
    "reading the task code as rule tokens and the input as one stimulus token per cell, predicting each cell's "
    "class; input=grid reads the input grid, input=image the rendered image",
)
class GcogModel(CogitaoModel):
    """gCOG's encoder over rule and stimulus tokens with a per-cell head, on the cogitao family's canvas (module
    docstring)."""

    family = "gcog"
    usage = "gcog:<rnn|gru|sst|dst|crossattn|perceiver>"
    example_backbone = "sst"
    test_backbone = "sst"
    options = GcogOptions
    options_hint = "it takes input (grid or image) and grid_size"

    def __init__(self, preset: str, shared: SharedOptions, options: GcogOptions) -> None:
        name = f"gcog:{preset}"
        if preset not in PRESETS:
            raise UnknownNameError(unknown_name_message("gcog preset", preset, PRESETS))
        check_from_scratch(name, shared, like="gCOG's models do", predicts=(
            f"predicts one of {CLASSES} classes per grid cell and trains with cross-entropy against the target grid"))
        TrainableModel.__init__(self, preset, shared)  # the canvas attributes below are CogitaoModel's
        self.head = "cells"
        self.input_kind = options.input
        self.render_spec = render_spec_of(shared.render_spec)
        self.classes = CLASSES
        self.visual_tokens = False
        self.loss_name = "cross_entropy"
        self.cell_size, self.grid_size = self._canvas(options.grid_size)
        self.side = self.grid_size
        self.body = None
        cells = self.grid_size * self.grid_size
        features = GRID_FEATURES if self.input_kind == "grid" else 3 * self.cell_size ** 2 + 1
        if preset in ENCODERS:
            self.encoder = ENCODERS[preset](RULE_FEATURES, features, cells + 1)
            self.classifier = cell_head(CLASSES, CELL_WIDTHS[preset])
        else:
            self.encoder = recurrent.RecurrentEncoder(preset, RULE_FEATURES, (cells + 1) * features)
            self.classifier = nn.Sequential(nn.Linear(recurrent.HIDDEN, cells * CLASSES))

    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """Checked inputs and task code -> (B, 11, G, G) logits."""
        batch = inputs.shape[0]
        cells = grid_features(inputs) if self.input_kind == "grid" else patch_features(inputs, self.cell_size)
        encoded = self.encoder(rule_tokens(task_code, batch, inputs.device), with_eos(cells))
        if encoded.cells is None:
            logits = self.classifier(encoded.readout).view(batch, -1, CLASSES)
        else:
            logits = self.classifier(encoded.cells)
        return logits.transpose(1, 2).reshape(batch, CLASSES, self.side, self.side)


__all__ = ["CELL_WIDTHS", "ENCODERS", "PRESETS", "GcogModel", "GcogOptions"]
