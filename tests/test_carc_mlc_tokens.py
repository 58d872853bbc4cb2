"""carc:mlc's serialisation of an episode (`vision_bench.models.carc_mlc.tokens`, `episode_grids`): hand-computed
tokens, and grids -> tokens -> grids round trips."""

from __future__ import annotations

import random

import numpy as np
import torch

from vision_bench.metrics.inputs import NO_COLOUR
from vision_bench.models.carc_mlc.episode_grids import episode_grids, query_outputs, with_query_outputs
from vision_bench.models.carc_mlc.tokens import (
    EOS,
    IO_SEP,
    SOS,
    SUP_SEP,
    VOCAB_SIZE,
    ZERO_PATCH,
    decoder_input,
    decoder_target,
    episode_sequence,
    grid_tokens,
    sequence_length,
    token_grids,
)
from vision_bench.tasks.carc import canvas
from vision_bench.tasks.carc.episodes import generate_episode
from vision_bench.tasks.carc.spec import EpisodeSpec


def test_a_patch_is_five_plus_its_cells_read_as_a_base_ten_number() -> None:
    grid = torch.zeros(10, 10, dtype=torch.long)
    grid[0, 0], grid[0, 1], grid[1, 0], grid[1, 1] = 1, 2, 3, 4  # patch 0
    grid[9, 9] = 9  # the bottom-right cell of patch 24
    grid[0, 2] = 7  # top-left of patch 1
    tokens = grid_tokens(grid)
    assert tokens.shape == (25,) and VOCAB_SIZE == 10005 and ZERO_PATCH == 5
    assert tokens[0] == 5 + 1234 and tokens[1] == 5 + 7000 and tokens[24] == 5 + 9
    assert tokens[2:24].eq(ZERO_PATCH).all()


def test_grids_round_trip_through_tokens() -> None:
    grids = torch.randint(0, 10, (6, 10, 10), generator=torch.Generator().manual_seed(0))
    assert torch.equal(token_grids(grid_tokens(grids)), grids)


def test_special_tokens_and_everything_after_eos_decode_to_no_colour() -> None:
    tokens = torch.full((25,), ZERO_PATCH + 1111)
    tokens[3], tokens[10] = IO_SEP, EOS
    grid = token_grids(tokens)
    assert grid[0:2, 6:8].eq(NO_COLOUR).all() and grid[0:2, :6].eq(1).all() and grid[0:2, 8:].eq(1).all()
    assert grid[4:].eq(NO_COLOUR).all() and grid[2:4].eq(1).all()


def test_the_episode_sequence_is_study_pairs_with_separators_then_the_query() -> None:
    study_in = torch.zeros(1, 2, 10, 10, dtype=torch.long)
    study_out = torch.ones(1, 2, 10, 10, dtype=torch.long)
    query = torch.full((1, 10, 10), 2)
    sequence = episode_sequence(study_in, study_out, query)[0]
    assert len(sequence) == sequence_length(2) == 2 * 52 + 26
    one = 5 + 1111
    for start in (0, 52):
        assert sequence[start:start + 25].eq(ZERO_PATCH).all() and sequence[start + 25] == IO_SEP
        assert sequence[start + 26:start + 51].eq(one).all() and sequence[start + 51] == SUP_SEP
    assert sequence[104:129].eq(5 + 2222).all() and sequence[129] == IO_SEP
    answer = torch.full((1, 10, 10), 3)
    assert decoder_input(answer)[0, 0] == SOS and decoder_input(answer)[0, 1:].eq(5 + 3333).all()
    assert decoder_target(answer)[0, -1] == EOS and decoder_target(answer)[0, :-1].eq(5 + 3333).all()


def test_a_canvas_splits_into_its_episode_and_takes_a_predicted_output_back() -> None:
    for setup in ("3shot", "systematicity"):
        spec = EpisodeSpec(setup=setup)  # type: ignore[arg-type]
        episode = generate_episode(setup, spec.compositions("train"), 1, random.Random(3))
        study = [(example.input, example.output) for example in episode.study]
        query = episode.queries[0]
        grid_in = torch.from_numpy(canvas.compose(setup, study, query.input, None)).long()[None]
        grid_out = torch.from_numpy(canvas.compose(setup, study, query.input, query.output)).long()[None]
        grids = episode_grids(grid_in, "carc:mlc")
        assert grids.setup == setup and grids.study_inputs.shape == (1, len(study), 10, 10)
        assert np.array_equal(grids.study_inputs[0, -1].numpy(), study[-1][0])
        assert np.array_equal(grids.study_outputs[0, 0].numpy(), study[0][1])
        assert np.array_equal(grids.query[0].numpy(), query.input)
        assert np.array_equal(query_outputs(grid_out, setup)[0].numpy(), query.output)
        assert torch.equal(with_query_outputs(grid_in, query_outputs(grid_out, setup), setup), grid_out)
