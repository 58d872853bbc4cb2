"""Output heads: how raw decoder channels become an image, and the training loss.

`rgb`: 3 channels through a sigmoid, trained against the target image with MSE, L1, LPIPS or a
weighted sum of them: `loss: mse+0.1*lpips` (LPIPS-alex; `lpips:vgg` for VGG16). LPIPS stays frozen
and in eval mode; it is not part of the model's parameters or checkpoints, and it is loaded (from
the weights folder, see `vision-bench weights get lpips`) at the first training step.
`palette`: logits over the dataset's 10 effective colors (index 0 = the background actually
drawn); the target class of a pixel is its nearest effective color, the loss is cross-entropy with
background pixels down-weighted (0.2 by default, as in Compositional-ARC), and the predicted
image is the palette color of the argmax.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.registry import unknown_name_message

HEADS = ("rgb", "palette")
RGB_LOSSES = ("mse", "l1", "lpips")
LOSS_SYNTAX = "a loss name or a weighted sum such as 'mse+0.1*lpips' (names: mse, l1, lpips, lpips:vgg)"
PALETTE_LOSS = "cross_entropy"
PALETTE_SIZE = 10


LossTerms = tuple[tuple[float, str], ...]


def parse_rgb_loss(text: str) -> LossTerms:
    """'mse+0.1*lpips' -> ((1.0, 'mse'), (0.1, 'lpips:alex')); one `ConfigError` for anything else."""
    from vision_bench.weights.lpips import NETS

    terms = []
    for part in str(text).replace(" ", "").split("+"):
        weight_text, _, name = part.rpartition("*")
        try:
            weight = float(weight_text) if weight_text else 1.0
        except ValueError:
            raise ConfigError(f"loss {text!r}: {weight_text!r} is not a number; use {LOSS_SYNTAX}") from None
        base, _, net = name.partition(":")
        if base not in RGB_LOSSES:
            raise UnknownNameError(unknown_name_message("rgb loss", base, RGB_LOSSES))
        if base == "lpips":
            net = net or "alex"
            if net not in NETS:
                raise UnknownNameError(unknown_name_message("LPIPS network", net, NETS))
            name = f"lpips:{net}"
        elif net:
            raise ConfigError(f"loss {text!r}: only lpips takes a network (lpips:vgg); use {LOSS_SYNTAX}")
        if not (math.isfinite(weight) and weight > 0):
            raise ConfigError(f"loss {text!r}: weights must be positive numbers; use {LOSS_SYNTAX}")
        terms.append((weight, name))
    return tuple(terms)


def loss_label(terms: LossTerms) -> str:
    return "+".join(name if weight == 1 else f"{weight:g}*{name}" for weight, name in terms)


class RgbHead(nn.Module):
    """Sigmoid RGB output; MSE, L1, LPIPS or a weighted sum of them as the loss."""

    name = "rgb"
    channels = 3

    def __init__(self, terms: LossTerms) -> None:
        super().__init__()
        self.terms = terms
        self.loss_name = loss_label(terms)
        self._lpips: dict[str, nn.Module] = {}  # a plain dict: frozen, outside parameters and checkpoints

    def activate(self, raw: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(raw)

    def loss(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        output, target = output.float(), target.float()
        total = torch.zeros((), device=output.device)
        for weight, name in self.terms:
            total = total + weight * self._term(name, output, target)
        return total

    def _term(self, name: str, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if name == "mse":
            return F.mse_loss(output, target)
        if name == "l1":
            return F.l1_loss(output, target)
        return self._lpips_module(name.split(":")[1], output.device)(output, target).mean()

    def _lpips_module(self, net: str, device: torch.device) -> nn.Module:
        """`metrics.differentiable.LpipsLoss` of `net` on `device` (a missing weight file is a `ConfigError`)."""
        from vision_bench.metrics.differentiable import LpipsLoss
        from vision_bench.weights.lpips import WeightsProblem

        module = self._lpips.get(net)
        if module is None:
            try:
                module = LpipsLoss(net)
            except WeightsProblem as error:
                raise ConfigError(f"loss {self.loss_name!r} needs LPIPS weights: {error}") from None
        if next(module.parameters()).device != device:
            module = module.to(device)
        self._lpips[net] = module.eval()
        return module

    def to_image(self, output: torch.Tensor) -> torch.Tensor:
        return output.float()


class PaletteHead(nn.Module):
    """Per-pixel logits over the effective colors; background-weighted cross-entropy."""

    name = "palette"
    loss_name = PALETTE_LOSS
    colors: torch.Tensor
    class_weights: torch.Tensor

    def __init__(self, colors: np.ndarray, background_weight: float) -> None:
        super().__init__()
        self.channels = len(colors)
        self.background_weight = background_weight
        self.register_buffer("colors", torch.as_tensor(colors, dtype=torch.float32) / 255.0)
        class_weights = torch.ones(self.channels)
        class_weights[0] = background_weight
        self.register_buffer("class_weights", class_weights)

    def activate(self, raw: torch.Tensor) -> torch.Tensor:
        return raw

    def target_indices(self, target: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) image in [0, 1] -> (B, H, W) index of the nearest effective color (first on ties)."""
        target = target.float()
        distances = torch.stack(
            [(target - color.view(1, 3, 1, 1)).square().sum(dim=1) for color in self.colors], dim=1
        )
        return distances.argmin(dim=1)

    def loss(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(output.float(), self.target_indices(target), weight=self.class_weights)

    def to_image(self, output: torch.Tensor) -> torch.Tensor:
        return self.colors[output.argmax(dim=1)].permute(0, 3, 1, 2).contiguous()


def _palette_array(palette_colors: object) -> np.ndarray:
    if palette_colors is None:
        raise ConfigError(
            "head='palette' needs palette_colors: the (10, 3) uint8 effective colors of the dataset's "
            "render spec (RenderSpec.colors), index 0 being the background"
        )
    colors = np.asarray(palette_colors)
    if colors.shape != (PALETTE_SIZE, 3) or not np.issubdtype(colors.dtype, np.number):
        raise ConfigError(f"palette_colors must be a (10, 3) array of 0-255 RGB values, got shape {colors.shape}")
    if np.any(colors < 0) or np.any(colors > 255) or np.any(colors != np.round(colors)):
        raise ConfigError("palette_colors must hold integer RGB values 0-255")
    return colors.astype(np.uint8)


def build_head(
    head: str, loss: str | None, palette_colors: object, background_weight: float
) -> RgbHead | PaletteHead:
    """The output head named `head`, with its loss; one `UserError` per bad option."""
    if head not in HEADS:
        raise UnknownNameError(unknown_name_message("head", str(head), HEADS))
    if head == "rgb":
        return RgbHead(parse_rgb_loss(loss or "mse"))
    if loss not in (None, PALETTE_LOSS):
        raise ConfigError(
            f"loss={loss!r} applies to head='rgb' (LPIPS needs an image, not palette logits); the palette head "
            "trains with background-weighted cross-entropy (set background_weight instead)"
        )
    weight = background_weight if isinstance(background_weight, (int, float)) else math.nan
    if not (math.isfinite(weight) and weight > 0):
        raise ConfigError(
            f"background_weight must be a positive number (0.2 down-weights background 5x), got {background_weight!r}"
        )
    return PaletteHead(_palette_array(palette_colors), float(weight))
