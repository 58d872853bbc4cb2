"""Task conditioning: the task code (which transformation sequence to apply) as model input.

A task code is a LongTensor (B, L) of tokens, 0 = identity / padding (see
`vision_bench.tasks.task_code`); L is the model's `task_code_length` option (the study's
`TaskConfig.task_code_length`, 4 unless a study sets it). CNN families embed it into one vector
and modulate encoder features with FiLM (per-channel scale and shift); the ViT family adds one token per code position;
the svib models add one memory token per code position for their patch decoder to attend to.
Order matters (crop then pad differs from pad then crop), so every position has its own embedding.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.tasks.task_code import FULL_VOCAB_SIZE, TASK_CODE_LENGTH, VOCAB_SIZE


def resolve_vocab_size(task_conditioning: bool | int | None) -> int | None:
    """`task_conditioning` option -> vocabulary size (None = unconditioned).

    True means COGITAO's task codes (`VOCAB_SIZE` tokens); an integer >= 2 is a vocabulary of that many
    tokens (`FULL_VOCAB_SIZE` for rule codes, which name selectors); False and None (the option left
    unset) mean unconditioned.
    """
    if task_conditioning is False or task_conditioning is None:
        return None
    if task_conditioning is True:
        return VOCAB_SIZE
    if isinstance(task_conditioning, int) and task_conditioning >= 2:
        return task_conditioning
    raise ConfigError(
        f"task_conditioning={task_conditioning!r}; use true (COGITAO's {VOCAB_SIZE}-token vocabulary), "
        f"{FULL_VOCAB_SIZE} (the whole vocabulary, rule codes), another vocabulary size >= 2, or false"
    )


def check_task_code(
    task_code: torch.Tensor | None, batch_size: int, vocab_size: int, model_name: str,
    code_length: int = TASK_CODE_LENGTH,
) -> torch.Tensor:
    """The task code of a conditioned model's batch, (batch_size, code_length) tokens below `vocab_size`, or a
    `ConfigError` saying what is missing or malformed.

    Token values are checked on CPU tensors only (the data loader's batches), so that a batch already
    on an accelerator costs no device synchronisation.
    """
    if task_code is None:
        raise ConfigError(
            f"model {model_name!r} is task-conditioned but the batch has no 'task_code'; load a dataset "
            "with task codes or create the model with task_conditioning=false"
        )
    if not isinstance(task_code, torch.Tensor) or task_code.dtype not in (torch.int64, torch.int32):
        raise ConfigError(
            f"task_code must be an integer tensor (B, {code_length}), "
            f"got {getattr(task_code, 'dtype', type(task_code).__name__)}"
        )
    if task_code.shape != (batch_size, code_length):
        raise ConfigError(
            f"task_code has shape {tuple(task_code.shape)}; model {model_name!r} expects "
            f"({batch_size}, {code_length}): one code of {code_length} tokens (0..{vocab_size - 1}) per image; "
            "create the model with task_code_length set to the study's task_code_length"
        )
    if task_code.device.type != "cpu" or not task_code.numel():
        return task_code.long()
    low, high = int(task_code.min()), int(task_code.max())
    if low < 0 or high >= vocab_size:
        raise ConfigError(
            f"task_code holds tokens {low}..{high}; model {model_name!r} "
            f"knows tokens 0..{vocab_size - 1}; encode codes with vision_bench.tasks.task_code.encode_task_code"
        )
    return task_code.long()


class TaskCodeEmbedding(nn.Module):
    """(B, L) tokens -> (B, L, dim): a separate embedding table for each code position.

    The ViT family uses the L vectors as extra tokens; FiLM sums them into one code vector.
    """

    offsets: torch.Tensor

    def __init__(self, vocab_size: int, dim: int, code_length: int = TASK_CODE_LENGTH) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size * code_length, dim)
        nn.init.normal_(self.table.weight, std=0.02)
        self.register_buffer("offsets", torch.arange(code_length) * vocab_size, persistent=False)

    def forward(self, task_code: torch.Tensor) -> torch.Tensor:
        return self.table(task_code + self.offsets)


class TaskFiLM(nn.Module):
    """FiLM on a list of feature maps: f * (1 + gamma(code)) + beta(code), per channel.

    The projections start at zero: an untrained model gives the same output for every code and
    learns from there how much each code should change the features.
    """

    def __init__(
        self, vocab_size: int, channels: Sequence[int], code_dim: int = 128, code_length: int = TASK_CODE_LENGTH
    ) -> None:
        super().__init__()
        self.embedding = TaskCodeEmbedding(vocab_size, code_dim, code_length)
        self.mix = nn.Sequential(nn.Linear(code_dim, code_dim), nn.GELU())
        projections = [nn.Linear(code_dim, 2 * c) for c in channels]
        for projection in projections:
            nn.init.zeros_(projection.weight)
            nn.init.zeros_(projection.bias)
        self.projections = nn.ModuleList(projections)

    def forward(self, features: Sequence[torch.Tensor], task_code: torch.Tensor) -> list[torch.Tensor]:
        code = self.code_vector(task_code)
        return [self.modulate(index, feature, code) for index, feature in enumerate(features)]

    def code_vector(self, task_code: torch.Tensor) -> torch.Tensor:
        """(B, L) tokens -> (B, code_dim): the one vector every projection reads."""
        return self.mix(self.embedding(task_code).sum(dim=1))

    def modulate(self, index: int, feature: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        """Feature map `index` (B, channels[index], H, W) scaled and shifted by its projection of `code`; for a
        model that modulates its maps one at a time, between layers that read the previous one."""
        gamma, beta = self.projections[index](code)[:, :, None, None].chunk(2, dim=1)
        return feature * (1 + gamma) + beta
