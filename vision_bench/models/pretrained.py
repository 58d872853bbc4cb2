"""Trained models as a folder any project can load: `model.safetensors`, `config.json` and a model card.

`save_pretrained(model, folder, options=..., render_spec=...)` writes, in the layout timm uses on
the Hugging Face hub:

- `model.safetensors`: the whole model's state dict;
- `encoder/` (models with a timm encoder): the encoder in timm's own layout (`config.json` and
  `model.safetensors`, written by timm's `save_for_hf`; `models.timm_folder`), so that
  `timm.create_model("local-dir:FOLDER/encoder", pretrained=True)` builds it with the trained weights;
  `config.json` names its timm name and options and the keys it holds untrained (stages a U-Net cut
  short never had); an export made before this layout had `encoder.safetensors`, which a re-run removes;
- `config.json`: the architecture (`create_model` name), the options that rebuild it (JSON values,
  without the starting weights, which the saved weights replace), the render spec its images are
  drawn with, the image size, head and task conditioning, the vision-bench version; no paths;
- `README.md`: the model card (`models.model_card`: huggingface_hub's `ModelCard`): what the model reads, how
  to load it, and for an export of a run its training data, evaluation and command lines.

`load_pretrained(folder or hub id)` rebuilds the model with `create_model` and loads the weights
strictly (keys, shapes and dtypes): the same outputs as the model that was saved. A hub id
(`user/model`, `hf://user/model`, either with `@REVISION`: a branch, tag or commit; or `revision=`) is
fetched with huggingface_hub's `snapshot_download` (into its cache; only from the cache when
downloads are off). `push_to_hub(folder, repo_id)` uploads a finished export with `HfApi.create_repo`
and `HfApi.upload_folder` (to the branch `@BRANCH` names, created when missing).

huggingface_hub's `ModelHubMixin` is not used: its `save_pretrained` removes config.json before the
subclass writes and never rewrites README.md, and its config is the class's `__init__` arguments, while
these models are built by `create_model` from a name and options; the building blocks it uses
(`snapshot_download`, `create_repo`, `upload_folder`) are called directly. The hub client is the `hf`
extra's (timm installs it too); without it, loading a hub id and pushing are one-line errors.

Every file is written atomically and config.json last, so a folder without config.json is an
unfinished export; writing into a folder is refused when it holds anything else, and a re-run
over an earlier export (finished or not) rewrites it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from render.spec import RenderSpec
from vision_bench.errors import UserError, first_line
from vision_bench.io.atomic import atomic_write_bytes, atomic_write_text, is_temp_file, temp_path_for
from vision_bench.io.extras import require
from vision_bench.models.base import ImageToImageModel
from vision_bench.models.encoders import TimmBackbone
from vision_bench.models.model_card import TrainingRecord, model_card
from vision_bench.models.state_check import compare_state, renamed_weights
from vision_bench.models.timm_folder import write_timm_folder

EXPORT_FORMAT = "vision-bench-model"
EXPORT_VERSION = 1
CONFIG_FILE = "config.json"
MODEL_FILE = "model.safetensors"
ENCODER_DIR = "encoder"
ENCODER_FILES = (CONFIG_FILE, MODEL_FILE)  # timm's layout
OLD_ENCODER_FILE = "encoder.safetensors"  # the encoder as a plain state dict, before the timm layout
CARD_FILE = "README.md"
EXPORT_FILES = (CONFIG_FILE, MODEL_FILE, CARD_FILE)
HUB_PATTERNS = [*EXPORT_FILES, f"{ENCODER_DIR}/*", OLD_ENCODER_FILE]
"""What `push_to_hub` uploads from an export folder, and deletes from the repository where the export has none."""
NOT_EXPORTED_OPTIONS = ("pretrained", "pretrained_file", "render_spec")  # weights replaced; spec saved apart
HUB_PREFIX = re.compile(r"^hf://?")  # `hf://ID`; also `hf:/ID`, what pathlib makes of it
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
REVISION = re.compile(r"[\w.][\w./-]*")  # a branch (also refs/pr/1), tag or commit


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
    training: TrainingRecord | None = None,
    license: str | None = None,
) -> list[Path]:
    """Write `model` (built by `create_model(model.name, **portable_options(options))`) to `folder`.

    `options` default to the model's own `build_options` (what `create_model` built it with), and
    `render_spec` to the one among them: the RenderSpec (or its dict) its training images were drawn with.
    `training` (the run that made it) and `license` (a hub license id) go into the model card.
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
    card = str(model_card(config, training, license=license))  # before any file: it needs the hub client
    folder = Path(folder)
    _prepare_folder(folder)
    written = [folder / MODEL_FILE]
    atomic_write_bytes(folder / MODEL_FILE, _safetensors_bytes(model.state_dict()))
    if backbone is None:
        _remove_encoder(folder)
    else:
        _write_encoder(model, backbone, folder)
        written.append(folder / ENCODER_DIR)
    atomic_write_text(folder / CARD_FILE, card)
    atomic_write_text(folder / CONFIG_FILE, json.dumps(config, indent=2) + "\n")
    return [*written, folder / CARD_FILE, folder / CONFIG_FILE]


def _write_encoder(model: ImageToImageModel, backbone: TimmBackbone, folder: Path) -> None:
    """encoder/ in timm's layout: written into a temporary folder, which then replaces the earlier one."""
    staging = temp_path_for(folder / ENCODER_DIR)
    try:
        norm = getattr(model, "input_norm", None)
        write_timm_folder(backbone, staging, image_size=model.image_size,
                          normalization=None if norm is None else norm.normalization)
        mode = (folder / MODEL_FILE).stat().st_mode & 0o777  # safetensors writes 0600: as the export's other files
        for path in staging.iterdir():
            path.chmod(mode)
        _remove_encoder(folder)
        os.rename(staging, folder / ENCODER_DIR)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_encoder(folder: Path) -> None:
    shutil.rmtree(folder / ENCODER_DIR, ignore_errors=True)
    (folder / OLD_ENCODER_FILE).unlink(missing_ok=True)


def _prepare_folder(folder: Path) -> None:
    """Create `folder`, or take over an earlier export: refuse anything else, drop unfinished temporary files.

    config.json goes first, so that until the new one is written the folder reads as unfinished.
    """
    if folder.exists() and not folder.is_dir():
        raise ModelFolderError(f"{folder} is a file; give a folder for the exported model")
    folder.mkdir(parents=True, exist_ok=True)
    entries = list(folder.iterdir())
    foreign = [entry.name for entry in entries if not _written_here(entry)]
    if not foreign and (folder / CONFIG_FILE).exists() and _format_of(folder / CONFIG_FILE) != EXPORT_FORMAT:
        foreign = [CONFIG_FILE]
    if foreign:
        raise ModelFolderError(
            f"{folder} holds files that export-model did not write ({', '.join(sorted(foreign)[:3])}); "
            "give an empty or new folder"
        )
    for entry in entries:
        if is_temp_file(entry) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif is_temp_file(entry):
            entry.unlink()
    (folder / CONFIG_FILE).unlink(missing_ok=True)


def _written_here(entry: Path) -> bool:
    """An export's file or encoder folder (of any version), or a temporary file or folder one left."""
    if is_temp_file(entry):
        return True
    if entry.name == ENCODER_DIR and entry.is_dir() and not entry.is_symlink():
        return all(part.name in ENCODER_FILES or is_temp_file(part) for part in entry.iterdir())
    return entry.is_file() and entry.name in (*EXPORT_FILES, OLD_ENCODER_FILE)


def _format_of(path: Path) -> str | None:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config.get("format") if isinstance(config, dict) else None


def _encoder_entry(backbone: TimmBackbone) -> dict[str, Any]:
    return {
        "folder": ENCODER_DIR,
        "timm_name": backbone.name,
        "timm_kwargs": portable_options(backbone.kwargs),
        "features": portable_options(backbone.features),
        "untrained_keys": backbone.missing_keys,
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


def read_model_config(source: str | Path, *, revision: str | None = None) -> dict[str, Any]:
    """config.json of an exported model folder or hub id, checked."""
    return _read_config(model_folder(source, revision=revision))


def load_pretrained(source: str | Path, *, revision: str | None = None,
                    device: str | torch.device = "cpu") -> ImageToImageModel:
    """The model saved by `save_pretrained` / `vision-bench export-model` in a folder or on the hub, in eval mode.

    `source`: a folder, or a hub id (`user/model`, `hf://user/model`, either with `@REVISION`); `revision` (a
    branch, tag or commit) is the other spelling of `@REVISION`.
    """
    from safetensors.torch import load_file

    from vision_bench.models.registry import create_model

    folder = model_folder(source, revision=revision)
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


def hub_reference(source: str, revision: str | None = None) -> tuple[str, str | None] | None:
    """(repository id, revision or None) of `user/model`, `hf://user/model` or either with `@REVISION`, with
    `revision` as the other spelling of `@REVISION`; None when `source` is not spelled as a hub id."""
    name, _, spelled = HUB_PREFIX.sub("", source).partition("@")
    if not HUB_ID.fullmatch(name) or (spelled and not REVISION.fullmatch(spelled)):
        return None
    if spelled and revision is not None and spelled != revision:
        raise ModelFolderError(f"{source} names revision {spelled!r} and revision={revision!r} another; give one")
    return name, spelled or revision


def model_folder(source: str | Path, *, revision: str | None = None) -> Path:
    """A local folder as it is; a hub id ('user/model', 'hf://user/model', '@REVISION') as its snapshot in the
    Hugging Face cache."""
    hub_only = HUB_PREFIX.match(str(source)) is not None
    path = Path(source).expanduser()
    if not hub_only and path.is_dir():
        if revision is not None:
            raise ModelFolderError(f"{source} is a folder, which has no revision {revision!r}; give a hub id, or "
                                   "no revision")
        return path
    if not hub_only and path.exists():
        raise ModelFolderError(f"{source} is a file; give the folder export-model wrote, or a Hugging Face hub id")
    reference = hub_reference(str(source), revision)
    if reference is None:
        raise ModelFolderError(f"no folder {source}; give the folder export-model wrote, or a hub id "
                               "(user/model, hf://user/model, with @REVISION for a branch, tag or commit)")
    return _hub_snapshot(*reference)


def _hub_snapshot(repo_id: str, revision: str | None) -> Path:
    require("huggingface_hub", f"loading the model {repo_id} from the Hugging Face hub")
    import huggingface_hub

    from vision_bench.models.timm_weights import hub_downloads_off
    from vision_bench.weights.files import hf_hub_cache_dir

    offline = hub_downloads_off()
    try:
        folder = huggingface_hub.snapshot_download(
            repo_id, revision=revision, allow_patterns=[CONFIG_FILE, MODEL_FILE, CARD_FILE],
            cache_dir=hf_hub_cache_dir(), local_files_only=offline, library_name="vision-bench",
            library_version=_version(),
        )
    except Exception as error:  # the hub client raises many types for network, server and cache failures
        where = ("in the Hugging Face cache (downloads are off: $HF_HUB_OFFLINE or $VISION_BENCH_OFFLINE)"
                 if offline else "on the Hugging Face hub")
        named = repo_id if revision is None else f"{repo_id}@{revision}"
        raise ModelFolderError(
            f"{named!r} is neither a folder here nor a model {where} ({first_line(error)}); "
            "give the folder export-model wrote, or a hub id"
        ) from None
    return Path(folder)


def push_target(repo_id: str, revision: str | None = None) -> tuple[str, str | None]:
    """(repository, branch or None) that `push_to_hub` would push to, checked before any work: a hub id, the hub
    client installed, and the hub not switched off; else a one-line error."""
    reference = hub_reference(repo_id, revision)
    if reference is None:
        raise ModelFolderError(f"{repo_id!r} is not a hub repository id; give it as user/model (with @BRANCH for a "
                               "branch other than main)")
    require("huggingface_hub", "pushing a model to the Hugging Face hub")
    from vision_bench.models.timm_weights import hub_downloads_off

    if hub_downloads_off():
        raise ModelFolderError(f"cannot push to {reference[0]}: the Hugging Face hub is off ($HF_HUB_OFFLINE or "
                               "$VISION_BENCH_OFFLINE); unset it to push")
    return reference


def push_to_hub(folder: str | Path, repo_id: str, *, revision: str | None = None, private: bool | None = None,
                commit_message: str | None = None, token: str | None = None) -> str:
    """Upload the finished export in `folder` to the hub repository `repo_id` (`user/model`, `@BRANCH` or
    `revision` for a branch other than main, created when missing); returns the commit's URL.

    The repository is created when missing (`private` as given, else the account's default); the export's files
    replace those of an earlier upload (a stale encoder is deleted in the same commit), other files stay.
    """
    repo, branch = push_target(repo_id, revision)
    import huggingface_hub

    folder = Path(folder)
    config = _read_config(folder)  # a finished export only: config.json is written last
    api = huggingface_hub.HfApi(token=token, library_name="vision-bench", library_version=_version())
    try:
        repo = api.create_repo(repo, private=private, exist_ok=True).repo_id
        if branch is not None:
            api.create_branch(repo, branch=branch, exist_ok=True)
        commit = api.upload_folder(
            repo_id=repo, folder_path=folder, revision=branch, allow_patterns=HUB_PATTERNS,
            delete_patterns=HUB_PATTERNS,
            commit_message=commit_message or f"vision-bench export-model: {config['architecture']}",
        )
    except Exception as error:  # the hub client raises many types for network, permission and server failures
        raise ModelFolderError(
            f"could not push {folder} to the Hugging Face hub as {repo} ({first_line(error)}); check the repository "
            "id, your token (`hf auth login`) and the network"
        ) from None
    return commit.commit_url


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
    "ENCODER_DIR",
    "EXPORT_FILES",
    "EXPORT_FORMAT",
    "MODEL_FILE",
    "ModelFolderError",
    "hub_reference",
    "load_pretrained",
    "portable_options",
    "push_target",
    "push_to_hub",
    "read_model_config",
    "save_pretrained",
]
