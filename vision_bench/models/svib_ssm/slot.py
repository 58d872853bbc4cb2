"""SSM-Slot, SVIB's second state-space model (paper 003, section 4.2): SAVi slots per frame, a spatial-broadcast
decoder, and a transformer that predicts the next frame's slots from this frame's.

As SVIB's ssms/dynamic_slot/modules.py `DynamicSlot`, `SAVi`, `SpatialBroadcastDecoder` and
`NextFrameLatentPredictorSlot`, settings from configs/dynamic_slot.py:

- encoder: `conv_relu` 5x5 convolutions (pad 2) of `cnn_hidden` channels, the first of stride 1 at
  64-pixel images and 2 otherwise, the next two of stride 1, then a 5x5 convolution to `input_size`
  (Xavier, no ReLU); `CartesianPositions` on the S' x S' map (S' = 64 at 64 pixels, else S / 2); the
  map's pixels as a set, LayerNorm, then Linear (Kaiming), ReLU, Linear (Xavier);
- `SlotAttentionVideo` (SAVi): slots initialised as mu + exp(log sigma) x N(0, 1), mu and log sigma
  (1, 1, slot_size) Xavier-uniform; per frame, `iterations` rounds of slot attention (LayerNorm'd
  inputs, keys scaled by slot_size^-1/2, softmax over the slots, + epsilon, normalised over the
  inputs; GRU cell and a residual LayerNorm-MLP), then the predictor (a transformer of
  `predictor_blocks` blocks) carries the slots to the next frame;
- `SpatialBroadcastDecoder`: each slot broadcast to a `broadcast_size` square, plus
  `CartesianPositions`, four 5x5 stride-2 transposed convolutions (`decoder_hidden` channels, ReLU
  between them, PyTorch's initialisation) to C + 1 channels: C colours and an alpha logit, the alphas
  softmaxed over the slots;
- dynamics: `patch_transformer.Transformer` without cross-attention of `dynamics_blocks` blocks and
  `dynamics_heads` heads at width slot_size, dropout 0, over each frame's set of slots.

The objective (`SsmSlot.loss`) is SVIB's: the squared error of the alpha-composited reconstruction summed
over pixels and channels and divided by B x T, plus the mean squared error between the dynamics' output on
frame t's detached slots and frame t + 1's. No KL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.models.options import positive_int
from vision_bench.models.patch_transformer import Transformer, linear
from vision_bench.models.svib_ssm.layers import CartesianPositions, conv2d, conv_relu, gru_cell

UPSAMPLING = 16
"""The decoder's four stride-2 transposed convolutions draw 16 x broadcast_size pixels a side."""
STRIDE_ONE_SIZE = 64
"""SVIB's encoder keeps full resolution for 64-pixel images and halves any other size."""


@dataclass(frozen=True)
class SsmSlotSettings:
    """SSM-Slot's sizes; the defaults are SVIB's (configs/dynamic_slot.py; SAVi's and the decoder's
    defaults in ssms/dynamic_slot/modules.py; image size 128). `broadcast_size` x 16 must be the image size."""

    image_size: int = 128
    image_channels: int = 3
    slots: int = 4
    slot_size: int = 64
    iterations: int = 3
    cnn_hidden: int = 64
    mlp_hidden: int = 192
    input_size: int = 192
    dynamics_blocks: int = 4
    dynamics_heads: int = 4
    predictor_blocks: int = 1
    predictor_heads: int = 4
    epsilon: float = 1e-8
    broadcast_size: int = 8
    decoder_hidden: int = 64

    def __post_init__(self) -> None:
        for name in ("image_size", "image_channels", "slots", "slot_size", "iterations", "cnn_hidden", "mlp_hidden",
                     "input_size", "dynamics_blocks", "dynamics_heads", "predictor_blocks", "predictor_heads",
                     "broadcast_size", "decoder_hidden"):
            positive_int(getattr(self, name), name)
        if self.image_size != UPSAMPLING * self.broadcast_size:
            raise ConfigError(
                f"SSM-Slot's decoder draws {UPSAMPLING} x broadcast_size = {UPSAMPLING * self.broadcast_size} pixels "
                f"a side but image_size={self.image_size}; use an image_size that is a multiple of {UPSAMPLING} "
                f"and broadcast_size = image_size / {UPSAMPLING}"
            )

    @property
    def first_stride(self) -> int:
        return 1 if self.image_size == STRIDE_ONE_SIZE else 2

    @property
    def feature_side(self) -> int:
        """The side of the encoder's feature map: the image's at 64 pixels, else half of it."""
        return self.image_size // self.first_stride


SVIB_SSM_SLOT = SsmSlotSettings()


class SlotAttentionVideo(nn.Module):
    """SVIB's `SAVi`: (B, T, inputs, input_size) -> slots (B, T, slots, slot_size) and the attention
    (B, T, inputs, slots) of each frame's last iteration (softmax over the slots, before epsilon)."""

    def __init__(self, settings: SsmSlotSettings) -> None:
        super().__init__()
        self.settings = settings
        size, inputs = settings.slot_size, settings.input_size
        self.slot_mu = nn.Parameter(torch.empty(1, 1, size))
        self.slot_log_sigma = nn.Parameter(torch.empty(1, 1, size))
        nn.init.xavier_uniform_(self.slot_mu)
        nn.init.xavier_uniform_(self.slot_log_sigma)
        self.norm_inputs = nn.LayerNorm(inputs)
        self.norm_slots = nn.LayerNorm(size)
        self.norm_mlp = nn.LayerNorm(size)
        self.project_q = linear(size, size, bias=False)
        self.project_k = linear(inputs, size, bias=False)
        self.project_v = linear(inputs, size, bias=False)
        self.gru = gru_cell(size, size)
        hidden = settings.mlp_hidden
        self.mlp = nn.Sequential(linear(size, hidden, relu=True), nn.ReLU(), linear(hidden, size))
        self.predictor = Transformer(settings.predictor_blocks, size, settings.predictor_heads, 0.0, cross=False)

    def forward(
        self, inputs: torch.Tensor, generator: torch.Generator | None = None, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Slots and attention per frame; the initial slots' N(0, 1) draw (B, slots, slot_size) is `noise` when
        given, else drawn from `generator` when one is given, else from the global RNG as SVIB's."""
        batch, frames, _, _ = inputs.shape
        count, size = self.settings.slots, self.settings.slot_size
        if noise is None:
            noise = inputs.new_empty(batch, count, size).normal_(generator=generator)
        slots = self.slot_mu + torch.exp(self.slot_log_sigma) * noise
        inputs = self.norm_inputs(inputs)
        k = (size**-0.5) * self.project_k(inputs)
        v = self.project_v(inputs)
        attentions, frame_slots = [], []
        for t in range(frames):
            for _ in range(self.settings.iterations):
                slots_prev = slots
                q = self.project_q(self.norm_slots(slots))
                attention = F.softmax(torch.bmm(k[:, t], q.transpose(-1, -2)), dim=-1)  # B, inputs, slots
                weights = attention + self.settings.epsilon
                weights = weights / torch.sum(weights, dim=-2, keepdim=True)
                updates = torch.bmm(weights.transpose(-1, -2), v[:, t])  # B, slots, slot_size
                slots = self.gru(updates.view(-1, size), slots_prev.view(-1, size)).view(-1, count, size)
                slots = slots + self.mlp(self.norm_mlp(slots))
            attentions.append(attention)
            frame_slots.append(slots)
            slots = self.predictor(slots)
        return torch.stack(frame_slots, dim=1), torch.stack(attentions, dim=1)


class SpatialBroadcastDecoder(nn.Module):
    """SVIB's `SpatialBroadcastDecoder`: (M, slot_size) -> (M, out_channels, 16 b, 16 b), b = broadcast_size."""

    def __init__(self, slot_size: int, out_channels: int, broadcast_size: int, hidden: int) -> None:
        super().__init__()
        self.broadcast_size = broadcast_size
        self.positions = CartesianPositions(slot_size, broadcast_size)
        self.cnn = nn.Sequential(
            nn.ConvTranspose2d(slot_size, hidden, 5, 2, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, hidden, 5, 2, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, hidden, 5, 2, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, out_channels, 5, 2, 2, 1),
        )

    def forward(self, slots: torch.Tensor) -> torch.Tensor:
        count, size = slots.shape
        broadcast = slots[:, :, None, None].expand(count, size, self.broadcast_size, self.broadcast_size)
        return self.cnn(self.positions(broadcast))


class SsmSlotLoss(NamedTuple):
    """SSM-Slot's objective on a video: the loss; the reconstruction (B, T, C, H, W) and the per-slot
    alpha-masked reconstructions (B, T, slots, C, H, W), clamped to [0, 1] as SVIB returns them; SAVi's
    attention (B, T, inputs, slots: each frame's last iteration, summing to 1 over the slots); the
    decoder's alpha masks (B, T, slots, 1, H, W, summing to 1 over the slots); the loss's two terms."""

    loss: torch.Tensor
    recon: torch.Tensor
    recons_masked: torch.Tensor
    attention: torch.Tensor
    alpha: torch.Tensor
    autoencoding_mse: torch.Tensor
    dynamics_mse: torch.Tensor


class SsmSlot(nn.Module):
    """SVIB's SSM-Slot (`DynamicSlot`). `loss(video)` is its training objective; `predict_latent(image)`
    the next-frame slots a probe decodes (`NextFrameLatentPredictorSlot`)."""

    def __init__(self, settings: SsmSlotSettings = SVIB_SSM_SLOT) -> None:
        super().__init__()
        self.settings = settings
        hidden, inputs, channels = settings.cnn_hidden, settings.input_size, settings.image_channels
        self.encoder_cnn = nn.Sequential(
            *conv_relu(channels, hidden, 5, settings.first_stride, 2),
            *conv_relu(hidden, hidden, 5, 1, 2),
            *conv_relu(hidden, hidden, 5, 1, 2),
            conv2d(hidden, inputs, 5, 1, 2),
        )
        self.positions = CartesianPositions(inputs, settings.feature_side)
        self.encoder_norm = nn.LayerNorm(inputs)
        self.encoder_mlp = nn.Sequential(linear(inputs, inputs, relu=True), nn.ReLU(), linear(inputs, inputs))
        self.savi = SlotAttentionVideo(settings)
        self.decoder = SpatialBroadcastDecoder(
            settings.slot_size, channels + 1, settings.broadcast_size, settings.decoder_hidden
        )
        self.dynamics = Transformer(settings.dynamics_blocks, settings.slot_size, settings.dynamics_heads, 0.0,
                                    cross=False)

    def encode(
        self, video: torch.Tensor, generator: torch.Generator | None = None, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, C, S, S) -> slots (B, T, slots, slot_size) and SAVi's attention (B, T, S'^2, slots); the
        initial slots' draw as `SlotAttentionVideo.forward`."""
        batch, frames = video.shape[:2]
        features = self.positions(self.encoder_cnn(video.flatten(end_dim=1)))
        pixels = features.permute(0, 2, 3, 1).flatten(start_dim=1, end_dim=2)
        pixels = self.encoder_mlp(self.encoder_norm(pixels))
        return self.savi(pixels.reshape(batch, frames, -1, self.settings.input_size), generator, noise)

    def decode(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, slots, slot_size) -> per-slot colours (B, T, slots, C, S, S), unclamped, and alpha masks
        (B, T, slots, 1, S, S), softmaxed over the slots."""
        drawn = self.decoder(slots.flatten(end_dim=2))
        drawn = drawn.reshape(*slots.shape[:3], *drawn.shape[1:])
        colours, alpha_logits = drawn.split([self.settings.image_channels, 1], dim=3)
        return colours, F.softmax(alpha_logits, dim=2)

    def loss(self, video: torch.Tensor, generator: torch.Generator | None = None) -> SsmSlotLoss:
        """SVIB's objective on a (B, T, C, H, W) video of T >= 2 frames; SAVi's initial slots are drawn
        from `generator` when one is given, else from the global RNG as SVIB does."""
        batch, frames = video.shape[:2]
        slots, attention = self.encode(video, generator)
        colours, alpha = self.decode(slots)
        recons_masked = alpha * colours
        recon = recons_masked.sum(dim=2)
        autoencoding_mse = ((video - recon) ** 2).sum() / (batch * frames)
        slots = slots.detach()
        predicted = self.dynamics(slots[:, :-1].flatten(end_dim=1)).reshape(batch, frames - 1, self.settings.slots, -1)
        dynamics_mse = ((predicted - slots[:, 1:]) ** 2).mean()
        return SsmSlotLoss(autoencoding_mse + dynamics_mse, recon.clamp(0.0, 1.0), recons_masked.clamp(0.0, 1.0),
                           attention, alpha, autoencoding_mse, dynamics_mse)

    def predict_latent(
        self, images: torch.Tensor, generator: torch.Generator | None = None, noise: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, C, S, S) -> (B, slots, slot_size): one dynamics step from each image's slots, SVIB's
        `NextFrameLatentPredictorSlot` (the latent its probe decodes); the initial slots' draw as
        `SlotAttentionVideo.forward`."""
        slots, _ = self.encode(images.unsqueeze(1), generator, noise)
        return self.dynamics(slots[:, 0])
