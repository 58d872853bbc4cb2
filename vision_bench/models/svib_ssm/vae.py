"""SSM-VAE, SVIB's first state-space model (paper 003, section 4.2): a VAE of one latent vector per frame
and a transformer that predicts the next frame's latent mean from this frame's.

As SVIB's ssms/dynamic_vae/modules.py `DynamicVAE` and `NextFrameLatentPredictorVAE`, settings from
configs/dynamic_vae.py:

- encoder: four `conv_relu` 5x5 stride-2 (pad 2) convolutions of `cnn_hidden` channels, flattened,
  then Linear (Kaiming) -> 4 x latent, ReLU, Linear (Xavier) -> 2 x latent: the posterior's mean and
  log-variance;
- decoder: Linear (Kaiming) latent -> 4 x latent, ReLU, Linear (Xavier) -> cnn_hidden x (S/16)^2,
  reshaped, then four 5x5 stride-2 transposed convolutions (pad 2, output pad 1; PyTorch's
  initialisation, as SVIB's), ReLU between them, no output activation;
- dynamics: `patch_transformer.Transformer` without cross-attention (SVIB's `TransformerEncoder`:
  pre-norm blocks, the first normalising its input in place, final LayerNorm) of `dynamics_blocks`
  blocks and `dynamics_heads` heads at width latent, dropout 0, reading a sequence of one token.

The objective (`SsmVae.loss`) is SVIB's: nll + beta x kl + dynamics_mse, where nll is the mean
Gaussian negative log-likelihood of every pixel under the decoded mean with variance sigma^2, kl the
mean KL of the posterior from N(0, 1), and dynamics_mse the mean squared error between the dynamics'
output on frame t's detached posterior mean and frame t + 1's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.models.options import positive_int
from vision_bench.models.patch_transformer import Transformer, linear
from vision_bench.models.svib_ssm.layers import conv_relu, normal_kl, normal_nll

REDUCTION = 16
"""The encoder halves the image four times; the image side must be a multiple of 16."""


@dataclass(frozen=True)
class SsmVaeSettings:
    """SSM-VAE's sizes and objective weights; the defaults are SVIB's (configs/dynamic_vae.py, image size 128)."""

    image_size: int = 128
    image_channels: int = 3
    cnn_hidden: int = 64
    latent: int = 64
    dynamics_blocks: int = 4
    dynamics_heads: int = 1
    sigma: float = 0.01
    beta: float = 1.0

    def __post_init__(self) -> None:
        for name in ("image_size", "image_channels", "cnn_hidden", "latent", "dynamics_blocks", "dynamics_heads"):
            positive_int(getattr(self, name), name)
        if self.image_size % REDUCTION:
            raise ConfigError(
                f"image_size={self.image_size} is not a multiple of {REDUCTION}; SSM-VAE's encoder halves it four "
                f"times (use a multiple of {REDUCTION}, such as 64 or 128)"
            )
        if not self.sigma > 0:
            raise ConfigError(f"sigma must be positive, got {self.sigma!r}")


SVIB_SSM_VAE = SsmVaeSettings()


class SsmVaeLoss(NamedTuple):
    """SSM-VAE's objective on a video: the loss, the reconstruction (B, T, C, H, W) clamped to [0, 1] as
    SVIB returns it, and the loss's three terms."""

    loss: torch.Tensor
    recon: torch.Tensor
    nll: torch.Tensor
    kl: torch.Tensor
    dynamics_mse: torch.Tensor


class SsmVae(nn.Module):
    """SVIB's SSM-VAE (`DynamicVAE`). `loss(video)` is its training objective; `predict_latent(image)`
    the next-frame latent a probe decodes (`NextFrameLatentPredictorVAE`)."""

    def __init__(self, settings: SsmVaeSettings = SVIB_SSM_VAE) -> None:
        super().__init__()
        self.settings = settings
        hidden, latent, channels = settings.cnn_hidden, settings.latent, settings.image_channels
        self.side = settings.image_size // REDUCTION
        flat = hidden * self.side * self.side
        self.encoder_cnn = nn.Sequential(
            *conv_relu(channels, hidden, 5, 2, 2),
            *conv_relu(hidden, hidden, 5, 2, 2),
            *conv_relu(hidden, hidden, 5, 2, 2),
            *conv_relu(hidden, hidden, 5, 2, 2),
        )
        self.encoder_mlp = nn.Sequential(linear(flat, 4 * latent, relu=True), nn.ReLU(), linear(4 * latent, 2 * latent))
        self.decoder_mlp = nn.Sequential(linear(latent, 4 * latent, relu=True), nn.ReLU(), linear(4 * latent, flat))
        self.decoder_cnn = nn.Sequential(
            nn.ConvTranspose2d(hidden, hidden, 5, 2, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, hidden, 5, 2, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, hidden, 5, 2, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, channels, 5, 2, 2, 1),
        )
        self.dynamics = Transformer(settings.dynamics_blocks, latent, settings.dynamics_heads, 0.0, cross=False)

    def encode(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, C, S, S) images -> the posterior's mean and log-variance, each (N, latent)."""
        posterior = self.encoder_mlp(self.encoder_cnn(images).flatten(start_dim=1))
        mean, logvar = posterior.split([self.settings.latent, self.settings.latent], dim=-1)
        return mean, logvar

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """(N, latent) -> (N, C, S, S): the decoded mean, unclamped."""
        features = self.decoder_mlp(latents).reshape(-1, self.settings.cnn_hidden, self.side, self.side)
        return self.decoder_cnn(features)

    def loss(self, video: torch.Tensor, generator: torch.Generator | None = None) -> SsmVaeLoss:
        """SVIB's objective on a (B, T, C, H, W) video of T >= 2 frames.

        The latent is sampled as mean + exp(logvar / 2) x eps, eps ~ N(0, 1) drawn from `generator` when
        one is given, else from the global RNG as SVIB does.
        """
        batch, frames, channels, height, width = video.shape
        frames_flat = video.flatten(end_dim=1)
        q_mu, q_logvar = self.encode(frames_flat)
        kl = normal_kl(q_mu, q_logvar, torch.zeros_like(q_mu), torch.zeros_like(q_logvar)).mean()
        if generator is None:
            eps = torch.randn_like(q_mu)
        else:
            eps = torch.randn(q_mu.shape, generator=generator, dtype=q_mu.dtype, device=q_mu.device)
        z = q_mu + (q_logvar.exp() ** 0.5) * eps
        recon = self.decode(z)
        log_variance = torch.full_like(recon, math.log(self.settings.sigma**2))
        nll = normal_nll(recon, log_variance, frames_flat).mean()
        means = q_mu.reshape(batch, frames, 1, -1).detach()
        predicted = self.dynamics(means[:, :-1].flatten(end_dim=1)).reshape(batch, frames - 1, 1, -1)
        dynamics_mse = ((predicted - means[:, 1:]) ** 2).mean()
        loss = nll + self.settings.beta * kl + dynamics_mse
        return SsmVaeLoss(loss, recon.reshape(batch, frames, channels, height, width).clamp(0.0, 1.0), nll, kl,
                          dynamics_mse)

    def predict_latent(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, S, S) -> (B, 1, latent): one dynamics step from each image's posterior mean, SVIB's
        `NextFrameLatentPredictorVAE` (the latent its probe decodes)."""
        mean, _ = self.encode(images)
        return self.dynamics(mean.unsqueeze(1))
