"""Where weight files live: the project's weights folder (`$VISION_BENCH_WEIGHTS`, by default
~/.cache/vision-bench/weights), torch's hub cache and the Hugging Face hub cache.

Nothing here downloads. timm models read a user's local files from the weights folder or from the
Hugging Face hub cache; LPIPS keeps its backbones in the weights folder's `lpips/` sub-folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

WEIGHTS_ENV = "VISION_BENCH_WEIGHTS"
DEFAULT_WEIGHTS_DIR = Path("~/.cache/vision-bench/weights")
WEIGHT_SUFFIXES = (".pth", ".pt", ".safetensors", ".bin")


@dataclass(frozen=True)
class WeightFile:
    """One expected or found weight location: `kind` groups them (lpips-backbone, lpips-linear,
    local-folder, local, hf-cache, hf-model)."""

    kind: str
    name: str
    path: Path
    present: bool
    detail: str = ""


def torch_checkpoint_dir() -> Path:
    """The folder torchvision reads cached weights from: $TORCH_HOME/hub/checkpoints (or its default)."""
    import torch

    return Path(torch.hub.get_dir()) / "checkpoints"


def local_weights_dir(folder: str | os.PathLike[str] | None = None) -> Path:
    """The folder for a user's own weight files: `folder`, else $VISION_BENCH_WEIGHTS, else the default."""
    chosen = folder if folder is not None else os.environ.get(WEIGHTS_ENV) or DEFAULT_WEIGHTS_DIR
    return Path(chosen).expanduser()


def hf_hub_cache_dir() -> Path:
    """The Hugging Face hub cache timm reads from ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


def local_weight_files(folder: str | os.PathLike[str] | None = None) -> list[WeightFile]:
    """The weights folder itself, then every weight file under it (sorted by path), less LPIPS's."""
    root = local_weights_dir(folder)
    hint = f"put {' / '.join('*' + s for s in WEIGHT_SUFFIXES)} files here or set ${WEIGHTS_ENV}"
    records = [WeightFile("local-folder", "weights folder", root, root.is_dir(), hint)]
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES)
                       and p.relative_to(root).parts[0] != "lpips")  # LPIPS's files are listed on their own
        records += [WeightFile("local", str(p.relative_to(root)), p, True, f"{p.stat().st_size:,} bytes")
                    for p in files]
    return records


def hf_cache_files() -> list[WeightFile]:
    """The Hugging Face hub cache folder, then one record per cached model repository."""
    root = hf_hub_cache_dir()
    records = [WeightFile("hf-cache", "hugging face hub cache", root, root.is_dir(),
                          "timm models fetched from the hub")]
    if root.is_dir():
        for entry in sorted(root.glob("models--*")):
            repo = entry.name.removeprefix("models--").replace("--", "/")
            snapshots = (sorted(p.name for p in (entry / "snapshots").glob("*"))
                         if (entry / "snapshots").is_dir() else [])
            detail = f"{len(snapshots)} snapshot(s)" if snapshots else "no snapshot"
            records.append(WeightFile("hf-model", repo, entry, bool(snapshots), detail))
    return records
