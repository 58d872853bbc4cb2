"""Where a timm backbone's starting weights come from, and whether a weights file fits the architecture.

Two sources, both ending in one local file:

- `pretrained: true`: timm's own pretrained weights, read from the Hugging Face hub cache where timm
  keeps them (`$HF_HUB_CACHE`, `$HF_HOME/hub` or ~/.cache/huggingface/hub). When they are not
  there they are fetched into it, unless downloads are off ($HF_HUB_OFFLINE or
  $VISION_BENCH_OFFLINE, read at call time); then one line says how to get them.
- `pretrained_file: PATH`: a local .safetensors or .pth state dict.

Before timm loads a file, its keys are compared with the architecture's (the classifier head,
and buffers the model recomputes, aside): timm itself loads backbones non-strictly, so a
resnet34 file would fill a resnet18 with only a logged warning. Shapes are checked by the load
itself, after timm has resampled what it adapts (position embeddings, patch embeddings).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from vision_bench.errors import ConfigError, UserError, first_line
from vision_bench.models.state_check import StateMismatch, compare_state
from vision_bench.weights.torch_files import foreign_pickle_warnings_off, load_failure

HUB_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")  # the names timm looks for, in its order
_SIZE_MISMATCH = re.compile(
    r"size mismatch for ([^:\s]+): copying a param with shape torch\.Size\(\[([^\]]*)\]\) from checkpoint, "
    r"the shape in current model is torch\.Size\(\[([^\]]*)\]\)"
)


class PretrainedWeightsError(UserError):
    """timm's pretrained weights are not in the Hugging Face cache and cannot be fetched now."""


@dataclass(frozen=True)
class WeightsSource:
    """A local weights file and how to name it in messages."""

    path: Path
    label: str


def starting_weights(name: str, pretrained: bool, pretrained_file: str | Path | None) -> WeightsSource | None:
    """The file a backbone starts from: timm's pretrained weights, a local file, or None (from scratch)."""
    if pretrained and pretrained_file is not None:
        raise ConfigError("give pretrained: true (timm's weights) or pretrained_file: PATH (your own), not both")
    if pretrained_file is not None:
        path = Path(pretrained_file).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"pretrained_file {str(path)!r} does not exist; give the path of a local {name} weights file "
                "(.pth or .safetensors)"
            )
        return WeightsSource(path, f"pretrained_file {str(path)!r}")
    if pretrained:
        repo, revision = hub_location(name)
        return WeightsSource(hub_weights_file(name, repo, revision), f"timm's pretrained weights {repo}")
    return None


def hub_location(name: str) -> tuple[str, str | None]:
    """(repository, revision) of timm's pretrained weights for `name` on the Hugging Face hub."""
    from timm.models import get_pretrained_cfg

    config = get_pretrained_cfg(name)
    if config is None or not config.hf_hub_id:
        raise PretrainedWeightsError(
            f"timm has no Hugging Face hub weights for {name!r}; train it from scratch (no pretrained option) "
            "or pass pretrained_file: PATH"
        )
    repo, _, revision = config.hf_hub_id.partition("@")
    return repo, revision or None


def hub_weights_file(name: str, repo: str, revision: str | None) -> Path:
    """The cached weights file of `repo`, fetched into the cache first when downloads are allowed."""
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError

    from vision_bench.weights.files import hf_hub_cache_dir

    cache = hf_hub_cache_dir()
    for filename in HUB_WEIGHT_FILES:
        cached = huggingface_hub.try_to_load_from_cache(repo, filename, cache_dir=cache, revision=revision)
        if isinstance(cached, str):
            return Path(cached)
    fixes = (f"run once online, or `hf download {repo}` (huggingface-cli download {repo} in older "
             "huggingface_hub), or pass pretrained_file: PATH")
    if hub_downloads_off():
        raise PretrainedWeightsError(
            f"timm's pretrained weights for {name!r} ({repo}) are not in the Hugging Face cache {cache} and "
            f"downloads are off ($HF_HUB_OFFLINE or $VISION_BENCH_OFFLINE); {fixes}"
        )
    for filename in HUB_WEIGHT_FILES:
        try:
            return Path(huggingface_hub.hf_hub_download(repo, filename, revision=revision, cache_dir=cache))
        except EntryNotFoundError:
            continue
        except Exception as error:  # the hub client raises many types for network and server failures
            raise PretrainedWeightsError(
                f"could not fetch timm's pretrained weights for {name!r} ({repo}): {first_line(error)}; {fixes}"
            ) from None
    raise PretrainedWeightsError(f"{repo} on the Hugging Face hub has none of {', '.join(HUB_WEIGHT_FILES)}; "
                                 "pass pretrained_file: PATH")


def hub_downloads_off() -> bool:
    """True when Hugging Face's $HF_HUB_OFFLINE or the project's $VISION_BENCH_OFFLINE is on (read now)."""
    hub_offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
    return hub_offline or os.environ.get("VISION_BENCH_OFFLINE", "") not in ("", "0")


def read_weights(source: WeightsSource) -> dict[str, torch.Tensor]:
    """The state dict in the file, as timm reads it (nested 'state_dict' / 'model' entries unwrapped)."""
    from timm.models import load_state_dict

    try:
        with foreign_pickle_warnings_off():
            return load_state_dict(str(source.path), weights_only=True)
    except Exception as error:  # safetensors, torch.load and zip readers raise many types for damaged files
        detail = f"{type(error).__name__}: {first_line(error)}"
        if source.path.suffix != ".safetensors":  # torch's text would advise weights_only=False
            failure = load_failure(source.path, error)
            detail = failure.reason
            if failure.refused:
                raise ConfigError(f"{source.label}: {detail}; give a .safetensors file or a .pth state dict of "
                                  "tensors") from None
        raise ConfigError(
            f"{source.label} is not a readable weights file: {detail}; give a .safetensors file or a .pth state dict"
        ) from None


def check_fits(source: WeightsSource, state: dict[str, torch.Tensor], reference: nn.Module, name: str) -> None:
    """A `ConfigError` unless the file holds the keys of `reference` (timm model `name` built from scratch
    without a classifier): the file's classifier and buffers the model recomputes may be there or not."""
    pretrained_cfg = reference.pretrained_cfg
    assert isinstance(pretrained_cfg, dict), "timm's model builder stores pretrained_cfg as a dict"
    classifier = pretrained_cfg.get("classifier") or ()
    classifier_keys = {f"{head}.{part}" for head in _as_tuple(classifier) for part in ("weight", "bias")}
    model_state = reference.state_dict()
    recomputed = {key for key, _ in reference.named_buffers() if key not in model_state}
    mismatch = compare_state(model_state, state, ignored=classifier_keys | recomputed, check_shapes=False,
                             check_dtypes=False)
    if mismatch:
        raise ConfigError(misfit_message(source, name, mismatch))


def load_error(source: WeightsSource, name: str, error: RuntimeError) -> ConfigError:
    """timm's failed load (tensors of another shape) as one line naming the first keys."""
    found = _SIZE_MISMATCH.findall(str(error))
    wrong = [f"{key}: file {_shape(file)}, model {_shape(model)}" for key, file, model in found]
    if wrong:
        return ConfigError(misfit_message(source, name, StateMismatch(wrong_shape=wrong)))
    return ConfigError(f"{source.label} does not fit timm model {name!r}: {first_line(error)}; "
                       f"give a weights file of {name!r}, or the model the file was saved from")


def misfit_message(source: WeightsSource, name: str, mismatch: StateMismatch) -> str:
    return (f"{source.label} does not fit timm model {name!r} (saved from another architecture?): "
            f"{mismatch.describe()}; give a weights file of {name!r}, or use the model the file was saved from")


def _shape(text: str) -> tuple[int, ...]:
    """'8, 3, 3, 3' (from torch's message) -> (8, 3, 3, 3), written like `compare_state` writes shapes."""
    return tuple(int(size) for size in text.split(",") if size.strip())


def _as_tuple(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)



__all__ = [
    "HUB_WEIGHT_FILES",
    "PretrainedWeightsError",
    "WeightsSource",
    "check_fits",
    "hub_downloads_off",
    "hub_location",
    "hub_weights_file",
    "load_error",
    "read_weights",
    "starting_weights",
]
