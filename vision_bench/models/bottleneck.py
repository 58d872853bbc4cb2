"""`bottleneck:<timm cnn>`: the whole image squeezed through one vector, as in SVIB's I2I-CNN.

The bottleneck is SVIB's; the decoder is not (SVIB's I2I-CNN, with its own CNN and its
patch-transformer decoder, is `svib:i2i-cnn`).

The encoder's deepest feature map is globally pooled and projected to a `latent_dim` vector (the
single-vector bottleneck, no skip connections), which a linear layer reshapes to a map at the
encoder's total stride; upsample + convolution stages bring it back to full resolution. With task
conditioning, FiLM modulates the deepest feature map, hence the vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.models.base import MODELS, TrainableModel
from vision_bench.models.blocks import DECODER_WIDTH_HELP, conv_block, halvings, width_at
from vision_bench.models.encoders import FeatureEncoder, TimmBackbone
from vision_bench.models.options import FamilyOptions, SharedOptions, option, positive_int


@dataclass(frozen=True)
class BottleneckOptions(FamilyOptions):
    latent_dim: int = option(256, "size of the one vector the whole image is squeezed through")
    decoder_width: int = option(16, DECODER_WIDTH_HELP)

    def __post_init__(self) -> None:
        positive_int(self.latent_dim, "latent_dim")
        positive_int(self.decoder_width, "decoder_width")


class VectorDecoder(nn.Module):
    """(B, latent_dim) -> (B, out_channels, S, S) through a (start_size x start_size) map, no skips."""

    def __init__(self, latent_dim: int, start_size: int, start_reduction: int, out_channels: int, width: int) -> None:
        super().__init__()
        self.start_size = start_size
        self.start_channels = width_at(start_reduction, width)
        self.expand = nn.Sequential(
            nn.Linear(latent_dim, self.start_channels * start_size * start_size), nn.ReLU(inplace=True)
        )
        self.up_reductions = halvings(start_reduction)
        self.up_blocks = nn.ModuleList()
        in_channels = self.start_channels
        for reduction in self.up_reductions:
            self.up_blocks.append(conv_block(in_channels, width_at(reduction, width)))
            in_channels = width_at(reduction, width)
        self.output = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, vector: torch.Tensor, image_size: int) -> torch.Tensor:
        x = self.expand(vector).view(-1, self.start_channels, self.start_size, self.start_size)
        for reduction, block in zip(self.up_reductions, self.up_blocks):
            x = block(F.interpolate(x, size=(image_size // reduction, image_size // reduction), mode="nearest"))
        return self.output(x)


@MODELS.register(
    "bottleneck",
    "a timm CNN (or hierarchical transformer) encoder squeezed to one vector (latent_dim), upsampled back by "
    "convolutions without skips",
)
class BottleneckModel(TrainableModel):
    """timm CNN encoder -> global pool -> one vector -> upsampling decoder."""

    family = "bottleneck"
    usage = "bottleneck:<timm cnn>"
    example_backbone = "resnet18"
    test_backbone = "test_resnet"
    options = BottleneckOptions
    takes_timm_options = True

    def __init__(self, backbone: str, shared: SharedOptions, options: BottleneckOptions, **timm_options: Any) -> None:
        super().__init__(backbone, shared)
        self.latent_dim = options.latent_dim
        self.decoder_width = options.decoder_width
        self.encoder = FeatureEncoder(
            backbone, family="bottleneck", image_size=shared.image_size, pretrained=shared.pretrained,
            pretrained_file=shared.pretrained_file, **timm_options,
        )
        self.normalize_like(self.encoder.features, shared)
        deepest = self.encoder.channels[-1]
        self.film = self.task_film([deepest])
        self.squeeze = nn.Linear(deepest, options.latent_dim)
        stride = self.encoder.total_stride
        self.decoder = VectorDecoder(
            options.latent_dim, shared.image_size // stride, stride, self.pixel_head.channels, options.decoder_width
        )

    def encode(self, images: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """(B, 3, S, S) -> the (B, latent_dim) bottleneck vector."""
        deepest = self.encoder(images)[-1]
        if self.film is not None:
            deepest = self.film([deepest], task_code)[0]
        return self.squeeze(deepest.mean(dim=(2, 3)))

    def raw_output(self, images: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        return self.decoder(self.encode(images, task_code), self.image_size)

    def timm_backbone(self) -> TimmBackbone:
        return self.encoder.timm_backbone()

    def details(self) -> dict[str, Any]:
        return {**super().details(), "latent_dim": self.latent_dim, "decoder_width": self.decoder_width}
