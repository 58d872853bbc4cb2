"""The image-to-image model interface shared by every family and baseline.

Training and evaluation depend on exactly this: `forward(images, task_code=None)` gives the raw
output (rgb: (B, 3, H, W) in [0, 1]; palette: logits (B, 10, H, W)); `predict(batch)` gives an
image (B, 3, H, W) in [0, 1] without building a graph; trainable models add
`training_loss(batch)`; `describe()` is a dict for logs and reports. A model that reads something
other than images (svib:oracle reads the padded input grids) says so with `batch_inputs` and
`check_inputs`, and its `forward` takes that instead. Batches are the dicts of
`vision_bench.data` ('input', 'target', 'task_code', 'input_grid', 'grid_shape', 'sequence', ...).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.models.conditioning import check_task_code
from vision_bench.models.heads import PaletteHead, RgbHead

if TYPE_CHECKING:
    from vision_bench.models.encoders import TimmBackbone


def batch_tensor(batch: Mapping[str, Any], key: str, model_name: str) -> torch.Tensor:
    """batch[key] as a tensor, or a `ConfigError` naming the missing key."""
    value = batch.get(key)
    if not isinstance(value, torch.Tensor):
        raise ConfigError(f"model {model_name!r} needs batch[{key!r}] (a tensor); the batch has keys {sorted(batch)}")
    return value


class ImageToImageModel(nn.Module, ABC):
    """Base of every model: identity attributes, `predict`, `describe`."""

    trainable = False

    def __init__(self, name: str, *, family: str, backbone: str | None, head: str, image_size: int) -> None:
        super().__init__()
        self.name = name
        self.family = family
        self.backbone = backbone
        self.head = head
        self.image_size = image_size

    @abstractmethod
    def predict(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """(B, 3, H, W) float in [0, 1]."""

    def training_loss(self, batch: Mapping[str, Any]) -> torch.Tensor:
        raise ConfigError(f"model {self.name!r} has no trainable parameters; evaluate it without training")

    def details(self) -> dict[str, Any]:
        """Family-specific entries of `describe()`."""
        return {}

    def timm_backbone(self) -> TimmBackbone | None:
        """The timm encoder's weights as a plain timm state dict; None for models without a timm encoder."""
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "backbone": self.backbone,
            "head": self.head,
            "image_size": self.image_size,
            "trainable": self.trainable,
            "parameters": sum(p.numel() for p in self.parameters()),
            **self.details(),
        }


class TrainableModel(ImageToImageModel):
    """A network with an output head: subclasses implement `decode(inputs, task_code) -> raw channels`."""

    trainable = True

    def __init__(
        self,
        name: str,
        *,
        family: str,
        backbone: str,
        image_size: int,
        pixel_head: RgbHead | PaletteHead,
        task_vocab_size: int | None,
    ) -> None:
        super().__init__(name, family=family, backbone=backbone, head=pixel_head.name, image_size=image_size)
        self.pixel_head = pixel_head
        self.task_vocab_size = task_vocab_size

    @abstractmethod
    def decode(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """Checked inputs (images (B, 3, S, S), or what `batch_inputs` reads) -> (B, pixel_head.channels, S, S)."""

    def batch_inputs(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """What the model reads from a batch: its 'input' images (the grid-fed svib:oracle reads grids)."""
        return batch_tensor(batch, "input", self.name)

    def check_inputs(self, images: torch.Tensor) -> None:
        """A `ConfigError` unless `images` is (B, 3, image_size, image_size)."""
        if images.ndim != 4 or images.shape[1:] != (3, self.image_size, self.image_size):
            raise ConfigError(
                f"model {self.name!r} was built for (B, 3, {self.image_size}, {self.image_size}) images, got "
                f"{tuple(images.shape)}; create it with image_size={images.shape[-1]} or render at "
                f"{self.image_size} pixels"
            )

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        self.check_inputs(inputs)
        if self.task_vocab_size is not None:
            task_code = check_task_code(task_code, inputs.shape[0], self.task_vocab_size, self.name)
        else:
            task_code = None
        return self.pixel_head.activate(self.decode(inputs, task_code))

    def _inputs(self, batch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        device = next(self.parameters()).device
        inputs = self.batch_inputs(batch).to(device, non_blocking=True)
        task_code = batch.get("task_code")
        if self.task_vocab_size is None:
            return inputs, None
        task_code = check_task_code(task_code, inputs.shape[0], self.task_vocab_size, self.name)
        return inputs, task_code.to(device, non_blocking=True)

    @torch.no_grad()
    def predict(self, batch: Mapping[str, Any]) -> torch.Tensor:
        inputs, task_code = self._inputs(batch)
        return self.pixel_head.to_image(self(inputs, task_code))

    def training_loss(self, batch: Mapping[str, Any]) -> torch.Tensor:
        inputs, task_code = self._inputs(batch)
        target = batch_tensor(batch, "target", self.name).to(inputs.device, non_blocking=True)
        expected = (inputs.shape[0], 3, self.image_size, self.image_size)
        if tuple(target.shape) != expected:
            raise ConfigError(
                f"batch 'target' has shape {tuple(target.shape)}; model {self.name!r} expects {expected}"
            )
        return self.pixel_head.loss(self(inputs, task_code), target)

    def details(self) -> dict[str, Any]:
        return {"loss": self.pixel_head.loss_name, "task_conditioning": self.task_vocab_size}
