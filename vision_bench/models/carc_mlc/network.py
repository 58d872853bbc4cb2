"""C-ARC's MLC network, module for module as its released code defines it (mainlp/C-ARC, `vmlc/model/modules.py`
`SeqToSeqTransformer`, `vmlc/model/positional_encodings.py` `LearnedPositionalEncodingCombined`).

A PyTorch `nn.Transformer` (post-LN, batch first, its own initialisation) of width 128, 8 heads, 3 encoder and
3 decoder layers, feed-forward 768 (`train_mlc.py` `--ff_mult 6`), GELU, dropout 0.0 (`--dropout`); one embedding
table for the encoder's tokens and one for the decoder's (`nn.Embedding(10005, 128)`, N(0, 1)); a linear map to the
10,005 tokens (`modules.py:88-112`). Both sequences get the same positions (`positional_encodings.py:125-280`): a
learned 1D table (N(0, 1), one row per token of the longest episode, `study_examples` * 52 + 26) and, on every grid
token, a learned row vector plus a learned column vector of its patch (N(0, 1), 5 each); the decoder's SOS and the
separators get no 2D vector. The attribute names are the released ones, so a released state dict loads as it is.
Parameters at the paper's sizes: 5,720,213 with 12 study examples (the Systematicity setup, the paper's "5.7M"),
5,660,309 with 3 (3-Shot).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.models.carc_mlc.tokens import (
    GRID_TOKENS,
    PATCHES,
    SOS,
    VOCAB_SIZE,
)


@dataclass(frozen=True)
class Sizes:
    """The network's sizes; the defaults are the paper's (Table 3, `train_mlc.py` defaults)."""

    width: int = 128
    heads: int = 8
    encoder_layers: int = 3
    decoder_layers: int = 3
    feedforward: int = 768
    dropout: float = 0.0
    study_examples: int = 12


class LearnedPositions(nn.Module):
    """The learned 1D table (`positional_encodings.py:41-64`): `pos_embedding` (1, length, width), N(0, 1)."""

    def __init__(self, length: int, width: int) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.randn(1, length, width))


def encoder_patches(length: int, side: int = PATCHES) -> torch.Tensor:
    """(length,) long: the patch (0 .. side^2 - 1, row-major) of each encoder position, -1 on the separators, for
    grids of `side` x `side` tokens. With the released 5 x 5 patches every study example is 52 tokens (input grid,
    IO_SEP, output grid, SUP_SEP) and the query's grid starts a block of the same period, so the released grid
    boundaries (`positional_encodings.py:179-194`) are the positions p with p mod 52 in 0..24 or 26..50."""
    tokens = side * side
    offset = torch.arange(length) % (2 * tokens + 2)
    patch = torch.where(offset < tokens, offset, offset - (tokens + 1))
    return torch.where((patch >= 0) & (patch < tokens), patch, -1)


def decoder_patches() -> torch.Tensor:
    """(26,) long: SOS gets no 2D vector, then the output's 25 patches (`positional_encodings.py:235-264`)."""
    return torch.arange(-1, GRID_TOKENS)


class EpisodePositions(nn.Module):
    """`LearnedPositionalEncodingCombined`: x + the 1D table's first rows + the patches' row and column vectors.
    `side` is the grid's side in tokens: 5 (the released 2x2 patches); the image input's encoder has 10 (cells)."""

    encoder_patch: torch.Tensor
    decoder_patch: torch.Tensor

    def __init__(self, width: int, study_examples: int, dropout: float, side: int = PATCHES) -> None:
        super().__init__()
        self.side = side
        grid = side * side
        self.length = study_examples * (2 * grid + 2) + grid + 1
        self.positional_1d = LearnedPositions(self.length, width)
        self.row_embed = nn.Parameter(torch.randn(side, width))
        self.col_embed = nn.Parameter(torch.randn(side, width))
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("encoder_patch", encoder_patches(self.length, side), persistent=False)
        self.register_buffer("decoder_patch", decoder_patches(), persistent=False)

    def forward(self, tokens: torch.Tensor, target: bool = False) -> torch.Tensor:
        """(B, L, width) embedded tokens of the encoder (`target` False) or the decoder -> with their positions."""
        length = tokens.shape[1]
        patches = (self.decoder_patch if target else self.encoder_patch)[:length]
        if len(patches) < length:
            grid = self.side * self.side
            study = (length - grid - 1) // (2 * grid + 2)
            raise ConfigError(f"an episode of {study} study examples is longer than the {self.length} positions of "
                              f"this carc:mlc; create it with study_examples={study}")
        side = self.side
        grid_vectors = self.row_embed[patches.clamp(min=0) // side] + self.col_embed[patches.clamp(min=0) % side]
        grid_vectors = torch.where((patches >= 0)[:, None], grid_vectors, 0.0)
        return self.dropout(tokens + self.positional_1d.pos_embedding[:, :length] + grid_vectors)


class EpisodeTransformer(nn.Module):
    """`SeqToSeqTransformer`: encoder over the episode's tokens, causal decoder over SOS + the output's tokens."""

    def __init__(self, sizes: Sizes = Sizes(), token_input: bool = True) -> None:
        """`token_input` False (image input) leaves out the encoder's token table, and the positions then cover the
        decoder's 26 tokens only: the encoder's input is the image stem's (`image_input.CellImageEncoder`)."""
        super().__init__()
        self.sizes = sizes
        self.transformer = nn.Transformer(
            d_model=sizes.width, nhead=sizes.heads, num_encoder_layers=sizes.encoder_layers,
            num_decoder_layers=sizes.decoder_layers, dim_feedforward=sizes.feedforward, dropout=sizes.dropout,
            batch_first=True, activation="gelu")
        self.positional_encoding = EpisodePositions(sizes.width, sizes.study_examples if token_input else 0,
                                                    sizes.dropout)
        self.input_embedding = nn.Embedding(VOCAB_SIZE, sizes.width) if token_input else None
        self.output_embedding = nn.Embedding(VOCAB_SIZE, sizes.width)
        self.out = nn.Linear(sizes.width, VOCAB_SIZE)

    def encode(self, episode: torch.Tensor) -> torch.Tensor:
        """(B, L) episode tokens -> (B, L, width) memory (`modules.py:114-129`, `:177-190`)."""
        if self.input_embedding is None:
            raise ConfigError("this carc:mlc reads images (input=image), not episode tokens")
        return self.transformer.encoder(self.positional_encoding(self.input_embedding(episode)))

    def decode(self, decoder_tokens: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """(B, T) decoder tokens and the memory -> (B, T, 10005) logits of the next token (`modules.py:131-153`,
        `:192-214`: each position sees itself and the positions before it)."""
        length = decoder_tokens.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=decoder_tokens.device).triu(diagonal=1)
        embedded = self.positional_encoding(self.output_embedding(decoder_tokens), target=True)
        return self.out(self.transformer.decoder(embedded, memory, tgt_mask=causal))

    def forward(self, episode: torch.Tensor, decoder_tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, 10005) (`modules.py:155-175`)."""
        return self.decode(decoder_tokens, self.encode(episode))

    @torch.no_grad()
    def greedy(self, episode: torch.Tensor, steps: int = GRID_TOKENS) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy decoding from SOS: ((B, steps) tokens, (B, steps, 10005) the logits each was the argmax of)."""
        return self.greedy_from(self.encode(episode), steps)

    @torch.no_grad()
    def greedy_from(self, memory: torch.Tensor, steps: int = GRID_TOKENS) -> tuple[torch.Tensor, torch.Tensor]:
        """`greedy` from the encoder's (B, L, width) memory."""
        tokens = torch.full((memory.shape[0], 1), SOS, dtype=torch.long, device=memory.device)
        logits = []
        for _ in range(steps):
            step = self.decode(tokens, memory)[:, -1]
            logits.append(step)
            tokens = torch.cat([tokens, step.argmax(dim=-1, keepdim=True)], dim=1)
        return tokens[:, 1:], torch.stack(logits, dim=1)


__all__ = ["EpisodePositions", "EpisodeTransformer", "LearnedPositions", "Sizes", "decoder_patches",
           "encoder_patches"]
