"""The image-to-image model interface shared by every family and baseline.

Training and evaluation depend on exactly this: `forward(images, task_code=None)` gives the raw
output (rgb: (B, 3, H, W) in [0, 1]; palette: logits (B, 10, H, W)); `predict(batch)` gives an
image (B, 3, H, W) in [0, 1] without building a graph; trainable models add
`training_loss(batch)`; `describe()` is a dict for logs and reports. A model that reads something
other than images (svib:cell-oracle reads the padded input grids, svib:oracle the objects' factors read
from them) says so with `batch_inputs` and `check_inputs`, and its `forward` takes that instead; one that
reads some task families only says so with `check_task_family`, which training asks before it starts.
Batches are `vision_bench.data.batch.Batch` dicts ('input', 'target', 'task_code', 'input_grid',
'grid_shape', 'sequence', ...).

A model class is also its family's registry entry (`MODELS`, filled by `@MODELS.register` beside
each class): its class attributes say how it is named (`usage`, `example_backbone`,
`test_backbone`), which options it declares (`options`, a `FamilyOptions` dataclass) and whether
the options it does not declare go to `timm.create_model`; `build` makes one from `create_model`'s
options. `TrainableModel` builds the output head and the task conditioning from the shared options,
so that a family builds only its body.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from vision_bench.data.batch import Batch, TensorField
from vision_bench.errors import ConfigError
from vision_bench.models.conditioning import TaskCodeEmbedding, TaskFiLM, check_task_code, resolve_vocab_size
from vision_bench.models.heads import build_head
from vision_bench.models.normalization import InputNormalization, check_normalization, pretrained_normalization
from vision_bench.models.options import FamilyOptions, NoOptions, SharedOptions, reject_options
from vision_bench.registry import Registry

if TYPE_CHECKING:
    from vision_bench.models.encoders import TimmBackbone


def batch_tensor(batch: Batch, key: TensorField, model_name: str) -> torch.Tensor:
    """batch[key] as a tensor, or a `ConfigError` naming the missing key."""
    value = batch[key] if key in batch else None
    if not isinstance(value, torch.Tensor):
        raise ConfigError(f"model {model_name!r} needs batch[{key!r}] (a tensor); the batch has keys {sorted(batch)}")
    return value


class ImageToImageModel(nn.Module, ABC):
    """Base of every model: identity attributes, `predict`, `describe`; the class is its family's entry."""

    trainable = False
    family: ClassVar[str]
    """The family's registered name, the part of a model name before the colon."""
    usage: ClassVar[str]
    """How a model of the family is named, e.g. 'unet:<timm cnn>'."""
    example_backbone: ClassVar[str | None] = None
    """A name after the colon for messages; None for a family that takes none (a baseline)."""
    test_backbone: ClassVar[str | None] = None
    """The smallest name after the colon, for tests; None for a family that takes none."""
    options: ClassVar[type[FamilyOptions]] = NoOptions
    """The family's own options (`vision-bench models --describe` lists them)."""
    takes_timm_options: ClassVar[bool] = False
    """True when the options the family does not declare go to `timm.create_model`."""
    options_hint: ClassVar[str] = "it has no options of its own"
    """The end of the error for an option the family does not take."""
    trains_in_phases: ClassVar[bool] = False
    """True for a model whose `begin_step` changes what it trains, leaving some parameters without gradients in a
    phase: data-parallel training then lets DistributedDataParallel look for unused parameters."""

    def __init__(self, name: str, *, backbone: str | None, head: str, image_size: int) -> None:
        super().__init__()
        self.name = name
        self.backbone = backbone
        self.head = head
        self.image_size = image_size
        self.build_options: dict[str, Any] = {}
        """The options `create_model` built the model with (it sets them): what `save_pretrained` writes."""
        self.input_norm: InputNormalization | None = None
        """The normalisation of a pretrained backbone's inputs, applied first in `forward` (`models.normalization`)."""

    @classmethod
    @abstractmethod
    def build(
        cls, backbone: str | None, shared: SharedOptions, options: FamilyOptions, extra: dict[str, Any]
    ) -> ImageToImageModel:
        """The model from `create_model`'s options: the name after the colon (None for a baseline), the
        shared options, the family's own and the rest (`extra`)."""

    @classmethod
    def canvas_option(cls, options: Mapping[str, Any]) -> str | None:
        """The option among `options` (`create_model`'s) that training sets to the side of the experiment's canvas,
        its largest grid (`tasks.config.experiment_canvas`), for a model that reads grids on a fixed canvas whose
        size was left unset; None (every other model) to leave the options as they are."""
        return None

    @abstractmethod
    def predict(self, batch: Batch) -> torch.Tensor:
        """(B, 3, H, W) float in [0, 1]."""

    def predict_grids(self, batch: Batch) -> torch.Tensor | None:
        """The predicted grids, for a model that predicts grids itself (long (B, h, w), padded with -1 beyond each
        sample's grid; `metrics.inputs.NO_COLOUR` where it predicted no colour), which the evaluation scores instead
        of decoding `predict`'s images; None (every image model) to have the images decoded."""
        return None

    def predict_with_grids(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(`predict`, `predict_grids`) of one batch, what validation and evaluation score; a model that draws its
        images from its grids computes them once (a cogitao body predicts in up to 32 forward passes)."""
        return self.predict(batch), self.predict_grids(batch)

    def training_loss(self, batch: Batch) -> torch.Tensor:
        raise ConfigError(f"model {self.name!r} has no trainable parameters; evaluate it without training")

    def sheet_images(self, batch: Batch) -> dict[str, torch.Tensor]:
        """Extra images of each sample for the evaluation's sample sheets, drawn after the error map: column name ->
        (B, 3, H, W) float in [0, 1] (svib:ssm-slot: each slot's attention on the input); none by default."""
        return {}

    def begin_step(self, step: int, total_steps: int) -> None:
        """Called by the training loop before each optimizer step's loss, `step` counting the steps done (0 to
        `total_steps` - 1; a resumed run goes on from its step), so that a model can train in phases (see
        `trains_in_phases`); nothing by default."""

    def details(self) -> dict[str, Any]:
        """Family-specific entries of `describe()`."""
        return {}

    def check_task_family(self, family: str | None, data: str) -> None:
        """A one-line `ConfigError` when the model cannot read samples of the task family named `family` (None:
        a family made over another, a world model), `data` saying where they come from; every model reads
        every family's samples unless it says otherwise (svib:oracle reads SVIB scenes only)."""

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
    """A network with an output head and optional task conditioning, both built here from the shared
    options; a family builds its body and implements `raw_output(inputs, task_code) -> raw channels`."""

    trainable = True
    conditioned_by_default: ClassVar[bool] = False
    """Whether the model reads the task code when `task_conditioning` is left unset."""

    def __init__(self, backbone: str, shared: SharedOptions) -> None:
        pixel_head = build_head(shared.head, shared.loss, shared.palette_colors, shared.background_weight)
        super().__init__(
            f"{self.family}:{backbone}", backbone=backbone, head=pixel_head.name, image_size=shared.image_size
        )
        self.pixel_head = pixel_head
        conditioning = self.conditioned_by_default if shared.task_conditioning is None else shared.task_conditioning
        self.task_vocab_size = resolve_vocab_size(conditioning)
        self.task_code_length = shared.task_code_length
        normalization = check_normalization(shared.input_normalization)
        if normalization is not None:
            if not self.takes_timm_options:
                raise ConfigError(f"{self.name} takes no input_normalization: it applies to the timm backbones of "
                                  "unet:, bottleneck: and vit:; remove it")
            self.input_norm = InputNormalization(normalization)

    def normalize_like(self, backbone: nn.Module, shared: SharedOptions) -> None:
        """Normalise the inputs as `backbone`'s pretrained weights expect (its timm `pretrained_cfg`) when the
        options name starting weights and no `input_normalization` of their own."""
        if shared.has_weights and self.input_norm is None:
            normalization = pretrained_normalization(backbone)
            if normalization is not None:
                self.input_norm = InputNormalization(normalization)

    @classmethod
    def build(
        cls, backbone: str | None, shared: SharedOptions, options: FamilyOptions, extra: dict[str, Any]
    ) -> ImageToImageModel:
        """A network family: the name after the colon is its backbone; `extra` goes to timm when it takes it."""
        if not cls.takes_timm_options:
            reject_options(extra, f"{cls.family}:{backbone}", cls.options_hint)
            extra = {}
        # every network family's __init__ is (backbone, shared, its options, **timm_options)
        return cls(str(backbone), shared, options, **extra)  # type: ignore[call-arg]

    def task_film(self, channels: list[int]) -> TaskFiLM | None:
        """FiLM over feature maps of `channels` when the model is task-conditioned, else None."""
        if self.task_vocab_size is None:
            return None
        return TaskFiLM(self.task_vocab_size, channels, code_length=self.task_code_length)

    def task_tokens_of_width(self, dim: int) -> TaskCodeEmbedding | None:
        """One `dim`-wide token per task-code position when the model is task-conditioned, else None."""
        if self.task_vocab_size is None:
            return None
        return TaskCodeEmbedding(self.task_vocab_size, dim, self.task_code_length)

    @abstractmethod
    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        """Checked inputs (images (B, 3, S, S), or what `batch_inputs` reads) -> the head's raw channels
        (B, pixel_head.channels, S, S), before its activation."""

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        """What the model reads from a batch: its 'input' images (svib:cell-oracle reads grids)."""
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
        if self.input_norm is not None:
            inputs = self.input_norm(inputs)
        if self.task_vocab_size is not None:
            task_code = check_task_code(
                task_code, inputs.shape[0], self.task_vocab_size, self.name, self.task_code_length
            )
        else:
            task_code = None
        return self.pixel_head.activate(self.raw_output(inputs, task_code))

    def _inputs(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor | None]:
        device = next(self.parameters()).device
        inputs = self.batch_inputs(batch).to(device, non_blocking=True)
        task_code = batch["task_code"] if "task_code" in batch else None
        if self.task_vocab_size is None:
            return inputs, None
        task_code = check_task_code(task_code, inputs.shape[0], self.task_vocab_size, self.name, self.task_code_length)
        return inputs, task_code.to(device, non_blocking=True)

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        inputs, task_code = self._inputs(batch)
        return self.pixel_head.to_image(self(inputs, task_code))

    def training_loss(self, batch: Batch) -> torch.Tensor:
        inputs, task_code = self._inputs(batch)
        return self.pixel_head.loss(self(inputs, task_code), self._target(batch, inputs))

    def _target(self, batch: Batch, inputs: torch.Tensor) -> torch.Tensor:
        """batch['target'] on the inputs' device, checked to be (B, 3, image_size, image_size)."""
        target = batch_tensor(batch, "target", self.name).to(inputs.device, non_blocking=True)
        expected = (inputs.shape[0], 3, self.image_size, self.image_size)
        if tuple(target.shape) != expected:
            raise ConfigError(
                f"batch 'target' has shape {tuple(target.shape)}; model {self.name!r} expects {expected}"
            )
        return target

    def details(self) -> dict[str, Any]:
        code_length = None if self.task_vocab_size is None else self.task_code_length
        normalization = None if self.input_norm is None else self.input_norm.as_option()
        return {"loss": self.pixel_head.loss_name, "task_conditioning": self.task_vocab_size,
                "task_code_length": code_length, "input_normalization": normalization}


class BaselineModel(ImageToImageModel):
    """A baseline: no name after the colon, no weights, an rgb prediction; `__init__(shared, options)`."""

    def __init__(self, shared: SharedOptions, options: FamilyOptions) -> None:
        if shared.has_weights:
            raise ConfigError(f"{self.family} is a baseline without weights; remove pretrained and pretrained_file")
        super().__init__(self.family, backbone=None, head="rgb", image_size=shared.image_size)

    @classmethod
    def build(
        cls, backbone: str | None, shared: SharedOptions, options: FamilyOptions, extra: dict[str, Any]
    ) -> ImageToImageModel:
        reject_options(extra, cls.family, cls.options_hint)
        return cls(shared, options)


MODELS: Registry[type[ImageToImageModel]] = Registry("model")
"""Model families and baselines, each registered beside its class (`vision_bench.models.registry`
imports them all)."""
