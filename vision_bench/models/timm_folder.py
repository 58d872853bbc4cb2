"""A model's timm encoder in timm's own hub layout, written by timm's `save_for_hf`, so timm builds it by name.

The folder holds `config.json` (`architecture`, `num_classes`, `model_args`, `pretrained_cfg`) and
`model.safetensors`, as `timm.models.push_to_hf_hub` uploads them, so that
`timm.create_model("local-dir:FOLDER", pretrained=True)` builds the encoder with the trained weights, and the same
folder as a hub repository of its own loads with `hf-hub:USER/NAME`.

`model_args` carry what rebuilds the encoder as the model ran it: the timm options (`img_size`, `patch_size`,
`num_classes=0`, ...) and, for the feature encoders of `unet:` / `bottleneck:`, `features_only` and `out_indices`,
so the folder builds the feature extractor whose maps the decoder read. timm loads weights strictly into the whole
network before it keeps the stages the features use, so the file holds every key: those a feature encoder cut short
never had (a U-Net's `layer4` with `out_indices` [0, 1, 2, 3]) are timm's initialisation under a fixed seed, never
trained, named in the export's config.json (`untrained_keys`), and dropped again by `features_only`.

`pretrained_cfg` describes this encoder's inputs, not the weights timm publishes for the architecture: the image size
it was trained at, and the mean and std the model normalised its [0, 1] pixels with (0 and 1 when it did not), so
`timm.data.resolve_data_config` prepares images as the model did; no tag, license or source of timm's own weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import timm
import torch

from vision_bench.models.encoders import TimmBackbone
from vision_bench.models.normalization import Normalization

UNTRAINED_SEED = 0
"""The seed of timm's initialisation of the keys a cut-short feature encoder never had."""
INPUT_KEYS = ("architecture", "input_size", "fixed_input_size", "interpolation", "crop_pct", "crop_mode", "mean",
              "std", "num_classes", "first_conv", "classifier")
"""What `pretrained_cfg` keeps of timm's entry for the architecture: how it reads images, nothing of its weights."""
NO_NORMALIZATION: Normalization = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))


def write_timm_folder(backbone: TimmBackbone, folder: Path, *, image_size: int,
                      normalization: Normalization | None) -> None:
    """Write `backbone` into the new folder `folder` with `timm.models.save_for_hf` (config.json, model.safetensors)."""
    from timm.models import save_for_hf

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(UNTRAINED_SEED)
        plain = timm.create_model(backbone.name, pretrained=False, **backbone.kwargs)
    result = plain.load_state_dict(backbone.state, strict=False)
    assert not result.unexpected_keys and list(result.missing_keys) == backbone.missing_keys, "plain_timm_backbone's"
    config = input_config(dict(getattr(plain, "pretrained_cfg", {})), image_size, normalization or NO_NORMALIZATION)
    plain.pretrained_cfg = config  # type: ignore[assignment]  # a plain attribute timm sets; save_for_hf writes it
    save_for_hf(plain, str(folder), model_args=dict(backbone.features), safe_serialization=True)


def input_config(pretrained_cfg: dict[str, Any], image_size: int, normalization: Normalization) -> dict[str, Any]:
    """timm's `pretrained_cfg` for the architecture, reduced to how it reads images and set to this encoder's."""
    mean, std = normalization
    kept = {key: value for key, value in pretrained_cfg.items() if key in INPUT_KEYS}
    return {**kept, "input_size": (3, image_size, image_size), "crop_pct": 1.0, "crop_mode": "center",
            "mean": tuple(mean), "std": tuple(std)}


__all__ = ["INPUT_KEYS", "UNTRAINED_SEED", "input_config", "write_timm_folder"]
