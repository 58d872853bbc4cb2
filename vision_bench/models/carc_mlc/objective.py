"""C-ARC's MLC training objective as its released code defines it: the copy task, the target noise, the loss.

Copy task (`dataset.py:96-98`, on by default, `train_mlc.py --no_copy_task` turns it off): the episode's study
examples are also queries, each its own sequence with the whole episode as context and its output as the target.
The project's samples are one query each, so in training each sample takes each study example as a copy query with
probability `COPY_RATE` (`copy_selection`), which keeps the released proportion of copies to queries per episode.
Target noise (`dataset.py:91-94`, `utils.py:331-352` `add_response_noise`, `--p_noise` 0.001): in training only, each
cell of a query's output grid (not of the study examples') is, with that probability, replaced by a colour drawn
uniformly from 0-9, before the decoder's input and target are made from it. Loss (`model.py:59-66`, `:101-106`):
cross-entropy over the decoder's 26 targets (25 patches and EOS), weighted by token with the all-background patch at
0.2 (`--zero_token_weight`, the paper's "background patch loss weight"): a weighted mean, PAD (never a target)
ignored.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vision_bench.models.carc_mlc.episode_grids import EpisodeGrids
from vision_bench.models.carc_mlc.tokens import (
    COLOURS,
    PAD,
    VOCAB_SIZE,
    ZERO_PATCH,
    decoder_input,
    decoder_target,
    episode_sequence,
)

TARGET_NOISE = 0.001
"""`train_mlc.py --p_noise` default, the paper's noise probability (Table 3)."""
COPY_RATE = 0.1
"""The probability that a study example is also a query of one training sample: with the paper's 10 queries per
episode (one sample each), each study example is a copy query once per episode on average, the released proportion
(an episode's batch holds its 10 queries and its n study examples once each)."""


def with_target_noise(outputs: torch.Tensor, probability: float, generator: torch.Generator | None = None
                      ) -> torch.Tensor:
    """(B, 10, 10) output grids with each cell, with `probability`, replaced by a uniform colour 0-9."""
    if probability <= 0:
        return outputs
    hit = torch.rand(outputs.shape, generator=generator, device=outputs.device) < probability
    colours = torch.randint(0, COLOURS, outputs.shape, generator=generator, device=outputs.device)
    return torch.where(hit, colours, outputs.long())


def training_sequences(episodes: EpisodeGrids, outputs: torch.Tensor, copy_task: bool
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(encoder tokens (N, L), decoder input (N, 26), decoder target (N, 26)) of the episodes' queries with their
    (B, 10, 10) `outputs`: per episode its n study examples as queries first when `copy_task` (N = B (n + 1)), then
    its own query (N = B without the copy task)."""
    queries, answers = episodes.query[:, None], outputs[:, None]
    if copy_task:
        queries = torch.cat([episodes.study_inputs, queries], dim=1)
        answers = torch.cat([episodes.study_outputs, answers], dim=1)
    per_episode = queries.shape[1]
    tokens = episode_sequence(episodes.study_inputs.repeat_interleave(per_episode, dim=0),
                              episodes.study_outputs.repeat_interleave(per_episode, dim=0), queries.flatten(0, 1))
    answers = answers.flatten(0, 1)
    return tokens, decoder_input(answers), decoder_target(answers)


def copy_selection(samples: int, study: int, rate: float, device: torch.device | None = None,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """(samples * (study + 1),) bool over `training_sequences`' rows with the copy task: every sample's own query,
    and each of its study examples with probability `rate`."""
    chosen = torch.rand(samples, study + 1, generator=generator, device=device) < rate
    chosen[:, -1] = True
    return chosen.flatten()


def token_weights(background_weight: float, device: torch.device | None = None) -> torch.Tensor:
    """(10005,) loss weight per token: 1, the all-background patch `background_weight`."""
    weights = torch.ones(VOCAB_SIZE, device=device)
    weights[ZERO_PATCH] = background_weight
    return weights


def episode_loss(logits: torch.Tensor, target: torch.Tensor, background_weight: float) -> torch.Tensor:
    """The weighted mean cross-entropy of (N, T, 10005) logits against (N, T) target tokens."""
    return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(),
                           weight=token_weights(background_weight, logits.device), ignore_index=PAD)


__all__ = ["COPY_RATE", "TARGET_NOISE", "copy_selection", "episode_loss", "token_weights", "training_sequences",
           "with_target_noise"]
