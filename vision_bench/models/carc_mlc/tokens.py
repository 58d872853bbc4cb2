"""C-ARC's MLC vocabulary and the serialisation of an episode into tokens, as its released code does it.

The released `PatchTokenizer` (mainlp/C-ARC, `vmlc/data_prep/patch_tokenizer.py:10-63`) cuts a 10x10 grid into 2x2
patches, left to right and top to bottom (`:65-85`), and gives each patch one token: the five special tokens first
(`constants.py`: PAD, SOS, EOS, IO_SEP, SUP_SEP = 0..4), then every patch in `itertools.product(range(10), repeat=4)`
order, i.e. 5 + the patch's four cells (row-major) read as a base-10 number; 10,005 tokens, the all-background patch
is token 5. An episode is one encoder sequence (`datamodule.py:119-142`): per study example its input patches,
IO_SEP, its output patches, SUP_SEP; then the query input's patches and IO_SEP. The decoder reads SOS + the output's
patches and is trained to predict the output's patches + EOS (`datamodule.py:144-156`).
"""

from __future__ import annotations

import torch

from vision_bench.metrics.inputs import NO_COLOUR
from vision_bench.tasks.carc.grammar import GRID_SIDE

PAD, SOS, EOS, IO_SEP, SUP_SEP = range(5)
SPECIAL_TOKENS = 5
PATCH = 2
"""The side of a patch in cells (`train_mlc.py --patch_size` 2)."""
PATCHES = GRID_SIDE // PATCH
"""Patches along a grid's side: 5."""
GRID_TOKENS = PATCHES * PATCHES
"""Tokens of one grid: 25."""
COLOURS = 10
VOCAB_SIZE = SPECIAL_TOKENS + COLOURS ** (PATCH * PATCH)
"""10,005: the released `PatchTokenizer(patch_size=2, max_value=9).vocab_size`."""
ZERO_PATCH = SPECIAL_TOKENS
"""The all-background patch (`PatchTokenizer.zero_token_id`), down-weighted in the loss."""
STUDY_TOKENS = 2 * GRID_TOKENS + 2
"""Tokens of one study example: input, IO_SEP, output, SUP_SEP."""
QUERY_TOKENS = GRID_TOKENS + 1
"""Tokens of the query: input, IO_SEP."""

_PLACES = torch.tensor([COLOURS ** 3, COLOURS ** 2, COLOURS, 1])
"""A patch's cells in row-major order are the digits of its number, the first the most significant."""


def sequence_length(study_examples: int) -> int:
    """Encoder tokens of an episode with `study_examples` examples."""
    return study_examples * STUDY_TOKENS + QUERY_TOKENS


def grid_tokens(grids: torch.Tensor) -> torch.Tensor:
    """(..., 10, 10) colours 0-9 -> (..., 25) long patch tokens, patches row-major."""
    lead = grids.shape[:-2]
    patches = grids.long().reshape(*lead, PATCHES, PATCH, PATCHES, PATCH).transpose(-3, -2)
    cells = patches.reshape(*lead, GRID_TOKENS, PATCH * PATCH)
    return SPECIAL_TOKENS + (cells * _PLACES.to(grids.device)).sum(dim=-1)


def token_grids(tokens: torch.Tensor) -> torch.Tensor:
    """(..., 25) tokens -> (..., 10, 10) long colours, as `PatchTokenizer.decode` (`patch_tokenizer.py:120-159`)
    reads them: a special token's cells get no colour (`NO_COLOUR`; None in the release), and so does every cell
    from the first EOS on."""
    lead = tokens.shape[:-1]
    after_eos = (tokens == EOS).long().cummax(dim=-1).values.bool()
    special = (tokens < SPECIAL_TOKENS) | after_eos
    digits = (tokens.clamp(min=SPECIAL_TOKENS) - SPECIAL_TOKENS)[..., None] // _PLACES.to(tokens.device) % COLOURS
    cells = torch.where(special[..., None], NO_COLOUR, digits)
    return cells.reshape(*lead, PATCHES, PATCHES, PATCH, PATCH).transpose(-3, -2).reshape(*lead, GRID_SIDE, GRID_SIDE)


def episode_sequence(study_inputs: torch.Tensor, study_outputs: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """(B, n, 10, 10) study inputs and outputs and (B, 10, 10) query inputs -> (B, n * 52 + 26) encoder tokens."""
    batch, count = study_inputs.shape[:2]
    separator = study_inputs.new_full((batch, count, 1), IO_SEP, dtype=torch.long)
    study = torch.cat([grid_tokens(study_inputs), separator, grid_tokens(study_outputs), separator + SUP_SEP - IO_SEP],
                      dim=-1)
    query_tokens = torch.cat([grid_tokens(query), separator[:, 0]], dim=-1)
    return torch.cat([study.reshape(batch, count * STUDY_TOKENS), query_tokens], dim=-1)


def decoder_input(outputs: torch.Tensor) -> torch.Tensor:
    """(B, 10, 10) output grids -> (B, 26): SOS, then the output's patches."""
    tokens = grid_tokens(outputs)
    return torch.cat([tokens.new_full((tokens.shape[0], 1), SOS), tokens], dim=-1)


def decoder_target(outputs: torch.Tensor) -> torch.Tensor:
    """(B, 10, 10) output grids -> (B, 26): the output's patches, then EOS."""
    tokens = grid_tokens(outputs)
    return torch.cat([tokens, tokens.new_full((tokens.shape[0], 1), EOS)], dim=-1)


__all__ = [
    "EOS", "GRID_TOKENS", "IO_SEP", "PAD", "PATCH", "PATCHES", "QUERY_TOKENS", "SOS", "SPECIAL_TOKENS", "STUDY_TOKENS",
    "SUP_SEP", "VOCAB_SIZE", "ZERO_PATCH", "decoder_input", "decoder_target", "episode_sequence", "grid_tokens",
    "sequence_length", "token_grids",
]
