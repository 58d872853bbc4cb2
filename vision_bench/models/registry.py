"""`MODELS` (families and baselines) and `create_model(name, **options)`.

A model name is a family, a colon and a timm model name for the network families
(`unet:resnet18`, `bottleneck:resnet18`, `vit:vit_small_patch16_224`), `svib:` and one of SVIB's
baselines (`svib:i2i-cnn`, `svib:i2i-vit`, `svib:oracle`, the state-space models `svib:ssm-vae` and `svib:ssm-slot`)
and `svib:cell-oracle`, `cogitao:` and one of
COGITAO's (`cogitao:resnet`, `cogitao:vanilla-tf`, `cogitao:grid-tf`, `cogitao:pl-tf`), `gcog:` and one of gCOG's
(`gcog:rnn`, `gcog:gru`, `gcog:sst`, `gcog:dst`, `gcog:crossattn`, `gcog:perceiver`), `carc:mlc` (C-ARC's MLC
encoder-decoder), or a baseline name alone
(`copy_input`, `mean_target`, `ground_truth`). The old name `oracle` fails, pointing to `ground_truth`,
and weights saved under a name that now names another model fail to load, pointing to the new name
(`state_check.renamed_weights`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models.base import MODELS, ImageToImageModel
from vision_bench.models.encoders import is_timm_model
from vision_bench.models.options import split_options

# isort: off
# Importing a family's module registers it; the order of these imports is the order `vision-bench models` lists.
from vision_bench.models import unet, bottleneck, vit, svib, cogitao, gcog, carc_mlc, baselines  # noqa: F401
# isort: on

MAX_PARAMETERS = 2_000_000_000
"""The most parameters `create_model` builds: 8 GB of float32 weights (training needs about four times that, for
gradients and AdamW's state), beyond any image-to-image model trained here. Over it, an option is almost surely a typo
(`decoder_width: 10000000` asks for 4e11), and building would fail deep in the allocator or exhaust memory."""

RENAMED = {
    "oracle": "'oracle' is now 'ground_truth' (it draws the true output grid); SVIB's Oracle, "
    "a trained model, is 'svib:oracle'",
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
    svib:cell-oracle; True or a vocabulary size), task_code_length=4 (tokens per code: the study's
    task_code_length), pretrained=False (timm's pretrained weights, from the Hugging
    Face cache), pretrained_file=None (local weights), render_spec
    (ground_truth). Family options: those the family declares (`MODELS[family].options`, listed by
    `vision-bench models --describe`); for unet, bottleneck and vit anything else goes to timm.create_model.
    An option that only other families declare is refused when set and ignored when None.
    """
    family_name, colon, backbone = str(name).partition(":")
    family = model_family(name)
    needs_backbone = family.example_backbone is not None
    if needs_backbone and not backbone:
        raise ConfigError(
            f"model {name!r} needs a name after the colon ({family.usage}), "
            f"e.g. {family_name}:{family.example_backbone}"
        )
    if not needs_backbone and colon:
        raise ConfigError(f"{family_name} is a baseline and takes no backbone; use {family_name!r}")
    shared, rest = split_options(options)
    own, extra = family.options.split(rest)
    extra = _without_other_families_options(family, str(name), extra)
    check_size(str(name), lambda: family.build(backbone or None, replace(shared, pretrained=False,
                                                                         pretrained_file=None), own, extra))
    model = family.build(backbone or None, shared, own, extra)
    model.build_options = dict(options)
    if model.input_norm is not None and options.get("input_normalization") is None:  # from the pretrained config
        model.build_options["input_normalization"] = model.input_norm.as_option()
    return model


def model_family(name: str) -> type[ImageToImageModel]:
    """The family entry (`MODELS`) of the model `name`, or the error `create_model` gives for it: an old name, a
    timm name without a family, an unknown family."""
    family_name, colon, _ = str(name).partition(":")
    check_renamed(family_name)
    if not colon and family_name not in MODELS:
        _suggest_family_for_timm_name(family_name)
    return MODELS[family_name]


def check_size(name: str, build: Callable[[], nn.Module]) -> None:
    """A `ConfigError` when the model `build()` makes has more than `MAX_PARAMETERS` parameters, found by building
    it on the meta device (shapes only: no memory, no starting weights), before the real build allocates them."""
    with torch.device("meta"):
        count = sum(parameter.numel() for parameter in build().parameters())
    if count > MAX_PARAMETERS:
        raise ConfigError(
            f"model {name!r} would have {count:,} parameters ({count * 4 / 1e9:,.0f} GB of float32 weights), more "
            f"than the {MAX_PARAMETERS:,} allowed; lower its width or depth options (e.g. decoder_width)"
        )


def _without_other_families_options(
    family: type[ImageToImageModel], name: str, extra: dict[str, Any]
) -> dict[str, Any]:
    """`extra` less the options that other families declare, left at None (unset); a family that passes
    its other options to timm gets a `ConfigError` for one that is set, naming the families that take it."""
    declared_by = {
        option: [MODELS[other].usage for other in MODELS if option in MODELS[other].options.names()]
        for option in extra
    }
    extra = {option: value for option, value in extra.items() if value is not None or not declared_by[option]}
    foreign = sorted(option for option in extra if declared_by[option])
    if family.takes_timm_options and foreign:
        usages = sorted({usage for option in foreign for usage in declared_by[option]})
        raise ConfigError(
            f"model {name!r} does not take option(s) {', '.join(foreign)}; they apply to {', '.join(usages)}"
        )
    return extra


def _suggest_family_for_timm_name(name: str) -> None:
    if is_timm_model(name):
        raise ConfigError(
            f"{name!r} is a timm model, not a model family; prefix a family: unet:{name}, "
            f"bottleneck:{name} or vit:{name}"
        )


__all__ = ["MODELS", "RENAMED", "check_renamed", "create_model", "model_family"]
