"""`vit:<timm vit>`: a timm VisionTransformer whose patch tokens are decoded to pixels.

The ViT is built at the model's image size (img_size) with any patch size it accepts; its patch
tokens (prefix tokens dropped) are decoded to pixels: `linear` maps each token to its patch's
pixels; `transformer` is SVIB's patch-transformer decoder (`vision_bench.models.patch_transformer`:
one sin-cos query per 4-pixel output patch, cross-attending to the tokens; `decoder_depth` blocks,
SVIB's 8 by default). `svib:i2i-vit` is SVIB's whole I2I-ViT, encoder included. With task
conditioning, the task code becomes extra tokens next to the class token, so every block can
attend to it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models.base import TrainableModel
from vision_bench.models.conditioning import TaskCodeEmbedding, resolve_vocab_size
from vision_bench.models.encoders import (
    TimmBackbone,
    TimmOptionError,
    create_timm_model,
    plain_timm_backbone,
    timm_weights,
)
from vision_bench.models.heads import build_head
from vision_bench.models.options import SharedOptions, positive_int
from vision_bench.models.patch_transformer import SVIB_DECODER, PatchTransformerDecoder, unpatchify
from vision_bench.registry import unknown_name_message

DECODERS = ("linear", "transformer")


class TokenDecoder(nn.Module):
    """(B, N, D) patch tokens -> (B, out_channels, S, S): each token linearly mapped to its patch's pixels."""

    def __init__(self, dim: int, grid_size: int, patch_size: int, out_channels: int) -> None:
        super().__init__()
        self.grid_size = grid_size
        self.patch_size = patch_size
        self.out_channels = out_channels
        self.project = nn.Linear(dim, patch_size * patch_size * out_channels)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return unpatchify(self.project(tokens), self.grid_size, self.patch_size, self.out_channels)


def _timm_options(shared: SharedOptions, options: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments for timm: the options set, img_size = image_size, no classifier."""
    if "img_size" in options:
        raise ConfigError("set the image size with image_size, not img_size (the model passes it to timm)")
    patch_size = options.get("patch_size")
    if patch_size is not None and shared.image_size % positive_int(patch_size, "patch_size"):
        raise ConfigError(
            f"image_size={shared.image_size} is not a multiple of patch_size={patch_size}; "
            "use a patch size that divides it (8 or 16 for 128)"
        )
    return {**{k: v for k, v in options.items() if v is not None}, "num_classes": 0, "img_size": shared.image_size}


def _build_vit(backbone: str, shared: SharedOptions, timm_options: dict[str, Any]) -> VisionTransformer:
    weights = timm_weights(backbone, shared.pretrained, shared.pretrained_file)
    try:
        encoder = create_timm_model(backbone, weights=weights, **timm_options)
    except TimmOptionError as error:
        if error.option != "img_size":
            raise
        encoder = None
    if not isinstance(encoder, VisionTransformer):
        kind = "a CNN or another model that takes no img_size" if encoder is None else f"a {type(encoder).__name__}"
        raise ConfigError(
            f"vit: needs a timm VisionTransformer (vit_*, deit_*, test_vit*); {backbone!r} is {kind}. "
            f"For a CNN use unet:{backbone} or bottleneck:{backbone}"
        )
    encoder.attn_pool = None  # every patch token is decoded: a pooling head would hold unused weights
    return encoder


class ViTModel(TrainableModel):
    """timm VisionTransformer encoder (+ task tokens) and a patch-token decoder."""

    def __init__(
        self,
        backbone: str,
        shared: SharedOptions,
        decoder: str = "linear",
        decoder_depth: int = SVIB_DECODER.depth,
        **backbone_options: Any,
    ) -> None:
        decoder = decoder or "linear"
        if decoder not in DECODERS:
            raise UnknownNameError(unknown_name_message("vit decoder", str(decoder), DECODERS))
        super().__init__(
            f"vit:{backbone}",
            family="vit",
            backbone=backbone,
            image_size=shared.image_size,
            pixel_head=build_head(shared.head, shared.loss, shared.palette_colors, shared.background_weight),
            task_vocab_size=resolve_vocab_size(shared.task_conditioning),
        )
        self.timm_name = backbone
        self.timm_kwargs = _timm_options(shared, backbone_options)
        self.encoder = _build_vit(backbone, shared, self.timm_kwargs)
        patch_height, patch_width = self.encoder.patch_embed.patch_size
        if patch_height != patch_width or shared.image_size % patch_height:
            raise ConfigError(
                f"{backbone} has {patch_height}x{patch_width} patches, which do not tile {shared.image_size}x"
                f"{shared.image_size} images; pass a square patch_size that divides image_size"
            )
        self.patch_size = patch_height
        self.decoder_kind = decoder
        self.decoder_depth = positive_int(decoder_depth, "decoder_depth")
        dim = self.encoder.embed_dim
        self.task_tokens = None if self.task_vocab_size is None else TaskCodeEmbedding(self.task_vocab_size, dim)
        channels = self.pixel_head.channels
        if decoder == "transformer":
            settings = replace(SVIB_DECODER, depth=self.decoder_depth)
            self.decoder = PatchTransformerDecoder(dim, shared.image_size, channels, settings)
        else:
            self.decoder = TokenDecoder(dim, shared.image_size // patch_height, patch_height, channels)

    def decode(self, images: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """timm's `forward_features`, with the task tokens inserted after the position embedding."""
        vit = self.encoder
        x = vit.patch_drop(vit._pos_embed(vit.patch_embed(images)))
        prefix = vit.num_prefix_tokens
        if self.task_tokens is not None:
            x = torch.cat([self.task_tokens(task_code).to(x.dtype), x], dim=1)
            prefix += task_code.shape[1]
        x = vit.fc_norm(vit.norm(vit.blocks(vit.norm_pre(x))))  # one of the two norms is Identity
        return self.decoder(x[:, prefix:])

    def timm_backbone(self) -> TimmBackbone:
        return plain_timm_backbone(self.timm_name, self.timm_kwargs, self.encoder.state_dict())

    def details(self) -> dict[str, Any]:
        details = {**super().details(), "patch_size": self.patch_size, "decoder": self.decoder_kind}
        if self.decoder_kind == "transformer":
            details["decoder_depth"] = self.decoder_depth
        return details
