"""COGITAO's PL-TF as released: the `LoopedVisionTransformer` with PonderNet halting of ktroyan/visualreasoning
(`networks/backbones/looped_vit.py:798-1260`; its loss and prediction in `models/beforearc_model.py:23-101,267-317`)
at the paper's PL-TF command (visual tokens, 2D sin-cos APE added, no OPE, RoPE, no registers) and its looped_vit.yaml
and BEFOREARCModel.yaml of the paper's time (commit 90928a4).

Embedding e: the `grid_io.cell_stem` 1x1 convolution of the one-hot visual-token canvas (VT_CLASSES channels) to
one WIDTH-wide token per cell, row-major, plus `positions.sincos_2d` (`sum`); with task conditioning the task
code's tokens follow, from one table drawn N(0, 1), without positions or rotation. One weight-shared pre-LN layer
(`vanilla_tf.EncoderLayer`, width 256, 8 heads, GELU FFN 1024, dropout 0.1 on the attention probabilities and
twice in the FFN, the cell tokens' queries and keys turned by `positions.CellRotary`) and the final LayerNorm make
one step, `Step(z) = LN(Layer(z))`, looped: h_0 = e, h_t = Step(e + h_{t-1}) (`looped_vit.py:1057-1114`, NaNs and
infinities zeroed as released). After each step t < MAX_STEPS - 1 the halting node (Linear 256 -> 128, ReLU,
Linear 128 -> 1, sigmoid) of the mean of every token of h_t, task tokens included, gives lambda_t; the halting
distribution is p_t = lambda_t * prod_{j<t} (1 - lambda_j), the last step taking the remaining mass
(`looped_vit.py:1119-1147`). COGITAO's MLP head (Linear 256 -> 128, ReLU, Linear 128 -> 15) gives every step's
cell logits. Linear layers of the loop and the halting node start xavier-uniform with zero bias, LayerNorms at 1
and 0 (looped_vit.yaml `init_weights_cfg`); the stem, the head and the task table keep PyTorch's initialisation.

Training (`loss`, any mode): unroll until every sample of the batch has less than EPSILON mass left, the rest added
to the last step, or MAX_STEPS steps (`looped_vit.py:1149-1154`); the loss is
L_rec + BETA * KL(p || p_G): L_rec = sum_t mean over samples and cells of p_t * CE(logits_t, target), the
truncated geometric prior p_G[k] = LAMBDA_P (1 - LAMBDA_P)^k for k < MAX_STEPS - 1 and (1 - LAMBDA_P)^(MAX_STEPS - 1)
last, cut to the steps run and not renormalised, p clamped to [1e-6, 1 - 1e-6] in the KL and the KL averaged over
the batch (`beforearc_model.py:23-77,270-282`). Prediction (`predict_classes`): each not-yet-halted sample halts
after step t < MAX_STEPS - 1 with probability lambda_t; the loop stops once every sample has halted, a sample that
never halts takes the last step, and each sample's classes are the argmax of the logits of its halting step
(`looped_vit.py:1156-1195`, `beforearc_model.py:309-317`). The release draws the halting with `torch.bernoulli` from
the global random state (`generator_draws` replays that rule from a generator); `predict_classes` gives each sample
its own uniforms instead (`sample_draws`: seeded by HALTING_SEED and the sample's input and task code), so a
sample's grid is the same whatever batch it sits in, at whatever place, and on every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.models.cogitao.grid_io import cell_head, cell_stem, one_hot
from vision_bench.models.cogitao.positions import CellRotary, sincos_2d
from vision_bench.models.cogitao.vanilla_tf import EncoderLayer, append_task_tokens, init_linears
from vision_bench.models.cogitao.visual_tokens import VT_CLASSES
from vision_bench.models.seeds import tensor_seed

WIDTH = 256
HEADS = 8
FFN_WIDTH = 4 * WIDTH
HALTING_WIDTH = 128
MAX_STEPS = 7
EPSILON = 0.01
LAMBDA_P = 0.05
BETA = 0.01
HALTING_SEED = 0
"""Mixed into every sample's halting seed at `predict_classes` (`sample_draws`)."""

Draw = Callable[[torch.Tensor, int], torch.Tensor]
"""Inference halting: (lambda_t of the samples not yet halted (B,) float32, step t) -> which samples halt (B,) bool."""


def generator_draws(generator: torch.Generator) -> Draw:
    """The release's draw, `torch.bernoulli(lambda_t)`, from `generator` in place of the global random state."""
    return lambda probability, step: torch.bernoulli(probability, generator=generator).bool()


def sample_seed(inputs: torch.Tensor, task_code: torch.Tensor | None) -> int:
    """A 63-bit seed from HALTING_SEED, one sample's input canvas and its task code (`tensor_seed` of them as
    int64)."""
    return tensor_seed(HALTING_SEED, inputs.to(torch.int64), None if task_code is None else task_code.to(torch.int64))


def sample_draws(inputs: torch.Tensor, task_code: torch.Tensor | None) -> Draw:
    """Per-sample draws: sample b halts at step t when u[b, t] < lambda_t, its MAX_STEPS uniforms u[b] drawn from a
    generator seeded with `sample_seed` of its own input and task code, so its halting does not depend on the
    other samples of the batch or its place among them (the same distribution as `torch.bernoulli`)."""
    uniforms = torch.stack([
        torch.rand(MAX_STEPS, generator=torch.Generator().manual_seed(
            sample_seed(inputs[b], None if task_code is None else task_code[b])))
        for b in range(inputs.shape[0])
    ]).to(inputs.device)
    return lambda probability, step: uniforms[:, step] < probability


def truncated_geometric(steps: int, rate: float) -> torch.Tensor:
    """(steps,) PonderNet's prior as COGITAO builds it: rate (1 - rate)^k, the last entry (1 - rate)^(steps - 1)."""
    prior = [rate * (1 - rate) ** k for k in range(steps - 1)] + [(1 - rate) ** (steps - 1)]
    return torch.tensor(prior, dtype=torch.float32)


@dataclass(frozen=True)
class Unroll:
    """The training unroll: each step's cell logits (B, S * S, VT_CLASSES), each halting probability lambda_t (B,)
    of the steps before the last one run, and the halting distribution p_t (B,) over the steps run."""

    logits: list[torch.Tensor]
    halting: list[torch.Tensor]
    distribution: list[torch.Tensor]


class PonderingLoopedBody(nn.Module):
    """PL-TF over a visual-token canvas of side `side` (module docstring): a `grid_io.ClassBody`; `forward` is the
    training unroll."""

    positions: torch.Tensor
    prior: torch.Tensor

    def __init__(self, side: int, task_vocab_size: int | None) -> None:
        super().__init__()
        self.cells = side * side
        self.stem = cell_stem("grid", WIDTH, 1, VT_CLASSES)
        self.register_buffer("positions", sincos_2d(side, WIDTH), persistent=False)
        self.block = EncoderLayer(WIDTH, HEADS, FFN_WIDTH, CellRotary(side, WIDTH // HEADS, prefix=0))
        self.norm = nn.LayerNorm(WIDTH)
        self.halting = nn.Sequential(nn.Linear(WIDTH, HALTING_WIDTH), nn.ReLU(), nn.Linear(HALTING_WIDTH, 1),
                                     nn.Sigmoid())
        init_linears(self, nn.init.xavier_uniform_)
        self.task_tokens = None if task_vocab_size is None else nn.Embedding(task_vocab_size, WIDTH)
        self.classifier = cell_head(VT_CLASSES, WIDTH)
        self.register_buffer("prior", truncated_geometric(MAX_STEPS, LAMBDA_P), persistent=False)

    def embed(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """e: the cell tokens plus their positions, then the task tokens (B, S * S [+ L], WIDTH)."""
        tokens = self.stem(one_hot(inputs, VT_CLASSES)).flatten(2).transpose(1, 2)
        tokens = tokens + self.positions
        return append_task_tokens(tokens, self.task_tokens, task_code)

    def step(self, state: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(self.norm(self.block(state)))

    def halting_probability(self, state: torch.Tensor) -> torch.Tensor:
        """lambda_t (B,) of a state (B, tokens, WIDTH), in [0, 1]."""
        halting = self.halting(state.mean(dim=1)).squeeze(-1)
        return torch.nan_to_num(halting, nan=0.0, posinf=1.0, neginf=0.0).clamp(0.0, 1.0)

    def cell_logits(self, state: torch.Tensor) -> torch.Tensor:
        return self.classifier(state[:, : self.cells])

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> Unroll:
        """The training unroll (module docstring), whatever the mode: dropout acts in training only."""
        embedded = self.embed(inputs, task_code)
        state = embedded
        remaining = embedded.new_ones(embedded.shape[0], dtype=torch.float32)
        run = Unroll([], [], [])
        for step in range(MAX_STEPS):
            state = self.step(embedded + state)
            run.logits.append(self.cell_logits(state))
            if step == MAX_STEPS - 1:
                halting_mass = remaining
            else:
                halting = self.halting_probability(state)
                run.halting.append(halting)
                halting_mass = (remaining * halting).clamp(0.0, 1.0)
                remaining = (remaining * (1 - halting)).clamp(0.0, 1.0)
            run.distribution.append(halting_mass)
            if bool((remaining < EPSILON).all()):
                run.distribution[-1] = run.distribution[-1] + remaining
                break
        return run

    def loss(self, inputs: torch.Tensor, target: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """L_rec + BETA * KL(p || p_G) over the training unroll (module docstring)."""
        run = self(inputs, task_code)
        cells = target.flatten(1)
        reconstruction = torch.zeros((), device=target.device)
        for mass, logits in zip(run.distribution, run.logits):
            cross_entropy = F.cross_entropy(logits.float().transpose(1, 2), cells, reduction="none")
            reconstruction = reconstruction + (mass[:, None] * cross_entropy).mean()
        distribution = torch.stack(run.distribution, dim=1).clamp(1e-6, 1 - 1e-6)
        prior = self.prior[: distribution.shape[1]].expand_as(distribution)
        regularisation = F.kl_div(prior.log(), distribution, reduction="batchmean")
        return reconstruction + BETA * regularisation

    def halting_logits(self, inputs: torch.Tensor, task_code: torch.Tensor | None,
                       draw: Draw) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (B, S * S, VT_CLASSES) at each sample's halting step, the steps (B,) long), the halting drawn
        by `draw` (module docstring); halted samples' states are zeroed as released, which changes nothing a
        prediction reads."""
        embedded = self.embed(inputs, task_code)
        batch = embedded.shape[0]
        state = embedded
        halted = torch.zeros(batch, dtype=torch.bool, device=embedded.device)
        halt_step = torch.full((batch,), -1, dtype=torch.long, device=embedded.device)
        logits = []
        for step in range(MAX_STEPS):
            state = self.step(embedded + state)
            logits.append(self.cell_logits(state))
            if step < MAX_STEPS - 1:
                probability = (self.halting_probability(state) * (~halted).float()).float()
                draws = draw(probability, step)
                halt_step[(halt_step == -1) & draws] = step
                halted = halted | draws
            if bool(halted.all()):
                break
            state = state * (~halted).view(batch, 1, 1)
        halt_step[halt_step < 0] = len(logits) - 1
        chosen = torch.stack(logits, dim=1)[torch.arange(batch, device=embedded.device), halt_step]
        return chosen, halt_step

    def predict_classes(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        logits, _ = self.halting_logits(inputs, task_code, sample_draws(inputs, task_code))
        return logits.argmax(dim=-1).view(inputs.shape)


__all__ = [
    "BETA",
    "Draw",
    "EPSILON",
    "FFN_WIDTH",
    "HALTING_SEED",
    "HALTING_WIDTH",
    "HEADS",
    "LAMBDA_P",
    "MAX_STEPS",
    "WIDTH",
    "PonderingLoopedBody",
    "Unroll",
    "generator_draws",
    "sample_draws",
    "sample_seed",
    "truncated_geometric",
]
