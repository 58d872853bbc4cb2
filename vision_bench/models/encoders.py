"""timm backbones: name checks, from-scratch or local-file weights, and the CNN feature encoder.

Nothing is ever downloaded: models start from scratch (pretrained=False) unless the user names a
local weights file, which timm loads with its own rules (classifier dropped, position embeddings
and patch embeddings resampled to the new image and patch size). timm loads feature encoders
non-strictly, so after loading every weight matrix is compared with the same seeded random
initialisation: a file that leaves any of them untouched belongs to another architecture.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.registry import unknown_name_message

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import timm  # noqa: E402  (after HF_HUB_OFFLINE, so that timm never reaches the network)


def is_timm_model(name: str) -> bool:
    """True when timm has an architecture `name` (with or without a pretrained tag)."""
    return bool(name) and timm.is_model(name)


def list_timm_models(pattern: str = "") -> list[str]:
    """timm architecture names matching the shell-style `pattern` ('' = all)."""
    return timm.list_models(pattern or "")


def check_timm_name(name: str) -> None:
    """An `UnknownNameError` with close matches from `timm.list_models()` when timm lacks `name`."""
    if not is_timm_model(name):
        raise UnknownNameError(unknown_name_message("timm model", name, timm.list_models()))


def _build(name: str, **kwargs: Any) -> nn.Module:
    try:
        return timm.create_model(name, **kwargs)
    except TypeError as error:
        raise ConfigError(
            f"timm model {name!r} rejected an option ({error}); remove it or pick another model"
        ) from None


def _unloaded_weights(model: nn.Module, reference: nn.Module) -> list[str]:
    """Weight matrices (ndim >= 2) of `model` still equal to the seeded initialisation in `reference`."""
    initial = dict(reference.named_parameters())
    return [
        name
        for name, parameter in model.named_parameters()
        if parameter.ndim >= 2 and name in initial and torch.equal(parameter, initial[name])
    ]


def create_timm_model(name: str, *, pretrained_file: str | Path | None = None, **kwargs: Any) -> nn.Module:
    """timm.create_model from scratch, or with weights from the local file `pretrained_file`."""
    check_timm_name(name)
    if pretrained_file is None:
        return _build(name, pretrained=False, **kwargs)
    path = Path(pretrained_file).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"pretrained_file {str(path)!r} does not exist; give the path of a local {name} weights file "
            "(.pth or .safetensors)"
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        reference = _build(name, pretrained=False, **kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            model = _build(name, pretrained=True, pretrained_cfg_overlay={"file": str(path)}, **kwargs)
        except (RuntimeError, KeyError, ValueError) as error:
            raise ConfigError(f"pretrained_file {str(path)!r} does not fit timm model {name!r}: {_first_line(error)}; "
                              f"give a weights file of {name!r}, or the model the file was saved from") from None
    unloaded = _unloaded_weights(model, reference)
    if unloaded:
        raise ConfigError(
            f"pretrained_file {str(path)!r} has no weights for {len(unloaded)} tensors of timm model {name!r} "
            f"(first: {', '.join(unloaded[:3])}); it was saved from another architecture"
        )
    return model


class CnnEncoder(nn.Module):
    """A timm CNN with features_only=True: a list of feature maps, shallow to deep.

    Channels and strides come from timm's `feature_info`; the image size must be a multiple of the
    deepest stride so that every feature map has a whole number of pixels.
    """

    def __init__(self, backbone: str, *, image_size: int, pretrained_file: str | Path | None, **options: Any) -> None:
        super().__init__()
        try:
            self.features = create_timm_model(backbone, pretrained_file=pretrained_file, features_only=True, **options)
        except RuntimeError as error:
            raise ConfigError(
                f"timm model {backbone!r} cannot serve as a feature encoder ({error}); pick a CNN such as resnet18"
            ) from None
        self.channels: list[int] = list(self.features.feature_info.channels())
        self.reductions: list[int] = list(self.features.feature_info.reduction())
        self.total_stride = max(self.reductions)
        if image_size % self.total_stride:
            nearest = max(1, round(image_size / self.total_stride)) * self.total_stride
            raise ConfigError(
                f"image_size={image_size} is not a multiple of {backbone}'s total stride {self.total_stride}; "
                f"use a multiple of {self.total_stride} such as {nearest}"
            )

    def forward(self, images: torch.Tensor) -> list[torch.Tensor]:
        return list(self.features(images))


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
