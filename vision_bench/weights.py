"""Which pretrained weight files are on this machine, and where missing ones belong.

Nothing here downloads. LPIPS needs two files per backbone: torchvision's ImageNet backbone in the
torch hub cache and the linear-layer calibration shipped inside the `lpips` package. timm models
read a user's local files from the weights folder (`$VISION_BENCH_WEIGHTS`, by default
~/.cache/vision-bench/weights) or from the Hugging Face hub cache.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from vision_bench.errors import UnknownNameError
from vision_bench.registry import unknown_name_message

LPIPS_BACKBONE_FILES = {
    "alex": "alexnet-owt-7be5be79.pth",
    "vgg": "vgg16-397923af.pth",
    "squeeze": "squeezenet1_1-b8a52dc0.pth",
}
"""LPIPS backbone -> the file torchvision's ImageNet weights (IMAGENET1K_V1) are cached under."""

LPIPS_VERSION = "0.1"
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


def lpips_backbone_file(net: str) -> Path:
    """Where the ImageNet backbone of LPIPS-`net` must be for LPIPS to load without a download."""
    if net not in LPIPS_BACKBONE_FILES:
        raise UnknownNameError(unknown_name_message("LPIPS network", net, LPIPS_BACKBONE_FILES))
    return torch_checkpoint_dir() / LPIPS_BACKBONE_FILES[net]


def lpips_linear_file(net: str) -> Path | None:
    """The calibrated linear layers of LPIPS-`net` inside the installed `lpips` package (None if not installed)."""
    if net not in LPIPS_BACKBONE_FILES:
        raise UnknownNameError(unknown_name_message("LPIPS network", net, LPIPS_BACKBONE_FILES))
    spec = importlib.util.find_spec("lpips")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "weights" / f"v{LPIPS_VERSION}" / f"{net}.pth"


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


def lpips_weight_files() -> list[WeightFile]:
    """Backbone and linear-layer files of the three LPIPS networks, present or not."""
    records = []
    for net, filename in LPIPS_BACKBONE_FILES.items():
        backbone = lpips_backbone_file(net)
        records.append(WeightFile("lpips-backbone", net, backbone, backbone.is_file(),
                                  f"torchvision ImageNet weights; copy {filename} into {backbone.parent}"))
        linear = lpips_linear_file(net)
        if linear is None:
            records.append(WeightFile("lpips-linear", net, Path("lpips"), False, "the lpips package is not installed"))
        else:
            records.append(WeightFile("lpips-linear", net, linear, linear.is_file(), "shipped with the lpips package"))
    return records


def local_weight_files(folder: str | os.PathLike[str] | None = None) -> list[WeightFile]:
    """The weights folder itself, then every weight file under it (sorted by path)."""
    root = local_weights_dir(folder)
    hint = f"put {' / '.join('*' + s for s in WEIGHT_SUFFIXES)} files here or set ${WEIGHTS_ENV}"
    records = [WeightFile("local-folder", "weights folder", root, root.is_dir(), hint)]
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
        records += [WeightFile("local", str(p.relative_to(root)), p, True, f"{p.stat().st_size:,} bytes") for p in files]
    return records


def hf_cache_files() -> list[WeightFile]:
    """The Hugging Face hub cache folder, then one record per cached model repository."""
    root = hf_hub_cache_dir()
    records = [WeightFile("hf-cache", "hugging face hub cache", root, root.is_dir(), "timm models fetched from the hub")]
    if root.is_dir():
        for entry in sorted(root.glob("models--*")):
            repo = entry.name.removeprefix("models--").replace("--", "/")
            snapshots = sorted(p.name for p in (entry / "snapshots").glob("*")) if (entry / "snapshots").is_dir() else []
            detail = f"{len(snapshots)} snapshot(s)" if snapshots else "no snapshot"
            records.append(WeightFile("hf-model", repo, entry, bool(snapshots), detail))
    return records


def weight_files(folder: str | os.PathLike[str] | None = None) -> list[WeightFile]:
    """Everything `vision-bench weights` reports: LPIPS files, the local weights folder, the hub cache."""
    return lpips_weight_files() + local_weight_files(folder) + hf_cache_files()
