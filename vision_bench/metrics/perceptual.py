"""LPIPS (Zhang et al. 2018) through the official `lpips` package, never downloading anything.

Before building `lpips.LPIPS` the ImageNet backbone file is looked up in the torch hub cache
(see `vision_bench.weights`); when it is missing LPIPS is *unavailable*: the metric is NaN and
its status says which file to put in which folder. A randomly initialized backbone is never
substituted. An already-built module (any callable with LPIPS's `(in0, in1)` interface on
[-1, 1] inputs) can be passed instead of a network name.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from vision_bench.metrics.inputs import matching_images
from vision_bench.weights import LPIPS_BACKBONE_FILES, lpips_backbone_file, lpips_linear_file

DEFAULT_NET = "alex"
CHUNK = 64
"""Image pairs per forward pass: bounds activation memory for large evaluation batches."""
OK = "ok"
MIN_SIDE = {"alex": 31, "vgg": 16, "squeeze": 17}
"""Smallest image side each backbone's pooling stages accept."""

_loaded: dict[tuple[str, str], torch.nn.Module] = {}


@dataclass(frozen=True)
class LpipsLoad:
    """A ready LPIPS module, or None with a status saying why it is unavailable."""

    module: torch.nn.Module | None
    status: str


def lpips_status(net: str = DEFAULT_NET) -> str:
    """'ok' when both weight files of LPIPS-`net` are on disk, else 'unavailable: ...' naming the file and folder."""
    backbone = lpips_backbone_file(net)
    if not backbone.is_file():
        return (
            f"unavailable: LPIPS-{net} needs torchvision's ImageNet backbone {LPIPS_BACKBONE_FILES[net]}; "
            f"copy it into {backbone.parent} (set TORCH_HOME to use another cache); nothing is downloaded"
        )
    linear = lpips_linear_file(net)
    if linear is None:
        return "unavailable: the lpips package is not installed (pip install lpips)"
    if not linear.is_file():
        return f"unavailable: LPIPS-{net} linear layers {linear.name} are missing from {linear.parent}; reinstall lpips"
    return OK


def load_lpips(net: str = DEFAULT_NET, device: torch.device | str = "cpu") -> LpipsLoad:
    """LPIPS-`net` on `device` from local files only; loaded modules are cached per (net, device)."""
    key = (net, str(torch.device(device)))
    if key in _loaded:
        return LpipsLoad(_loaded[key], OK)
    status = lpips_status(net)
    if status != OK:
        return LpipsLoad(None, status)
    import lpips

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchvision's notice about the legacy `pretrained` flag
            module = lpips.LPIPS(net=net, version="0.1", verbose=False).eval().to(device)
    except Exception as error:  # a damaged file must not end the evaluation: LPIPS is reported unavailable
        return LpipsLoad(None, f"unavailable: cannot read the LPIPS-{net} weights ({error}); replace {lpips_backbone_file(net)}")
    _loaded[key] = module
    return LpipsLoad(module, OK)


def size_problem(module: torch.nn.Module, height: int, width: int) -> str | None:
    """'unavailable: ...' when the images are too small for the module's backbone, else None."""
    net = getattr(module, "pnet_type", None)
    need = MIN_SIDE.get(net, 0)
    if min(height, width) < need:
        return f"unavailable: LPIPS-{net} needs images of at least {need}x{need} pixels, got {height}x{width}"
    return None


def lpips_distance(pred: torch.Tensor, target: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """LPIPS per image (B,) for [0, 1] batches: inputs are mapped to [-1, 1] as LPIPS expects."""
    pred, target = matching_images(pred, target, ("pred", "target"), check_range=False)
    device = next(module.parameters()).device
    values = []
    with torch.no_grad():
        for start in range(0, pred.shape[0], CHUNK):
            a = pred[start:start + CHUNK].to(device, torch.float32) * 2 - 1
            b = target[start:start + CHUNK].to(device, torch.float32) * 2 - 1
            values.append(module(a, b).reshape(-1))
    return torch.cat(values).to(pred.device)
