"""`MODELS` (families and baselines) and `create_model(name, **options)`.

A model name is a family, a colon and a timm model name for the network families
(`unet:resnet18`, `bottleneck:resnet18`, `vit:vit_small_patch16_224`), `svib:` and one of SVIB's
baselines (`svib:i2i-cnn`, `svib:i2i-vit`, `svib:oracle`), or a baseline name alone
(`copy_input`, `mean_target`, `ground_truth`). The old name `oracle` fails, pointing to `ground_truth`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models.base import ImageToImageModel
from vision_bench.models.baselines import CopyInputModel, GroundTruthModel, MeanTargetModel
from vision_bench.models.bottleneck import BottleneckModel
from vision_bench.models.encoders import is_timm_model
from vision_bench.models.options import split_options
from vision_bench.models.svib import create_svib_model
from vision_bench.models.unet import UNetModel
from vision_bench.models.vit import ViTModel
from vision_bench.registry import Registry


@dataclass(frozen=True)
class ModelFamily:
    """How to build one family: `build(name after the colon or None, shared options, family and backbone options)`."""

    usage: str
    build: Callable[..., ImageToImageModel]
    example_backbone: str | None = None

    @property
    def needs_backbone(self) -> bool:
        return self.example_backbone is not None


def _network(model_class: type[ImageToImageModel]) -> Callable[..., ImageToImageModel]:
    return lambda backbone, shared, rest: model_class(backbone, shared, **rest)


def _baseline(model_class: type[ImageToImageModel]) -> Callable[..., ImageToImageModel]:
    return lambda backbone, shared, rest: model_class(shared, **rest)


MODELS: Registry[ModelFamily] = Registry("model")
MODELS.add(
    "unet",
    ModelFamily("unet:<timm cnn>", _network(UNetModel), "resnet18"),
    "a timm CNN (or hierarchical transformer: swin, ...) feature encoder and a U-Net decoder with skip "
    "connections back to full resolution",
)
MODELS.add(
    "bottleneck",
    ModelFamily("bottleneck:<timm cnn>", _network(BottleneckModel), "resnet18"),
    "a timm CNN (or hierarchical transformer) encoder squeezed to one vector (latent_dim), upsampled back by "
    "convolutions without skips",
)
MODELS.add(
    "vit",
    ModelFamily("vit:<timm vit>", _network(ViTModel), "vit_small_patch16_224"),
    "a timm ViT at the image size, patch tokens decoded to pixels (decoder='linear', or 'transformer': SVIB's decoder)",
)
MODELS.add(
    "svib",
    ModelFamily("svib:<i2i-cnn|i2i-vit|oracle>", lambda preset, shared, rest: create_svib_model(preset, shared, **rest),
                "i2i-vit"),
    "SVIB's baselines, its settings: a CNN (one vector) or ViT encoder, or the input grid and task code "
    "(oracle), read by SVIB's patch-transformer decoder",
)
MODELS.add(
    "copy_input",
    ModelFamily("copy_input", _baseline(CopyInputModel)),
    "baseline: predicts the input image unchanged (the score of doing nothing)",
)
MODELS.add(
    "mean_target",
    ModelFamily("mean_target", _baseline(MeanTargetModel)),
    "baseline: predicts the mean training target; call fit(training batches) first",
)
MODELS.add(
    "ground_truth",
    ModelFamily("ground_truth", _baseline(GroundTruthModel)),
    "baseline: the true sequence applied to the true input grid, rendered with render_spec (the ceiling)",
)
RENAMED = {
    "oracle": "'oracle' is now 'ground_truth' (it draws the true output grid); SVIB's Oracle, "
    "trained on the input grid, is 'svib:oracle'",
}
"""Old model and baseline names -> the one-line error that points to the new name."""


def check_renamed(name: str) -> None:
    """An `UnknownNameError` pointing to the new name when `name` is an old one (`RENAMED`)."""
    if name in RENAMED:
        raise UnknownNameError(RENAMED[name])


def create_model(name: str, **options: Any) -> ImageToImageModel:
    """The model `name` ('family:timm_name', 'svib:preset' or a baseline) built with `options` (module docstring).

    Shared options: image_size=128, head='rgb'|'palette', loss='mse'|'l1'|'lpips' or a weighted sum such
    as 'mse+0.1*lpips' (rgb), palette_colors
    ((10, 3) uint8, palette head), background_weight=0.2, task_conditioning=None (off, except for
    svib:oracle; True or a vocabulary size), pretrained=False (timm's pretrained weights, from the Hugging
    Face cache), pretrained_file=None (local weights), render_spec
    (ground_truth). Family options: decoder_width (unet, bottleneck), latent_dim (bottleneck),
    decoder / decoder_depth / patch_size (vit), grid_size (svib:oracle); anything else goes to
    timm.create_model.
    """
    family_name, colon, backbone = str(name).partition(":")
    check_renamed(family_name)
    if not colon and family_name not in MODELS:
        _suggest_family_for_timm_name(family_name)
    family = MODELS[family_name]
    if family.needs_backbone and not backbone:
        raise ConfigError(
            f"model {name!r} needs a name after the colon ({family.usage}), "
            f"e.g. {family_name}:{family.example_backbone}"
        )
    if not family.needs_backbone and colon:
        raise ConfigError(f"{family_name} is a baseline and takes no backbone; use {family_name!r}")
    shared, rest = split_options(options)
    return family.build(backbone or None, shared, rest)


def _suggest_family_for_timm_name(name: str) -> None:
    if is_timm_model(name):
        raise ConfigError(
            f"{name!r} is a timm model, not a model family; prefix a family: unet:{name}, "
            f"bottleneck:{name} or vit:{name}"
        )


__all__ = ["MODELS", "RENAMED", "ModelFamily", "check_renamed", "create_model"]
