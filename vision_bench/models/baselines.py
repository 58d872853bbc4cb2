"""Baselines with the model interface and no trainable parameters: the floor and the ceiling.

`copy_input` predicts the input image (the score of doing nothing); `mean_target` predicts the
mean training target (the score of ignoring the input); `ground_truth` applies the true
rule to the true input grid (the sequence to the objects the task code's selector picks, to every
object when the code names no selector, as in COGITAO's studies) and renders it with the dataset's
render spec, which every metric should score as perfect. A C-ARC episode's task code names no rule (an
episode's grammar of indicators picks which object gets which step, and the sample does not carry it),
and an SVIB scene's rule is its study's, not the sample's, so on those studies (option `true_targets`, which
the evaluation sets from the task family's `rule_in_batch`; `episode_setup` implies it) `ground_truth`
draws each sample's true target grid instead. (It was called `oracle`; SVIB's Oracle is
a trained model, `svib:oracle`.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch

from vision_bench.data.batch import Batch, target_shapes
from vision_bench.errors import ConfigError
from vision_bench.models.base import MODELS, BaselineModel, batch_tensor
from vision_bench.models.drawing import draw_grids, render_spec_of
from vision_bench.models.options import FamilyOptions, SharedOptions, option
from vision_bench.tasks.carc.canvas import PAIRS_PER_ROW
from vision_bench.tasks.rules import apply_rule
from vision_bench.tasks.task_code import decode_selector


@MODELS.register("copy_input", "baseline: predicts the input image unchanged (the score of doing nothing)")
class CopyInputModel(BaselineModel):
    """Predicts the input image unchanged."""

    family = usage = "copy_input"
    options_hint = "it predicts the input image and has no settings"

    def forward(self, images: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        return images.to(torch.float32, copy=True)

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        return self(batch_tensor(batch, "input", self.name))


@MODELS.register("mean_target", "baseline: predicts the mean training target; call fit(training batches) first")
class MeanTargetModel(BaselineModel):
    """Predicts the per-pixel mean of the training targets seen by `fit(batches)`."""

    family = usage = "mean_target"
    options_hint = "it predicts the mean training target and has no settings"
    mean_image: torch.Tensor
    samples_seen: torch.Tensor

    def __init__(self, shared: SharedOptions, options: FamilyOptions) -> None:
        super().__init__(shared, options)
        size = shared.image_size
        self.register_buffer("mean_image", torch.zeros(3, size, size))
        self.register_buffer("samples_seen", torch.zeros((), dtype=torch.long))

    def fit(self, batches: Iterable[Batch]) -> MeanTargetModel:
        """Average the 'target' images of `batches` (for example one pass over the training loader)."""
        total = torch.zeros(3, self.image_size, self.image_size, dtype=torch.float64, device=self.mean_image.device)
        count = 0
        for batch in batches:
            target = batch_tensor(batch, "target", self.name)
            if target.shape[1:] != total.shape:
                raise ConfigError(
                    f"mean_target was created for {self.image_size}x{self.image_size} images but a batch holds "
                    f"{tuple(target.shape[-2:])}; create it with image_size={target.shape[-1]}"
                )
            total += target.to(total.device, torch.float64).sum(dim=0)
            count += target.shape[0]
        if count == 0:
            raise ConfigError("mean_target.fit got no batches; pass the training loader")
        self.mean_image.copy_(total / count)
        self.samples_seen.fill_(count)
        return self

    def forward(self, images: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        if int(self.samples_seen) == 0:
            raise ConfigError("mean_target has not seen any training targets; call fit(training batches) first")
        if images.shape[-2:] != self.mean_image.shape[-2:]:
            raise ConfigError(
                f"mean_target was fitted on {self.image_size}x{self.image_size} targets, got images of "
                f"{tuple(images.shape[-2:])}; fit it on the same image size"
            )
        return self.mean_image.to(images.device).expand(images.shape[0], -1, -1, -1).clone()

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        return self(batch_tensor(batch, "input", self.name))

    def details(self) -> dict[str, Any]:
        return {"samples_seen": int(self.samples_seen)}


@dataclass(frozen=True)
class GroundTruthOptions(FamilyOptions):
    connectivity: int = option(8, "4 or 8: how the dataset extracted objects (as the task config's connectivity)")
    episode_setup: str | None = option(
        None, "the C-ARC setup ('3shot', 'systematicity') of an episode study: predict the true target grids"
    )
    true_targets: bool = option(
        False, "predict the true target grids: for tasks whose rule the batch does not carry (C-ARC episodes, SVIB "
        "scenes)"
    )

    def __post_init__(self) -> None:
        if self.connectivity not in (4, 8):
            raise ConfigError(
                f"connectivity must be 4 or 8 (how the dataset extracted objects), got {self.connectivity!r}"
            )
        if self.episode_setup is not None and self.episode_setup not in PAIRS_PER_ROW:
            raise ConfigError(
                f"episode_setup must be one of {', '.join(PAIRS_PER_ROW)} or None, got {self.episode_setup!r}"
            )


@MODELS.register(
    "ground_truth",
    "baseline: the true rule applied to the true input grid (a C-ARC episode: its true target grid), rendered "
    "with render_spec (the ceiling)",
)
class GroundTruthModel(BaselineModel):
    """Applies the batch's true rules (selector and sequence) to its true input grids and renders the results."""

    family = usage = "ground_truth"
    options = GroundTruthOptions
    options_hint = "it takes render_spec, connectivity, episode_setup and true_targets only"

    def __init__(self, shared: SharedOptions, options: FamilyOptions) -> None:
        super().__init__(shared, options)
        spec = render_spec_of(shared.render_spec)
        if spec is None:
            raise ConfigError(
                "ground_truth needs render_spec: the dataset's RenderSpec (or its dict), to draw the true output grids"
            )
        self.render_spec = spec
        self.connectivity = cast(GroundTruthOptions, options).connectivity
        self.episode_setup = cast(GroundTruthOptions, options).episode_setup
        self.true_targets = cast(GroundTruthOptions, options).true_targets or self.episode_setup is not None

    def forward(self, images: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        raise ConfigError(
            "ground_truth predicts from the true grids, sequences and task codes, not from pixels; call predict(batch)"
        )

    def _output_grids(self, batch: Batch) -> list[np.ndarray]:
        """Each sample's rule applied to its input grid: the selector read from batch['task_code'] (none when
        the batch has no codes or a code names no selector), the transformations from batch['sequence'].
        With `true_targets` (C-ARC episodes, SVIB scenes), batch['target_grid']: the rule is not in the batch."""
        if self.true_targets:
            return self._target_grids(batch)
        grids = batch_tensor(batch, "input_grid", self.name)
        shapes = batch_tensor(batch, "grid_shape", self.name).tolist()
        sequences = batch["sequence"] if "sequence" in batch else None
        if sequences is None or len(sequences) != len(grids):
            raise ConfigError("ground_truth needs batch['sequence']: the true transformation names of every sample")
        selectors = ([decode_selector(code) for code in batch["task_code"].tolist()] if "task_code" in batch
                     else [None] * len(grids))
        return [
            apply_rule(grid[:height, :width], names, selector, connectivity=self.connectivity)
            for grid, (height, width), names, selector in zip(grids.cpu().numpy(), shapes, sequences, selectors)
        ]

    def _target_grids(self, batch: Batch) -> list[np.ndarray]:
        """The batch's true target grids, unpadded."""
        targets = batch_tensor(batch, "target_grid", self.name)
        shapes = target_shapes(batch)
        if shapes is None:
            raise ConfigError("ground_truth needs batch['target_grid_shape']: the real size of every target grid")
        return [grid[:height, :width].cpu().numpy() for grid, (height, width) in zip(targets, shapes.tolist())]

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        """Drawn exactly as `vision_bench.data` draws targets (`drawing.draw_grids`)."""
        return draw_grids(self._output_grids(batch), self.render_spec, batch)

    def details(self) -> dict[str, Any]:
        return {"connectivity": self.connectivity, "episode_setup": self.episode_setup}
