"""LPIPS (Zhang et al. 2018): the official `lpips` module built from checked local files, and a scorer.

`load_lpips(net)` builds LPIPS-`net` v0.1 through `vision_bench.weights.build_lpips`: nothing is
downloaded here and nothing is loaded through torch.hub. When a weight file is missing, damaged or
refused, LPIPS is *unavailable*: the metric is NaN and its status says why and what to run. A
randomly initialized backbone is never substituted. An already-built module (any callable with
LPIPS's `(in0, in1)` interface on [-1, 1] inputs) can be passed instead of a network name.

`LpipsScorer` gives per-image distances. Its reference path is the module's own forward. For the
official module (v0.1, linear layers, not spatial) a private fast path gives the same values for
the evaluation's workload, where several predictors are scored against the same targets:
- the target features of the last target batch are kept, so each target is passed through the
  network once, whatever the number of predictors;
- a pair whose two images are identical scores 0 without a forward pass (LPIPS of x with itself
  is exactly 0: the feature difference is zero and the linear layers have no bias);
- a batch whose predictions are all the same image (mean_target) passes it through once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch

from vision_bench.metrics.inputs import matching_images
from vision_bench.weights.files import local_weights_dir
from vision_bench.weights.lpips import WeightsProblem, build_lpips

DEFAULT_NET = "alex"
CHUNK = 64
"""Image pairs per forward pass: bounds activation memory for large evaluation batches."""
OK = "ok"
MIN_SIDE = {"alex": 31, "vgg": 16, "squeeze": 17}
"""Smallest image side each backbone's pooling stages accept."""


class LpipsScorer:
    """LPIPS per image pair for [0, 1] batches (B, 3, H, W), through `module` (see the module docstring)."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self._target: tuple[torch.Tensor, int, list[torch.Tensor]] | None = None

    @property
    def net(self) -> str | None:
        return getattr(self.module, "pnet_type", None)

    @property
    def device(self) -> torch.device:
        parameter = next(self.module.parameters(), None)
        return parameter.device if parameter is not None else torch.device("cpu")

    @torch.no_grad()
    def __call__(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = matching_images(pred, target, ("pred", "target"), check_range=False)
        if _is_official_lpips(self.module):
            return self._fast_distance(pred, target)
        return self.reference_distance(pred, target)

    @torch.no_grad()
    def reference_distance(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The module's own forward on every pair, in chunks, inputs mapped to [-1, 1]."""
        device = self.device
        values = []
        for start in range(0, pred.shape[0], CHUNK):
            a = pred[start:start + CHUNK].to(device, torch.float32) * 2 - 1
            b = target[start:start + CHUNK].to(device, torch.float32) * 2 - 1
            values.append(self.module(a, b).reshape(-1))
        return torch.cat(values).to(pred.device) if values else torch.empty(0, device=pred.device)

    def _features(self, images: torch.Tensor) -> list[torch.Tensor]:
        """Unit-normalized backbone features per layer, as the official forward computes them."""
        import lpips

        official: lpips.LPIPS = self.module  # the fast path runs only for the official module
        device = self.device
        parts: list[list[torch.Tensor]] = []
        for start in range(0, images.shape[0], CHUNK):
            chunk = images[start:start + CHUNK].to(device, torch.float32) * 2 - 1
            outputs = official.net(official.scaling_layer(chunk))
            parts.append([lpips.normalize_tensor(output) for output in outputs])
        return [torch.cat(layer) for layer in zip(*parts)]

    def _target_features(self, target: torch.Tensor) -> list[torch.Tensor]:
        """Features of `target` (at most `CHUNK` images), reused while the same unchanged tensor comes
        back. Inference tensors have no version counter, so they are never reused."""
        if target.is_inference():
            return self._features(target)
        kept = self._target
        if kept is not None and kept[0] is target and kept[1] == target._version:
            return kept[2]
        features = self._features(target)
        self._target = (target, target._version, features)
        return features

    def release(self) -> None:
        """Drop the kept target batch and its features (the end of an evaluation split)."""
        self._target = None

    def _distance(self, pred_features: list[torch.Tensor], target_features: list[torch.Tensor]) -> torch.Tensor:
        import lpips

        official: lpips.LPIPS = self.module
        total: torch.Tensor | int = 0
        for lin, f0, f1 in zip(official.lins, pred_features, target_features):
            total = total + lpips.spatial_average(lin((f0 - f1) ** 2), keepdim=True)
        assert isinstance(total, torch.Tensor)
        return total.reshape(-1)

    def _fast_distance(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Features are computed `CHUNK` rows at a time; only a target batch of at most `CHUNK`
        images is kept for the next predictor, so memory stays bounded for any batch size."""
        count = pred.shape[0]
        result = torch.zeros(count, device=self.device)
        rows = (pred != target).flatten(1).any(dim=1).nonzero().reshape(-1)
        if not rows.numel():
            return result.to(pred.device)
        kept = self._target_features(target) if count <= CHUNK else None
        one_image = self._features(pred[:1]) if bool((pred == pred[:1]).all()) else None
        for start in range(0, rows.numel(), CHUNK):
            part = rows[start:start + CHUNK]
            if kept is not None:
                target_features = [layer[part.to(layer.device)] for layer in kept]
            else:
                target_features = self._features(target[part])
            pred_features = one_image if one_image is not None else self._features(pred[part])
            result[part.to(self.device)] = self._distance(pred_features, target_features)
        return result.to(pred.device)


def _is_official_lpips(module: torch.nn.Module) -> bool:
    """The fast path applies to the official module in the configuration this project builds: v0.1,
    calibrated linear layers, one value per image (not the spatial map)."""
    import lpips

    return (isinstance(module, lpips.LPIPS) and module.version == "0.1" and bool(module.lpips)
            and not module.spatial)


@dataclass(frozen=True)
class LpipsLoad:
    """A ready LPIPS scorer, or None with a status saying why it is unavailable."""

    module: LpipsScorer | None
    status: str


@lru_cache(maxsize=8)
def _scorer(net: str, device: str, weights_dir: str) -> LpipsScorer:
    """One scorer per (network, device, weights folder); raises `WeightsProblem` (never cached)."""
    return LpipsScorer(build_lpips(net, weights_dir).to(device))


def load_lpips(net: str = DEFAULT_NET, device: torch.device | str = "cpu",
               folder: str | os.PathLike[str] | None = None) -> LpipsLoad:
    """LPIPS-`net` on `device` from local files only, or None with the reason it is unavailable."""
    try:
        return LpipsLoad(_scorer(net, str(torch.device(device)), str(local_weights_dir(folder))), OK)
    except WeightsProblem as error:
        return LpipsLoad(None, f"unavailable: {error}")
    except OSError as error:  # an unreadable weights folder
        where = f" {error.filename}" if error.filename else ""
        return LpipsLoad(None, f"unavailable: cannot read{where} ({error.strerror or error})")


def lpips_status(net: str = DEFAULT_NET, folder: str | os.PathLike[str] | None = None) -> str:
    """'ok' when LPIPS-`net` loads from the files on this machine, else 'unavailable: ...' and the fix."""
    return load_lpips(net, folder=folder).status


def as_scorer(lpips: torch.nn.Module | LpipsScorer | Callable[..., torch.Tensor]) -> LpipsScorer:
    """A scorer around a given module (a scorer is returned as it is)."""
    return lpips if isinstance(lpips, LpipsScorer) else LpipsScorer(lpips)  # type: ignore[arg-type]


def resolve_lpips(lpips: torch.nn.Module | LpipsScorer | LpipsLoad | str | None,
                  device: torch.device | str = "cpu") -> LpipsLoad:
    """A network name (default alex) loaded on `device`, a given module as a scorer, or a load as it is."""
    if isinstance(lpips, LpipsLoad):
        return lpips
    if lpips is None or isinstance(lpips, str):
        return load_lpips(lpips or DEFAULT_NET, device)
    scorer = as_scorer(lpips)
    return LpipsLoad(scorer, f"{OK} (given module {type(scorer.module).__name__})")


def size_problem(scorer: LpipsScorer, height: int, width: int) -> str | None:
    """'unavailable: ...' when the images are too small for the scorer's backbone, else None."""
    need = MIN_SIDE.get(scorer.net or "", 0)
    if min(height, width) < need:
        return f"unavailable: LPIPS-{scorer.net} needs images of at least {need}x{need} pixels, got {height}x{width}"
    return None


def lpips_distance(pred: torch.Tensor, target: torch.Tensor, module: torch.nn.Module | LpipsScorer) -> torch.Tensor:
    """LPIPS per image (B,) for [0, 1] batches: inputs are mapped to [-1, 1] as LPIPS expects."""
    return as_scorer(module)(pred, target)
