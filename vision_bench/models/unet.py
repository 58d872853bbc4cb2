"""`unet:<timm cnn>`: a timm feature encoder (a CNN, or a hierarchical transformer such as swin) and a U-Net
decoder with skips back to full resolution.

The decoder walks the encoder's feature maps from deep to shallow (upsample, concatenate the skip,
two convolutions), then upsamples by 2 until full resolution, where the input image itself is the
last skip, so that unchanged pixels can be copied exactly. With task conditioning, FiLM modulates
every encoder feature map before it reaches the decoder.
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
class UNetOptions(FamilyOptions):
    decoder_width: int = option(16, DECODER_WIDTH_HELP)

    def __post_init__(self) -> None:
        positive_int(self.decoder_width, "decoder_width")


class UNetDecoder(nn.Module):
    """Feature maps (shallow to deep) and the input image -> (B, out_channels, S, S)."""

    def __init__(self, channels: list[int], reductions: list[int], out_channels: int, width: int) -> None:
        super().__init__()
        self.skip_blocks = nn.ModuleList()
        in_channels = channels[-1]
        for skip_channels, reduction in zip(channels[-2::-1], reductions[-2::-1]):
            out = width_at(reduction, width)
            self.skip_blocks.append(conv_block(in_channels + skip_channels, out))
            in_channels = out
        self.up_reductions = halvings(reductions[0])
        self.up_blocks = nn.ModuleList()
        for reduction in self.up_reductions:
            out = width_at(reduction, width)
            image_channels = 3 if reduction == 1 else 0
            self.up_blocks.append(conv_block(in_channels + image_channels, out))
            in_channels = out
        self.output = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, features: list[torch.Tensor], images: torch.Tensor) -> torch.Tensor:
        x = features[-1]
        for skip, block in zip(features[-2::-1], self.skip_blocks):
            x = block(torch.cat([F.interpolate(x, size=skip.shape[-2:], mode="nearest"), skip], dim=1))
        size = images.shape[-1]
        for reduction, block in zip(self.up_reductions, self.up_blocks):
            x = F.interpolate(x, size=(size // reduction, size // reduction), mode="nearest")
            if reduction == 1:
                x = torch.cat([x, images.to(x.dtype)], dim=1)
            x = block(x)
        return self.output(x)


@MODELS.register(
    "unet",
    "a timm CNN (or hierarchical transformer: swin, ...) feature encoder and a U-Net decoder with skip "
    "connections back to full resolution",
)
class UNetModel(TrainableModel):
    """timm CNN encoder + U-Net decoder (+ FiLM task conditioning)."""

    family = "unet"
    usage = "unet:<timm cnn>"
    example_backbone = "resnet18"
    test_backbone = "test_resnet"
    options = UNetOptions
    takes_timm_options = True

    def __init__(self, backbone: str, shared: SharedOptions, options: UNetOptions, **timm_options: Any) -> None:
        super().__init__(backbone, shared)
        self.encoder = FeatureEncoder(
            backbone, family="unet", image_size=shared.image_size, pretrained=shared.pretrained,
            pretrained_file=shared.pretrained_file, **timm_options,
        )
        self.normalize_like(self.encoder.features, shared)
        self.film = self.task_film(self.encoder.channels)
        self.decoder_width = options.decoder_width
        self.decoder = UNetDecoder(
            self.encoder.channels, self.encoder.reductions, self.pixel_head.channels, options.decoder_width
        )

    def raw_output(self, images: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        features = self.encoder(images)
        if self.film is not None:
            features = self.film(features, task_code)
        return self.decoder(features, images)

    def timm_backbone(self) -> TimmBackbone:
        return self.encoder.timm_backbone()

    def details(self) -> dict[str, Any]:
        return {**super().details(), "strides": self.encoder.reductions, "decoder_width": self.decoder_width}
