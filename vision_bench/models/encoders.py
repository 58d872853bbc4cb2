"""timm backbones: name checks, starting weights, the multi-scale feature encoder, and plain timm state dicts.

Models start from scratch unless the options name weights: `pretrained: true` (timm's own, from
the Hugging Face cache) or `pretrained_file: PATH` (`vision_bench.models.timm_weights`). A file
is checked against the architecture before timm loads it with its own rules (classifier dropped,
position and patch embeddings resampled to the new image and patch size).

`FeatureEncoder` takes any timm backbone that gives feature maps at growing strides: CNNs and
hierarchical transformers (swin, ...). Those built for one input size get it as `img_size`, and
channels-last maps (timm's swin gives NHWC) are turned channels-first. Plain ViTs give every map
at one stride; they are refused when the model is built, pointing to the `vit:` family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import timm
import torch
from timm.models import FeatureInfo
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError, first_line
from vision_bench.models.timm_weights import WeightsSource, check_fits, load_error, read_weights, starting_weights
from vision_bench.registry import unknown_name_message

FEATURE_OPTIONS = ("features_only", "out_indices", "feature_cls")  # timm's feature-wrapper options
_REJECTED_OPTION = re.compile(r"unexpected keyword argument\S*\W+(\w+)")  # 'x', or (s): ['x', ...]


class TimmOptionError(ConfigError):
    """A timm constructor refused a keyword argument (`option` names it when timm's message does)."""

    def __init__(self, name: str, error: TypeError) -> None:
        found = _REJECTED_OPTION.search(str(error))
        self.option = found.group(1) if found else None
        super().__init__(f"timm model {name!r} rejected an option ({error}); remove it or pick another model")


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
        raise TimmOptionError(name, error) from None


def timm_weights(name: str, pretrained: bool, pretrained_file: str | Path | None) -> WeightsSource | None:
    """The file timm model `name` starts from (resolved once per model: it may be fetched), None for scratch."""
    check_timm_name(name)
    return starting_weights(name, pretrained, pretrained_file)


TIMM_LOADING_OPTIONS = frozenset({"checkpoint_path", "pretrained_cfg", "pretrained_cfg_overlay", "cache_dir"})
"""timm.create_model keywords that fetch or read weights; refused (a stored config could name any file)."""


def create_timm_model(name: str, *, weights: WeightsSource | None = None, **kwargs: Any) -> nn.Module:
    """timm.create_model from scratch, or from `weights` (see `timm_weights`).

    A weights file is first compared with the architecture built from scratch without a classifier
    (in a forked RNG, so the model itself is initialised as it would be without weights).
    """
    check_timm_name(name)
    timm_loading = sorted(TIMM_LOADING_OPTIONS & set(kwargs))
    if timm_loading:  # they would make timm read a file or the hub past the checks of `timm_weights`
        raise ConfigError(f"model option {timm_loading[0]} loads weights behind vision-bench's checks; give starting "
                          "weights with pretrained: true or pretrained_file: PATH instead")
    if weights is None:
        return _build(name, pretrained=False, **kwargs)
    plain = {key: value for key, value in kwargs.items() if key not in FEATURE_OPTIONS}
    with torch.random.fork_rng(devices=[]):
        reference = _build(name, pretrained=False, **{**plain, "num_classes": 0})
    check_fits(weights, read_weights(weights), reference, name)
    del reference
    overlay = {"file": str(weights.path), "custom_load": False}  # a state dict, whatever timm's own source format
    try:
        return _build(name, pretrained=True, pretrained_cfg_overlay=overlay, **kwargs)
    except RuntimeError as error:
        raise load_error(weights, name, error) from None


@dataclass(frozen=True)
class TimmBackbone:
    """A backbone's weights as a plain timm state dict.

    `timm.create_model(name, **kwargs).load_state_dict(state, strict=False)` reports exactly
    `missing_keys` and no unexpected key; with no missing key, strict loading works. `features`: the
    feature-wrapper options the model built it with (`features_only`, `out_indices`), none for a whole model.
    """

    name: str
    kwargs: dict[str, Any]
    state: dict[str, torch.Tensor]
    missing_keys: list[str]
    features: dict[str, Any] = field(default_factory=dict)


def plain_timm_backbone(name: str, kwargs: dict[str, Any], weights: dict[str, torch.Tensor],
                        features: dict[str, Any] | None = None) -> TimmBackbone:
    """`weights` (of a timm model or of its features_only wrapper, built with `features`) under the plain model's
    key names.

    timm's feature wrappers rename what they keep: `layers.0.x` becomes `layers_0.x` (flattened
    sequential stages) or `model.layers.0.x` (wrappers that hold the model); pruned stages and the
    classifier are not kept. The missing keys are the ones loading into the plain model reports.
    """
    with torch.random.fork_rng(devices=[]):
        plain = timm.create_model(name, pretrained=False, **kwargs)
    state: dict[str, torch.Tensor] = {}
    for key, value in plain.state_dict().items():
        head, _, rest = key.partition(".")
        first, _, tail = rest.partition(".")
        for candidate in (key, f"model.{key}", f"{head}_{first}.{tail}"):
            if candidate in weights and weights[candidate].shape == value.shape:
                state[key] = weights[candidate]
                break
    if len(state) != len(weights):
        raise ConfigError(
            f"{len(weights) - len(state)} tensors of the {name} encoder have no name in timm's plain {name} "
            "(a feature wrapper this vision-bench does not know); the encoder cannot be written as a timm state dict"
        )
    missing = plain.load_state_dict(state, strict=False).missing_keys
    return TimmBackbone(name, kwargs, state, list(missing), dict(features or {}))


class FeatureEncoder(nn.Module):
    """A timm backbone with features_only=True: a list of channels-first feature maps, shallow to deep.

    Channels and strides come from timm's `feature_info`; the strides must grow (a feature
    pyramid) and the image size must be a multiple of the deepest. One forward of a blank image
    at build time checks that the backbone runs at this size and gives the announced maps, so a
    backbone that cannot fails when the model is built, not at the first training step.
    """

    def __init__(
        self,
        backbone: str,
        *,
        family: str,
        image_size: int,
        pretrained: bool = False,
        pretrained_file: str | Path | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if "img_size" in options:
            raise ConfigError("set the image size with image_size, not img_size (the model passes it to timm)")
        weights = timm_weights(backbone, pretrained, pretrained_file)
        try:
            try:
                self.features = create_timm_model(backbone, weights=weights, features_only=True, img_size=image_size,
                                                  **options)
                size_option = {"img_size": image_size}
            except TimmOptionError as error:
                if error.option != "img_size":
                    raise
                self.features = create_timm_model(backbone, weights=weights, features_only=True, **options)
                size_option = {}
        except RuntimeError as error:  # timm: features_only not implemented for this model
            raise ConfigError(
                f"timm model {backbone!r} cannot serve as a feature encoder ({first_line(error)}); pick a CNN "
                "such as resnet18 or a hierarchical transformer such as swin_tiny_patch4_window7_224"
            ) from None
        self.backbone = backbone
        self.timm_kwargs = {**{k: v for k, v in options.items() if k not in FEATURE_OPTIONS}, **size_option,
                            "num_classes": 0}
        feature_info = self.features.feature_info
        assert isinstance(feature_info, FeatureInfo), "timm's features_only models describe their maps in one"
        self.feature_kwargs = {"features_only": True, "out_indices": list(feature_info.out_indices),
                               **{key: options[key] for key in ("feature_cls",) if key in options}}
        self.channels: list[int] = list(feature_info.channels())
        self.reductions: list[int] = list(feature_info.reduction())
        self.channels_last_maps = getattr(self.features, "output_fmt", "NCHW") == "NHWC"
        self.total_stride = max(self.reductions)
        if any(deeper <= shallower for shallower, deeper in zip(self.reductions, self.reductions[1:])):
            raise ConfigError(
                f"timm model {backbone!r} gives its feature maps at one scale (strides "
                f"{', '.join(map(str, self.reductions))}), not the pyramid {family}: needs: it is a plain vision "
                f"transformer; use vit:{backbone} for it, or a CNN or hierarchical transformer (swin_*) under {family}:"
            )
        if image_size % self.total_stride:
            nearest = max(1, round(image_size / self.total_stride)) * self.total_stride
            raise ConfigError(
                f"image_size={image_size} is not a multiple of {backbone}'s total stride {self.total_stride}; "
                f"use a multiple of {self.total_stride} such as {nearest}"
            )
        self._check_runs_at(image_size)

    def forward(self, images: torch.Tensor) -> list[torch.Tensor]:
        maps = list(self.features(images))
        if self.channels_last_maps:
            maps = [feature_map.permute(0, 3, 1, 2) for feature_map in maps]
        return maps

    def timm_backbone(self) -> TimmBackbone:
        """The encoder's weights under the names of `timm.create_model(backbone, **timm_kwargs)`."""
        return plain_timm_backbone(self.backbone, self.timm_kwargs, self.features.state_dict(), self.feature_kwargs)

    def _check_runs_at(self, image_size: int) -> None:
        """One forward of a blank image in eval mode (no statistics updated), compared with feature_info."""
        training = self.features.training
        self.features.eval()
        try:
            with torch.no_grad():
                maps = self(torch.zeros(1, 3, image_size, image_size))
        except Exception as error:  # timm backbones assert, or fail in a reshape, at sizes they cannot take
            raise ConfigError(
                f"timm model {self.backbone!r} cannot encode {image_size}x{image_size} images "
                f"({type(error).__name__}: {first_line(error)}); try another image_size or backbone"
            ) from None
        finally:
            self.features.train(training)
        shapes = [tuple(feature_map.shape[1:]) for feature_map in maps]
        announced = [(c, image_size // r, image_size // r) for c, r in zip(self.channels, self.reductions)]
        if shapes != announced:
            raise ConfigError(
                f"timm model {self.backbone!r} gives feature maps of {shapes} for {image_size}x{image_size} images, "
                f"not the {announced} its feature_info announces; pick another backbone"
            )

