"""COGITAO's LLaDA baseline as released: a masked-diffusion transformer over the input and target grids' cells,
`LLaDAModel` of ktroyan/visualreasoning branch `features/llada` (c60842d; `networks/backbones/llada.py`, assembled
by `models/beforearc_model.py:922-1020`, configured by `configs/networks/backbones/llada.yaml` and
`configs/models/BEFOREARCModel.yaml`), paper 000's appendices I.5 and J.4.

It reads no one-hot and no picture: each of the G x G canvas cells (classes 0-9 and the padding class 10, G the
experiment's largest grid) is a token, looked up in a WIDTH-wide table of VOCAB = 12 rows, the 11 classes and MASK
(`llada.py:1089-1100,1114-1116,1520`). The sequence is [task tokens | input cells | target cells], row-major; the
task code's tokens, when the model is task-conditioned, come first from one table shared by every code position
(N(0, 1), `beforearc_model.py:840-841,927-928`; `llada.py:1551-1552`). DEPTH LLaMA-style pre-norm blocks
(`LLaDALlamaBlock`, `llada.py:847-945`), no biases anywhere, no dropout:
h = x + W_o attention(RMSNorm(x)), then h + W_down(SiLU(W_gate RMSNorm(h)) * W_up RMSNorm(h)) (FFN_WIDTH = 384).
RMSNorm is computed in float32 (autocast off), x / sqrt(mean(x^2) + 1e-5), times a weight, no bias
(`llada.py:326-354`). Queries, keys and values are separate linear maps; each head's queries and keys are rotated by
1D RoPE over the whole sequence's positions 0, 1, ... (task tokens included; theta 500000, frequencies duplicated,
rotate-half, in float32: `llada.py:388-453`), and attention is `scaled_dot_product_attention` over every token
with no mask at all, padding included (`llada.py:663-671,722-729`). A final RMSNorm; the task and input tokens are
dropped and COGITAO's MLP head (`grid_io.cell_head`) gives each target cell's logits of the 11 classes, so MASK is
never predicted (`beforearc_model.py:969,1002-1008`). Initialisation "mitchell" (`llada.py:105-180,593-612,
886-895,1192-1217`): every weight truncated-normal at +-3 sigma with sigma = 1 / sqrt(fan-in), the attention and
FFN output maps further divided by sqrt(2 (layer + 1)); norms at 1; the head and the task table keep PyTorch's.
The release also builds a `PatchEmbed` (Conv2d 1 -> 12, 24 parameters) that its forward never calls
(`llada.py:1109-1110`); it is left out here (docs/fidelity.md).

Training (`mask_target`, `LLaDABody.loss`; `llada.py:1229-1299`, `beforearc_model.py:229-262,946-957`): per sample
t ~ U(0, 1) and each target cell, padding included, is replaced by MASK with probability (1 - 1e-3) t + 1e-3; the
input is never masked. The loss is the plain mean cross-entropy over the batch's masked target cells (no 1 / t
weighting, unlike LLaDA's paper). Inference (`LLaDABody.predict_classes`; `llada.py:1302-1410`): the target starts
all MASK; STEPS times, one forward pass, each cell's argmax class (temperature 0, no classifier-free guidance) and
its softmax probability in float64, and the `unmasking_schedule`'s count of the most confident still-masked cells
is committed, never to be masked again.

The release's recipe, a training config's matter rather than the model's: AdamW (lr 2e-4, weight decay 0.01 on
every parameter), 200 linear warm-up steps, a per-epoch cosine of T_max 20 down to 1e-6, 20 epochs, batch 32,
gradient clipping 1.0, fp16 autocast (`BEFOREARCModel.yaml`, `beforearc_model.py:664-717`, `training.yaml`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.models.cogitao.grid_io import CLASSES, EMBED_DIM, cell_head

WIDTH = EMBED_DIM
DEPTH = 6
HEADS = 4
HEAD_DIM = WIDTH // HEADS
FFN_WIDTH = 384
"""`mlp_hidden_size` of llada.yaml (its `mlp_ratio: 4` is not read when a hidden size is given)."""
MASK = CLASSES
"""The mask token, 11: after the 11 classes (`mask_token_id = vocab_size - 1`)."""
VOCAB = CLASSES + 1
ROPE_THETA = 500000.0
NORM_EPS = 1e-5
STEPS = 32
"""Denoising steps of inference (llada.yaml `diffusion.steps`)."""
EVAL_MASK_SEED = 0
"""The seed of the masks of an eval-mode loss (validation); the release logs no validation loss for LLaDA."""
MIN_MASK_RATIO = 1e-3
"""The least probability with which a target cell is masked in training (`mask_input_sequence`'s eps)."""


def mitchell_(weight: torch.Tensor, fan_in: int, layer: int | None = None) -> None:
    """The release's "mitchell" init: truncated normal at +-3 sigma, sigma = 1 / sqrt(fan_in), divided by
    sqrt(2 (layer + 1)) for the output maps of block `layer`."""
    std = 1 / math.sqrt(fan_in)
    if layer is not None:
        std = std / math.sqrt(2 * (layer + 1))
    nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-3 * std, b=3 * std)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + NORM_EPS) in float32 (autocast off), back to x's dtype, times a weight (no bias)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, enabled=False):
            normed = x.float()
            normed = normed * torch.rsqrt(normed.pow(2).mean(-1, keepdim=True) + NORM_EPS)
        return self.weight * normed.to(x.dtype)


def rope_tables(length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (length, HEAD_DIM) float32: position p's angles p * ROPE_THETA^(-2i / HEAD_DIM) for
    i < HEAD_DIM / 2, the half repeated (`llada.py:416-422`)."""
    with torch.autocast(device_type=device.type, enabled=False):
        inverse = 1.0 / (ROPE_THETA ** (torch.arange(0, HEAD_DIM, 2, device=device, dtype=torch.float) / HEAD_DIM))
        angles = torch.arange(length, device=device, dtype=torch.float)[:, None] * inverse[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on (B, heads, T, HEAD_DIM) in float32: x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1) for the
    halves x1, x2 of each head's vector; back to x's dtype."""
    with torch.autocast(device_type=x.device.type, enabled=False):
        full = x.float()
        first, second = full.chunk(2, dim=-1)
        return (full * cos + torch.cat((-second, first), dim=-1) * sin).to(x.dtype)


class SelfAttention(nn.Module):
    """Separate query, key and value maps (no bias), RoPE on queries and keys, attention over every token with no
    mask, an output map (no bias) initialised for block `layer`."""

    def __init__(self, layer: int) -> None:
        super().__init__()
        self.query = nn.Linear(WIDTH, WIDTH, bias=False)
        self.key = nn.Linear(WIDTH, WIDTH, bias=False)
        self.value = nn.Linear(WIDTH, WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        for projection in (self.query, self.key, self.value):
            mitchell_(projection.weight, WIDTH)
        mitchell_(self.out.weight, WIDTH, layer)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape

        def heads(projection: nn.Linear) -> torch.Tensor:
            return projection(x).view(batch, length, HEADS, HEAD_DIM).transpose(1, 2)

        query, key = rotate(heads(self.query), cos, sin), rotate(heads(self.key), cos, sin)
        attended = F.scaled_dot_product_attention(query, key, heads(self.value))
        return self.out(attended.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    """`LLaDALlamaBlock`: h = x + attention(RMSNorm(x)); h + down(SiLU(gate(RMSNorm(h))) * up(RMSNorm(h)))."""

    def __init__(self, layer: int) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(WIDTH)
        self.attention = SelfAttention(layer)
        self.ffn_norm = RMSNorm(WIDTH)
        self.gate = nn.Linear(WIDTH, FFN_WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, FFN_WIDTH, bias=False)
        self.down = nn.Linear(FFN_WIDTH, WIDTH, bias=False)
        mitchell_(self.gate.weight, WIDTH)
        mitchell_(self.up.weight, WIDTH)
        mitchell_(self.down.weight, FFN_WIDTH, layer)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin)
        normed = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(normed)) * self.up(normed))


def mask_target(cells: torch.Tensor, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, N) target classes -> (the target with masked cells set to MASK, the (B, N) bool mask): per sample
    t ~ U(0, 1), each cell masked with probability (1 - MIN_MASK_RATIO) t + MIN_MASK_RATIO, drawn in the release's
    order (t, then the cells' uniforms) from `generator`, or the global torch RNG when None (training)."""
    batch, length = cells.shape
    ratio = (1 - MIN_MASK_RATIO) * torch.rand(batch, device=cells.device, generator=generator) + MIN_MASK_RATIO
    masked = torch.rand((batch, length), device=cells.device, generator=generator) < ratio[:, None]
    return torch.where(masked, MASK, cells), masked


def unmasking_schedule(cells: int, steps: int = STEPS) -> list[int]:
    """How many cells step i of inference commits: cells // steps, plus one for the first cells % steps steps
    (`get_num_transfer_tokens`); below `steps` cells the last steps commit none."""
    return [cells // steps + (step < cells % steps) for step in range(steps)]


class LLaDABody(nn.Module):
    """COGITAO's LLaDA on a G x G canvas with its MLP head (module docstring); task tokens when `task_vocab_size`
    is given."""

    def __init__(self, grid_size: int, task_vocab_size: int | None) -> None:
        super().__init__()
        self.grid_size = grid_size
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        mitchell_(self.tokens.weight, WIDTH)
        self.task_tokens = None if task_vocab_size is None else nn.Embedding(task_vocab_size, WIDTH)
        self.layers = nn.ModuleList(Block(layer) for layer in range(DEPTH))
        self.norm = RMSNorm(WIDTH)
        self.classifier = cell_head()

    def forward(
        self, inputs: torch.Tensor, target_tokens: torch.Tensor, task_code: torch.Tensor | None
    ) -> torch.Tensor:
        """(B, G, G) input classes, (B, G, G) target tokens (classes, MASK where masked), the (B, L) task code ->
        (B, G * G, CLASSES) logits of the target cells, row-major."""
        cells = target_tokens[0].numel()
        x = self.tokens(torch.cat([inputs.flatten(1), target_tokens.flatten(1)], dim=1))
        if self.task_tokens is not None:
            assert task_code is not None, "a conditioned model's forward checks the task code"
            x = torch.cat([self.task_tokens(task_code), x], dim=1)
        cos, sin = rope_tables(x.shape[1], x.device)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.classifier(self.norm(x)[:, -cells:])

    def loss(self, inputs: torch.Tensor, target: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """The masked-diffusion loss on (B, G, G) input and target canvases: mean cross-entropy over the masked
        target cells (`mask_target`); zero, with zero gradients, in the rare batch where no cell is masked. In eval
        mode (validation) the masks come from a generator seeded with EVAL_MASK_SEED at every call: the same batch
        gives the same loss, and validating leaves training's random stream alone."""
        cells = target.flatten(1)
        generator = None
        if not self.training:
            generator = torch.Generator(device=cells.device).manual_seed(EVAL_MASK_SEED)
        masked, mask = mask_target(cells, generator)
        logits = self(inputs, masked.view_as(target), task_code)
        losses = F.cross_entropy(logits.float().transpose(1, 2), cells, reduction="none")
        return (losses * mask).sum() / mask.sum().clamp(min=1)

    @torch.no_grad()
    def predict_classes(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """(B, G, G) classes by confidence-ordered unmasking: the target starts all MASK; at each step of the
        `unmasking_schedule`, one forward pass and the step's count of still-masked cells whose argmax class has
        the highest softmax probability (float64) are committed to it. Steps that commit nothing (fewer cells than
        STEPS) are skipped: in the release they are forward passes that change no cell."""
        batch, side = inputs.shape[0], self.grid_size
        tokens = torch.full((batch, side * side), MASK, dtype=torch.long, device=inputs.device)
        for count in unmasking_schedule(side * side):
            if not count:
                break
            logits = self(inputs, tokens.view(batch, side, side), task_code)
            guess = logits.argmax(dim=-1)
            probability = logits.double().softmax(dim=-1).gather(-1, guess[..., None])[..., 0]
            confidence = torch.where(tokens == MASK, probability, -math.inf)
            chosen = confidence.topk(count, dim=1).indices
            tokens.scatter_(1, chosen, guess.gather(1, chosen))
        return tokens.view(batch, side, side)


__all__ = [
    "DEPTH",
    "EVAL_MASK_SEED",
    "FFN_WIDTH",
    "HEADS",
    "MASK",
    "MIN_MASK_RATIO",
    "ROPE_THETA",
    "STEPS",
    "VOCAB",
    "WIDTH",
    "Block",
    "LLaDABody",
    "RMSNorm",
    "SelfAttention",
    "mask_target",
    "mitchell_",
    "rope_tables",
    "rotate",
    "unmasking_schedule",
]
