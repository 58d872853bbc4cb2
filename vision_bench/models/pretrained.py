"""Trained models as a folder any project can load: `model.safetensors`, `config.json` and a model card.

`save_pretrained(model, folder, options=..., render_spec=...)` writes, in the layout timm uses on
the Hugging Face hub:

- `model.safetensors`: the whole model's state dict;
- `encoder.safetensors` (models with a timm encoder): the encoder alone as a plain timm state
  dict, for `timm.create_model(name, **kwargs)`; `config.json` names the kwargs and the keys that
  model has and the file lacks (a classifier, stages the U-Net does not use), so that strict
  loading works exactly when that list is empty;
- `config.json`: the architecture (`create_model` name), the options that rebuild it (JSON values,
  without the starting weights, which the saved weights replace), the render spec its images are
  drawn with, the image size, head and task conditioning, the vision-bench version; no paths;
- `README.md`: a short model card saying how to load it.

`load_pretrained(folder or hub id)` rebuilds the model with `create_model` and loads the weights
strictly (keys, shapes and dtypes): the same outputs as the model that was saved. A hub id is
fetched with huggingface_hub's `snapshot_download` (into its cache; only from the cache when
downloads are off).

Every file is written atomically and config.json last, so a folder without config.json is an
unfinished export; writing into a folder is refused when it holds anything else, and a re-run
over an earlier export (finished or not) rewrites it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from render.spec import RenderSpec
from vision_bench.errors import UserError, first_line
from vision_bench.io.atomic import atomic_write_bytes, atomic_write_text, is_temp_file
from vision_bench.models.base import ImageToImageModel
from vision_bench.models.encoders import TimmBackbone
from vision_bench.models.state_check import compare_state, renamed_weights
from vision_bench.tasks.task_code import TASK_CODE_LENGTH

EXPORT_FORMAT = "vision-bench-model"
EXPORT_VERSION = 1
CONFIG_FILE = "config.json"
MODEL_FILE = "model.safetensors"
ENCODER_FILE = "encoder.safetensors"
CARD_FILE = "README.md"
EXPORT_FILES = (CONFIG_FILE, MODEL_FILE, ENCODER_FILE, CARD_FILE)
NOT_EXPORTED_OPTIONS = ("pretrained", "pretrained_file", "render_spec")  # weights replaced; spec saved apart
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


class ModelFolderError(UserError):
    """A model folder or hub id that cannot be read, or a folder export-model must not write into."""


def portable_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """`create_model` options as JSON values, less the starting weights and the render spec."""
    portable = {}
    for name, value in options.items():
        if name in NOT_EXPORTED_OPTIONS:
            continue
        try:
            portable[name] = json.loads(json.dumps(value, default=_plain_value))
        except (TypeError, ValueError):
            raise ModelFolderError(
                f"model option {name}={value!r} cannot be written to config.json; give it as a number, string, "
                "list or mapping"
            ) from None
    return portable


def _plain_value(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    raise TypeError(type(value).__name__)


def save_pretrained(
    model: ImageToImageModel,
    folder: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
    render_spec: RenderSpec | None = None,
    trained_steps: int | None = None,
) -> list[Path]:
    """Write `model` (built by `create_model(model.name, **portable_options(options))`) to `folder`.

    `options` default to the model's own `build_options` (what `create_model` built it with), and
    `render_spec` to the one among them: the RenderSpec (or its dict) its training images were drawn with.
    Returns the files written, config.json last.
    """
    options = model.build_options if options is None else options
    if render_spec is None:
        render_spec = options.get("render_spec")
    if not model.trainable:
        raise ModelFolderError(
            f"{model.name} is a baseline without trained weights: there is nothing to export; "
            "`vision-bench evaluate --baselines` scores it"
        )
    backbone = model.timm_backbone()
    config = {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_VERSION,
        "architecture": model.name,
        "model_args": portable_options(options),
        "render_spec": _spec_dict(render_spec),
        "image_size": model.image_size,
        "head": model.head,
        "task_conditioning": model.describe().get("task_conditioning"),
        "trained_steps": trained_steps,
        "vision_bench_version": _version(),
        "encoder": None if backbone is None else _encoder_entry(backbone),
    }
    folder = Path(folder)
    _prepare_folder(folder)
    written = [folder / MODEL_FILE]
    atomic_write_bytes(folder / MODEL_FILE, _safetensors_bytes(model.state_dict()))
    if backbone is None:
        (folder / ENCODER_FILE).unlink(missing_ok=True)
    else:
        atomic_write_bytes(folder / ENCODER_FILE, _safetensors_bytes(backbone.state))
        written.append(folder / ENCODER_FILE)
    atomic_write_text(folder / CARD_FILE, model_card(config))
    atomic_write_text(folder / CONFIG_FILE, json.dumps(config, indent=2) + "\n")
    return [*written, folder / CARD_FILE, folder / CONFIG_FILE]


def _prepare_folder(folder: Path) -> None:
    """Create `folder`, or take over an earlier export: refuse anything else, drop unfinished temporary files.

    config.json goes first, so that until the new one is written the folder reads as unfinished.
    """
    if folder.exists() and not folder.is_dir():
        raise ModelFolderError(f"{folder} is a file; give a folder for the exported model")
    folder.mkdir(parents=True, exist_ok=True)
    entries = list(folder.iterdir())
    foreign = [entry.name for entry in entries
               if entry.is_dir() or (entry.name not in EXPORT_FILES and not is_temp_file(entry))]
    if not foreign and (folder / CONFIG_FILE).exists() and _format_of(folder / CONFIG_FILE) != EXPORT_FORMAT:
        foreign = [CONFIG_FILE]
    if foreign:
        raise ModelFolderError(
            f"{folder} holds files that export-model did not write ({', '.join(sorted(foreign)[:3])}); "
            "give an empty or new folder"
        )
    for entry in entries:
        if is_temp_file(entry):
            entry.unlink()
    (folder / CONFIG_FILE).unlink(missing_ok=True)


def _format_of(path: Path) -> str | None:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config.get("format") if isinstance(config, dict) else None


def _encoder_entry(backbone: TimmBackbone) -> dict[str, Any]:
    return {
        "file": ENCODER_FILE,
        "timm_name": backbone.name,
        "timm_kwargs": portable_options(backbone.kwargs),
        "missing_keys": backbone.missing_keys,
    }


def _safetensors_bytes(state: Mapping[str, torch.Tensor]) -> bytes:
    from safetensors.torch import save

    return save({key: value.detach().cpu().contiguous() for key, value in state.items()}, metadata={"format": "pt"})


def _spec_dict(render_spec: RenderSpec | None) -> dict[str, Any] | None:
    if render_spec is None or isinstance(render_spec, Mapping):
        return None if render_spec is None else dict(render_spec)
    return render_spec.to_dict()


def _version() -> str:
    import vision_bench

    return vision_bench.__version__


def model_card(config: Mapping[str, Any]) -> str:
    """The README.md of an export: what the model is, what it reads, how to load it (and its encoder)."""
    size = config["image_size"]
    palette = (config.get("render_spec") or {}).get("palette")
    conditioned = bool(config.get("task_conditioning"))
    steps = config.get("trained_steps")
    trained = f" for {steps} step{'' if steps == 1 else 's'}" if steps is not None else ""
    drawn = f" (palette {palette})" if palette else ""
    length = (config.get("model_args") or {}).get("task_code_length", TASK_CODE_LENGTH)
    code = f", and a task code (B, {length})" if conditioned else ""
    reads_grids = config["architecture"].startswith("carc:") or config["architecture"].startswith("cogitao:") and \
        (config.get("model_args") or {}).get("input", "grid") == "grid"
    inputs = "'input_grid': grids, 'grid_shape': shapes" if reads_grids else "'input': images"
    batch = f"{{{inputs}, 'task_code': codes}}" if conditioned else f"{{{inputs}}}"
    lines = [
        "---",
        "library_name: vision-bench",
        "tags: [vision-bench, image-to-image, arc, compositional-generalization]",
        "---",
        "",
        f"# {config['architecture']}",
        "",
        (f"A grid model (one colour class per cell) trained with vision-bench {config['vision_bench_version']}"
         f"{trained}. It reads input grids (B, h, w) of colours 0-9 padded with -1, with their sizes (B, 2){code}; "
         f"predict_grids gives the predicted grids and predict draws them as {size}x{size} RGB images with the render "
         f"spec in config.json{drawn}." if reads_grids else
         f"An image-to-image model ({config['head']} head) trained with vision-bench "
         f"{config['vision_bench_version']}{trained}. It reads RGB images of {size}x{size} pixels in [0, 1], drawn "
         f"with the render spec in config.json{drawn}{code}, and predicts the output image."),
        "",
        "```python",
        "from vision_bench.models import load_pretrained",
        "",
        'model = load_pretrained("PATH_OR_HUB_ID")',
        f"prediction = model.predict({batch})  # (B, 3, {size}, {size}) in [0, 1]",
        "```",
    ]
    encoder = config.get("encoder")
    if encoder:
        lines += ["", *encoder_card(encoder)]
    return "\n".join(lines) + "\n"


def encoder_card(encoder: Mapping[str, Any]) -> list[str]:
    """How to load encoder.safetensors into timm, and the keys it lacks (then strict=False)."""
    arguments = "".join(f", {key}={value!r}" for key, value in encoder["timm_kwargs"].items())
    missing = encoder["missing_keys"]
    strictness = ", strict=False" if missing else ""
    lines = [
        f"`{encoder['file']}` holds the encoder alone as a plain timm state dict:",
        "",
        "```python",
        "import timm",
        "from safetensors.torch import load_file",
        "",
        f"encoder = timm.create_model({encoder['timm_name']!r}{arguments})",
        f"encoder.load_state_dict(load_file({encoder['file']!r}){strictness})",
        "```",
    ]
    if missing:
        lines += ["", (f"That model has {len(missing)} keys the encoder does not use, so they are not in the file: "
                       f"{', '.join(missing)}.")]
    return lines


def read_model_config(source: str | Path) -> dict[str, Any]:
    """config.json of an exported model folder or hub id, checked."""
    return _read_config(model_folder(source))


def load_pretrained(source: str | Path, *, device: str | torch.device = "cpu") -> ImageToImageModel:
    """The model saved by `save_pretrained` / `vision-bench export-model` in a folder or on the hub, in eval mode."""
    from safetensors.torch import load_file

    from vision_bench.models.registry import create_model

    folder = model_folder(source)
    config = _read_config(folder)
    weights = folder / MODEL_FILE
    try:
        state = load_file(weights)
    except Exception as error:  # safetensors raises its own error types, and OSError, for damaged files
        raise ModelFolderError(
            f"{weights} is not a readable safetensors file ({type(error).__name__}: {first_line(error)}); "
            "export the model again"
        ) from None
    renamed = renamed_weights(config["architecture"], state.keys())
    if renamed:
        raise ModelFolderError(f"{weights}: {renamed}; export it again from a run of the new name, or load it with "
                               "the vision-bench that exported it")
    # starting weights (timm's hub weights, a file) are never fetched or read: the saved weights replace them; the
    # render spec, saved apart, goes back to the models that read it (the cogitao family draws its grids with it)
    model = create_model(config["architecture"], **portable_options(config["model_args"]),
                         render_spec=config.get("render_spec"))
    mismatch = compare_state(model.state_dict(), state)
    if mismatch:
        raise ModelFolderError(
            f"{weights} does not fit {config['architecture']} as config.json describes it: {mismatch.describe()}; "
            "export the model again"
        )
    model.load_state_dict(state)
    return model.to(device).eval()


def model_folder(source: str | Path) -> Path:
    """A local folder as it is; a hub id ('user/model') as its snapshot in the Hugging Face cache."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise ModelFolderError(f"{source} is a file; give the folder export-model wrote, or a Hugging Face hub id")
    if not HUB_ID.fullmatch(str(source)):
        raise ModelFolderError(f"no folder {source}; give the folder export-model wrote, or a hub id (user/model)")
    return _hub_snapshot(str(source))


def _hub_snapshot(repo_id: str) -> Path:
    import huggingface_hub

    from vision_bench.models.timm_weights import hub_downloads_off
    from vision_bench.weights.files import hf_hub_cache_dir

    offline = hub_downloads_off()
    try:
        folder = huggingface_hub.snapshot_download(
            repo_id, allow_patterns=[CONFIG_FILE, MODEL_FILE, CARD_FILE], cache_dir=hf_hub_cache_dir(),
            local_files_only=offline, library_name="vision-bench",
        )
    except Exception as error:  # the hub client raises many types for network, server and cache failures
        where = ("in the Hugging Face cache (downloads are off: $HF_HUB_OFFLINE or $VISION_BENCH_OFFLINE)"
                 if offline else "on the Hugging Face hub")
        raise ModelFolderError(
            f"{repo_id!r} is neither a folder here nor a model {where} ({first_line(error)}); "
            "give the folder export-model wrote, or a hub id"
        ) from None
    return Path(folder)


def _read_config(folder: Path) -> dict[str, Any]:
    path = folder / CONFIG_FILE
    fix = "give a folder written by `vision-bench export-model` (or export the model again)"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelFolderError(f"{folder} has no {CONFIG_FILE}, so it is not an exported model; {fix}") from None
    except (OSError, ValueError) as error:
        raise ModelFolderError(f"{path} is not readable JSON ({first_line(error)}); {fix}") from None
    except RecursionError:
        raise ModelFolderError(f"{path} is nested too deeply to be a model config; {fix}") from None
    if not isinstance(config, dict) or config.get("format") != EXPORT_FORMAT:
        raise ModelFolderError(f"{path} is not a vision-bench model config; {fix}")
    if config.get("format_version") != EXPORT_VERSION:
        raise ModelFolderError(
            f"{path} has format version {config.get('format_version')!r}; this vision-bench reads version "
            f"{EXPORT_VERSION}: load it with the vision-bench that wrote it"
        )
    if not isinstance(config.get("architecture"), str) or not isinstance(config.get("model_args"), dict):
        raise ModelFolderError(f"{path} lacks 'architecture' or 'model_args'; {fix}")
    return config



__all__ = [
    "CARD_FILE",
    "CONFIG_FILE",
    "ENCODER_FILE",
    "EXPORT_FILES",
    "EXPORT_FORMAT",
    "MODEL_FILE",
    "ModelFolderError",
    "load_pretrained",
    "model_card",
    "portable_options",
    "read_model_config",
    "save_pretrained",
]
