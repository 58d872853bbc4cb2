"""`vit:<timm vit>`: a timm VisionTransformer (or a timm RoPE ViT) whose patch tokens are decoded to pixels.

The ViT is built at the model's image size (img_size) with any patch size it accepts; its patch
tokens (prefix tokens dropped) are decoded to pixels: `linear` maps each token to its patch's
pixels; `transformer` is SVIB's patch-transformer decoder (`vision_bench.models.patch_transformer`:
one sin-cos query per 4-pixel output patch, cross-attending to the tokens; `decoder_depth` blocks,
SVIB's 8 by default). `svib:i2i-vit` is SVIB's whole I2I-ViT, encoder included. With task
conditioning, the task code becomes extra tokens next to the class token, so every block can
attend to it.

Positions: timm's learned table (`positions='learned'`, timm's default), a fixed 2D sin-cos table
(`positions='sincos'`, timm's `build_sincos2d_pos_embed`, MAE's form, frozen), or rotary embeddings in
every attention layer: name one of timm's RoPE ViTs (`vit_small_patch16_rope_224` and the other
`vit_*_rope_*` models, timm's `Eva` class; `_ape` ones also keep an absolute table). The task tokens of
a RoPE ViT get no rotation (they have no place on the grid). For grid studies, one patch should be one
cell: a `cell:K:top-left` layout with `patch_size: K` (configs/paper/envgen_*.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from timm.layers import build_sincos2d_pos_embed
from timm.models.eva import Eva
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models.base import MODELS, TrainableModel
from vision_bench.models.encoders import (
    TimmBackbone,
    TimmOptionError,
    create_timm_model,
    plain_timm_backbone,
    timm_weights,
)
from vision_bench.models.options import FamilyOptions, SharedOptions, option, positive_int
from vision_bench.models.patch_transformer import SVIB_DECODER, PatchTransformerDecoder, unpatchify
from vision_bench.registry import unknown_name_message

DECODERS = ("linear", "transformer")
POSITIONS = ("learned", "sincos")


@dataclass(frozen=True)
class ViTOptions(FamilyOptions):
    decoder: str = option("linear", "'linear' (each patch token to its pixels) or 'transformer' (SVIB's patch decoder)")
    decoder_depth: int = option(SVIB_DECODER.depth, "blocks of the transformer decoder (SVIB's 8)")
    patch_size: int | None = option(None, "the ViT's patch size in pixels (a divisor of image_size); None: timm's")
    positions: str = option("learned", "the absolute position table: 'learned' (timm's) or 'sincos' (fixed 2D "
                            "sin-cos); for rotary positions name a timm RoPE ViT (vit_small_patch16_rope_224)")

    def __post_init__(self) -> None:
        if self.decoder not in DECODERS:
            raise UnknownNameError(unknown_name_message("vit decoder", str(self.decoder), DECODERS))
        if self.positions not in POSITIONS:
            raise UnknownNameError(unknown_name_message("vit positions", str(self.positions), POSITIONS))
        positive_int(self.decoder_depth, "decoder_depth")
        if self.patch_size is not None:
            positive_int(self.patch_size, "patch_size")


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


def _timm_options(shared: SharedOptions, patch_size: int | None, options: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments for timm: the options set, the patch size if set, img_size = image_size, no
    classifier."""
    if "img_size" in options:
        raise ConfigError("set the image size with image_size, not img_size (the model passes it to timm)")
    timm_options = {k: v for k, v in options.items() if v is not None}
    if patch_size is not None:
        if shared.image_size % patch_size:
            raise ConfigError(
                f"image_size={shared.image_size} is not a multiple of patch_size={patch_size}; "
                "use a patch size that divides it (8 or 16 for 128)"
            )
        timm_options["patch_size"] = patch_size
    return {**timm_options, "num_classes": 0, "img_size": shared.image_size}


def _build_vit(backbone: str, shared: SharedOptions, timm_options: dict[str, Any]) -> VisionTransformer | Eva:
    weights = timm_weights(backbone, shared.pretrained, shared.pretrained_file)
    try:
        encoder = create_timm_model(backbone, weights=weights, **timm_options)
    except TimmOptionError as error:
        if error.option != "img_size":
            raise
        encoder = None
    if not isinstance(encoder, (VisionTransformer, Eva)):
        kind = "a CNN or another model that takes no img_size" if encoder is None else f"a {type(encoder).__name__}"
        raise ConfigError(
            f"vit: needs a timm VisionTransformer (vit_*, deit_*, test_vit*) or RoPE ViT (vit_*_rope_*); {backbone!r} "
            f"is {kind}. For a CNN use unet:{backbone} or bottleneck:{backbone}"
        )
    if getattr(encoder, "attn_pool", None) is not None:  # every patch token is decoded: a pooling head is unused
        encoder.register_module("attn_pool", None)
    return encoder


def fix_sincos_positions(encoder: VisionTransformer | Eva, backbone: str) -> None:
    """Replace the encoder's absolute position table by fixed 2D sin-cos values (rows of the class and register
    tokens, when the table has them, are zero, as in MAE), frozen so that training leaves them as they are."""
    table = encoder.pos_embed
    if table is None:
        raise ConfigError(f"{backbone} has no absolute position table (a RoPE ViT), so positions='sincos' has nothing "
                          "to set; leave positions unset, or name a RoPE ViT with one (vit_small_patch16_rope_ape_224)")
    grid = list(encoder.patch_embed.grid_size)
    values = build_sincos2d_pos_embed(grid, dim=table.shape[-1])
    prefix = table.shape[1] - values.shape[0]
    with torch.no_grad():
        table.zero_()
        table[0, prefix:] = values.to(table.dtype)
    table.requires_grad_(False)


def identity_rotations(rope: torch.Tensor, count: int) -> torch.Tensor:
    """`rope` (N, 2 d) sin-cos rows (timm's `RotaryEmbeddingCat` form) with `count` rows of no rotation (sin 0,
    cos 1) in front: the rows of tokens inserted before the patch tokens."""
    sin, cos = rope.chunk(2, dim=-1)
    fixed = torch.cat([sin.new_zeros(count, sin.shape[-1]), cos.new_ones(count, cos.shape[-1])], dim=-1)
    return torch.cat([fixed, rope], dim=0)


@MODELS.register(
    "vit",
    "a timm ViT at the image size, patch tokens decoded to pixels (decoder='linear', or 'transformer': SVIB's "
    "decoder)",
)
class ViTModel(TrainableModel):
    """timm VisionTransformer encoder (+ task tokens) and a patch-token decoder."""

    family = "vit"
    usage = "vit:<timm vit>"
    example_backbone = "vit_small_patch16_224"
    test_backbone = "test_vit"
    options = ViTOptions
    takes_timm_options = True
    decoder: PatchTransformerDecoder | TokenDecoder

    def __init__(self, backbone: str, shared: SharedOptions, options: ViTOptions, **timm_options: Any) -> None:
        super().__init__(backbone, shared)
        self.timm_name = backbone
        self.timm_kwargs = _timm_options(shared, options.patch_size, timm_options)
        self.encoder = _build_vit(backbone, shared, self.timm_kwargs)
        self.normalize_like(self.encoder, shared)
        self.positions = options.positions
        if options.positions == "sincos":
            fix_sincos_positions(self.encoder, backbone)
        if isinstance(self.encoder, Eva) and getattr(self.encoder, "rope_mixed", False) and \
                self.task_vocab_size is not None:
            raise ConfigError(f"{backbone} learns its rotary frequencies per layer (rope_mixed), which task tokens "
                              "cannot join; use an axial RoPE ViT (vit_small_patch16_rope_224) with task conditioning")
        patch_height, patch_width = self.encoder.patch_embed.patch_size
        if patch_height != patch_width or shared.image_size % patch_height:
            raise ConfigError(
                f"{backbone} has {patch_height}x{patch_width} patches, which do not tile {shared.image_size}x"
                f"{shared.image_size} images; pass a square patch_size that divides image_size"
            )
        self.patch_size = patch_height
        self.decoder_kind = options.decoder
        self.decoder_depth = options.decoder_depth
        dim = self.encoder.embed_dim
        self.task_tokens = self.task_tokens_of_width(dim)
        channels = self.pixel_head.channels
        if options.decoder == "transformer":
            settings = replace(SVIB_DECODER, depth=self.decoder_depth)
            self.decoder = PatchTransformerDecoder(dim, shared.image_size, channels, settings)
        else:
            self.decoder = TokenDecoder(dim, shared.image_size // patch_height, patch_height, channels)

    def raw_output(self, images: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """timm's `forward_features`, with the task tokens inserted after the position embedding."""
        if isinstance(self.encoder, Eva):
            return self.decoder(self._rope_features(images, task_code))
        vit = self.encoder
        x = vit.patch_drop(vit._pos_embed(vit.patch_embed(images)))
        prefix = vit.num_prefix_tokens
        if self.task_tokens is not None:
            assert task_code is not None, "forward checks the task code of a task-conditioned model"
            x = torch.cat([self.task_tokens(task_code).to(x.dtype), x], dim=1)
            prefix += task_code.shape[1]
        x = vit.fc_norm(vit.norm(vit.blocks(vit.norm_pre(x))))  # one of the two norms is Identity
        return self.decoder(x[:, prefix:])

    def _rope_features(self, images: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """The patch tokens of a timm RoPE ViT (`Eva.forward_features`), the task tokens placed after the class
        and register tokens with rows of no rotation, so the patch tokens keep their own rotations."""
        vit = self.encoder
        assert isinstance(vit, Eva)
        x, rope = vit._pos_embed(vit.patch_embed(images))
        prefix = vit.num_prefix_tokens
        if self.task_tokens is not None:
            assert task_code is not None, "forward checks the task code of a task-conditioned model"
            x = torch.cat([x[:, :prefix], self.task_tokens(task_code).to(x.dtype), x[:, prefix:]], dim=1)
            prefix += task_code.shape[1]
            if rope is not None:
                rope = identity_rotations(rope, task_code.shape[1])
        x = vit.norm_pre(x)
        for block in vit.blocks:
            x = block(x, rope=rope)
        return vit.fc_norm(vit.norm(x))[:, prefix:]  # one of the two norms is Identity

    def timm_backbone(self) -> TimmBackbone:
        return plain_timm_backbone(self.timm_name, self.timm_kwargs, self.encoder.state_dict())

    def details(self) -> dict[str, Any]:
        details = {**super().details(), "patch_size": self.patch_size, "decoder": self.decoder_kind,
                   "positions": "none" if self.encoder.pos_embed is None else self.positions,
                   "rope": isinstance(self.encoder, Eva) and self.encoder.rope is not None}
        if self.decoder_kind == "transformer":
            details["decoder_depth"] = self.decoder_depth
        return details
