"""Pretrained weights: where they live, LPIPS's backbones (stored, checked, fetched), and the listing
`vision-bench weights` prints."""

from __future__ import annotations

import os

from vision_bench.weights.files import (
    WEIGHTS_ENV,
    WeightFile,
    hf_cache_files,
    hf_hub_cache_dir,
    local_weight_files,
    local_weights_dir,
    torch_checkpoint_dir,
)
from vision_bench.weights.lpips import (
    BACKBONES,
    NETS,
    WeightsProblem,
    backbone_path,
    build_lpips,
    get_hint,
    linear_file,
    read_provenance,
    torchvision_candidates,
)


def lpips_weight_files(folder: str | os.PathLike[str] | None = None) -> list[WeightFile]:
    """Per LPIPS network: its backbone (where it came from, or how to get it) and its linear layers."""
    records = []
    for net in NETS:
        stored = backbone_path(net, folder)
        user_files = [p for p in torchvision_candidates(net, folder) if p.is_file()]
        if stored.is_file():
            record = read_provenance(net, folder) or {}
            detail = f"from {record.get('source', 'an unknown source')}, sha256 {str(record.get('sha256', '?'))[:12]}"
            records.append(WeightFile("lpips-backbone", net, stored, True, detail))
        elif user_files:
            records.append(WeightFile("lpips-backbone", net, user_files[0], True,
                                      "a torchvision checkpoint, read with weights_only=True"))
        else:
            records.append(WeightFile("lpips-backbone", net, stored, False, get_hint(net, folder)))
        linear = linear_file(net)
        if linear is None:
            records.append(WeightFile("lpips-linear", net, stored.parent, False, "the lpips package is not installed"))
        else:
            records.append(WeightFile("lpips-linear", net, linear, linear.is_file(), "shipped with the lpips package"))
    return records


def weight_files(folder: str | os.PathLike[str] | None = None) -> list[WeightFile]:
    """Everything `vision-bench weights` reports: LPIPS files, the local weights folder, the hub cache."""
    return lpips_weight_files(folder) + local_weight_files(folder) + hf_cache_files()


__all__ = [
    "BACKBONES",
    "NETS",
    "WEIGHTS_ENV",
    "WeightFile",
    "WeightsProblem",
    "backbone_path",
    "build_lpips",
    "hf_cache_files",
    "hf_hub_cache_dir",
    "local_weight_files",
    "local_weights_dir",
    "lpips_weight_files",
    "torch_checkpoint_dir",
    "weight_files",
]
