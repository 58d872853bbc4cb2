"""`carc:mlc`: C-ARC's MLC model (paper 001 section 3.2, appendix C) as its authors released it (mainlp/C-ARC,
`vmlc/`), registered as the `carc` family.

It reads a C-ARC episode, the `episodes` family's input canvas (`batch['input_grid']`: the study pairs and the query
input at fixed slots), cut back into its grids (`episode_grids`), as one token sequence (`tokens.episode_sequence`:
2x2 patches, one token each, with separators), and decodes the query's output grid as 25 patch tokens
(`network.EpisodeTransformer`). `predict_grids` is the input canvas with the predicted output in the query's output
slot, so the evaluation's grid accuracy is the paper's exact match; a special token predicted inside the grid leaves
its four cells without colour (`NO_COLOUR`), as the released decoding leaves them None; `predict` draws that canvas
with the render spec, no colour as background.

Training (`training_loss`) is the released objective (`objective`): the copy task (option `copy_task`, on as
released; Table 2's "no copy task" ablation turns it off; in training each sample adds each study example as a copy
query with probability `copy_rate`, 0.1, the released proportion at 10 queries per episode), the target noise in
training mode (`target_noise`, 0.001), cross-entropy with the all-background patch weighted by the shared option
`background_weight` (0.2, the released `--zero_token_weight`). Prediction (`decoding`): `greedy` decodes each
patch from the patches it predicted before (the model sees no part of the answer); `teacher-forced` is the released
evaluation (`model.py:167-199`, `metrics.py:273-274`: the argmax of each position's logits given the true previous
patches, read from `batch['target_grid']`), for comparison with the paper's numbers only. Table 2's other ablations
read Systematicity episodes without their primitive or level-1 study examples (`drop_study`), the rest in their
order, as an episode generated without them would be read. `input: image` (the project's, `image_input`) reads the
rendered canvas instead, one token per grid cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.metrics.inputs import as_drawn
from vision_bench.models.base import MODELS, TrainableModel, batch_tensor
from vision_bench.models.carc_mlc.episode_grids import (
    STUDY_DROPS,
    EpisodeGrids,
    canvas_setup,
    episode_grids,
    kept_pairs,
    query_outputs,
    with_query_outputs,
    without_study_levels,
)
from vision_bench.models.carc_mlc.image_input import CellImageEncoder
from vision_bench.models.carc_mlc.network import EpisodeTransformer, Sizes
from vision_bench.models.carc_mlc.objective import (
    COPY_RATE,
    TARGET_NOISE,
    copy_selection,
    episode_loss,
    training_sequences,
    with_target_noise,
)
from vision_bench.models.carc_mlc.tokens import (
    GRID_TOKENS,
    decoder_input,
    decoder_target,
    episode_sequence,
    token_grids,
)
from vision_bench.models.cogitao.grid_io import cell_size
from vision_bench.models.drawing import draw_grids, render_spec_of
from vision_bench.models.options import FamilyOptions, SharedOptions, check_from_scratch, option, positive_int
from vision_bench.models.svib import input_grids
from vision_bench.registry import unknown_name_message

PRESETS = ("mlc",)
DECODINGS = ("greedy", "teacher-forced")
INPUTS = ("grid", "image")
EPISODES_FAMILY = "episodes"


@dataclass(frozen=True)
class CarcOptions(FamilyOptions):
    input: str = option("grid", "grid: the episode's grids as the released 2x2-patch tokens; image (the project's): "
                        "the rendered canvas, one token per grid cell (render layout cell:K:top-left)")
    study_examples: int = option(
        12, "the most study examples an episode may have, the length of the learned 1D positions: 12 (Systematicity, "
        "5,720,213 parameters, the paper's 5.7M) reads both setups; 3 is the released 3-Shot model (5,660,309)")
    copy_task: bool = option(True, "train on the auxiliary copy task too: every study example is also a query "
                             "(released default; false is Table 2's 'no copy task' ablation)")
    copy_rate: float = option(COPY_RATE, "in training, the probability that a study example is also a query of a "
                              "sample: 0.1 with 10 queries per episode copies each once per episode on average, the "
                              "released proportion; 1.0 copies every study example with every query (and evaluation "
                              "always does)")
    target_noise: float = option(TARGET_NOISE, "in training, the probability that a cell of the query's target grid "
                                 "is replaced by a uniform colour 0-9 (released --p_noise)")
    drop_study: str = option("none", "Table 2's study-example ablations: none; primitives or level-1 reads "
                             "Systematicity episodes without their primitive or level-1 study examples")
    decoding: str = option("greedy", "greedy: each patch from the patches predicted before it; teacher-forced: the "
                           "released evaluation, each patch given the true previous ones (reads the target grid)")

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise UnknownNameError(unknown_name_message("carc:mlc input", str(self.input), INPUTS))
        positive_int(self.study_examples, "study_examples")
        if not isinstance(self.copy_task, bool):
            raise ConfigError(f"copy_task must be true or false, got {self.copy_task!r}")
        for name in ("target_noise", "copy_rate"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ConfigError(f"{name} must be a probability in [0, 1], got {value!r}")
        if self.drop_study not in STUDY_DROPS:
            raise UnknownNameError(unknown_name_message("carc:mlc drop_study", str(self.drop_study), STUDY_DROPS))
        if self.decoding not in DECODINGS:
            raise UnknownNameError(unknown_name_message("carc:mlc decoding", str(self.decoding), DECODINGS))


@MODELS.register(
    "carc",
    "C-ARC's released MLC model: a transformer encoder-decoder (3 + 3 layers, width 128) reading an episode's study "
    "examples and query as 2x2-patch tokens and decoding the query's output grid (carc/ studies only)",
)
class CarcModel(TrainableModel):
    """C-ARC's MLC encoder-decoder over an episode's tokens (module docstring)."""

    family = "carc"
    usage = "carc:mlc"
    example_backbone = "mlc"
    test_backbone = "mlc"
    options = CarcOptions
    options_hint = "it takes input, study_examples, copy_task, copy_rate, target_noise, drop_study and decoding"

    def __init__(self, preset: str, shared: SharedOptions, options: CarcOptions) -> None:
        name = f"carc:{preset}"
        if preset not in PRESETS:
            raise UnknownNameError(unknown_name_message("carc preset", preset, PRESETS))
        check_from_scratch(name, shared, like="C-ARC's model does", predicts=(
            "predicts the query's output grid as patch tokens and trains with its own loss"))
        if shared.task_conditioning:
            raise ConfigError(f"{name} reads the episode's study examples and no task code, as released; drop "
                              "task_conditioning")
        super().__init__(preset, shared)
        self.head = "tokens"
        self.render_spec = render_spec_of(shared.render_spec)
        self.input_kind = options.input
        sizes = Sizes(study_examples=options.study_examples)
        self.image_encoder: CellImageEncoder | None = None
        if options.input == "image":
            if self.render_spec is None:
                raise ConfigError(f"{name} with input=image needs render_spec (the dataset's RenderSpec, which "
                                  "training and evaluation pass) for the size of its cells")
            cell = cell_size(self.render_spec, self.image_size, name)
            self.image_encoder = CellImageEncoder(sizes.width, cell, sizes.study_examples, sizes.dropout)
        self.network = EpisodeTransformer(sizes, token_input=options.input == "grid")
        self.copy_task = options.copy_task
        self.copy_rate = float(options.copy_rate)
        self.target_noise = float(options.target_noise)
        self.decoding = options.decoding
        self.drop_study = options.drop_study
        self.background_weight = shared.background_weight

    def check_task_family(self, family: str | None, data: str) -> None:
        if family != EPISODES_FAMILY:
            raise ConfigError(f"{self.name} reads C-ARC episodes (the carc/ studies), but {data} is not an episodes "
                              "dataset; train another model on it")

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        """The input canvases (B, H, W), or their images (B, 3, S, S) for input=image."""
        if self.image_encoder is not None:
            return batch_tensor(batch, "input", self.name)
        return input_grids(batch, self.name)

    def check_inputs(self, inputs: torch.Tensor) -> None:
        if self.image_encoder is not None:
            super().check_inputs(inputs)
        else:
            canvas_setup(inputs, self.name)

    def _image_memory(self, batch: Batch) -> tuple[torch.Tensor, str, list[int]]:
        """input=image: (the checked images, the setup read from `grid_shape`, the study pairs read)."""
        assert self.image_encoder is not None
        images, _ = self._inputs(batch)
        self.check_inputs(images)
        shape = batch_tensor(batch, "grid_shape", self.name)[0].tolist()
        setup = canvas_setup(torch.zeros(1, *shape, dtype=torch.long), self.name)
        cells = self.image_size // self.image_encoder.stem.stride[0]
        if max(shape) > cells:
            raise ConfigError(f"{self.name} with input=image reads {cells} cells a side, but the {setup} canvas is "
                              f"{shape[0]}x{shape[1]} cells; render larger images")
        return images, setup, kept_pairs(setup, self.drop_study, self.name)

    def _episodes(self, batch: Batch) -> EpisodeGrids:
        inputs, _ = self._inputs(batch)
        return self._episodes_of(inputs)

    def _episodes_of(self, inputs: torch.Tensor) -> EpisodeGrids:
        """The episodes of (B, H, W) input canvases, less the study examples `drop_study` leaves out."""
        return without_study_levels(episode_grids(inputs.long(), self.name), self.drop_study, self.name)

    def forward(self, inputs: torch.Tensor, task_code: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, W) input canvases -> (B, 25, 10005) the logits of greedy decoding, each step's argmax the
        predicted patch."""
        return self.raw_output(inputs, None)

    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        if self.image_encoder is not None:
            raise ConfigError(f"{self.name} with input=image reads the canvas's setup from batch['grid_shape']; "
                              "call predict_grids(batch) or training_loss(batch)")
        return self.network.greedy(self._sequence(self._episodes_of(inputs)))[1]

    @staticmethod
    def _sequence(episodes: EpisodeGrids) -> torch.Tensor:
        return episode_sequence(episodes.study_inputs, episodes.study_outputs, episodes.query)

    def training_loss(self, batch: Batch) -> torch.Tensor:
        """The released loss of the batch's queries (and, with the copy task, its study examples)."""
        if self.image_encoder is not None:
            return self._image_loss(batch)
        episodes = self._episodes(batch)
        targets = batch_tensor(batch, "target_grid", self.name).to(episodes.query.device, non_blocking=True)
        outputs = query_outputs(targets.long(), episodes.setup)
        if self.training:
            outputs = with_target_noise(outputs, self.target_noise)
        tokens, decoder_tokens, target = training_sequences(episodes, outputs, self.copy_task)
        chosen = self._copies(len(outputs), episodes.study_inputs.shape[1], tokens.device)
        if chosen is not None:
            tokens, decoder_tokens, target = tokens[chosen], decoder_tokens[chosen], target[chosen]
        return episode_loss(self.network(tokens, decoder_tokens), target, self.background_weight)

    def _copies(self, samples: int, study: int, device: torch.device) -> torch.Tensor | None:
        """The rows of `training_sequences` to train on: in training with the copy task, each sample's query and
        its study examples drawn at `copy_rate` (`objective.copy_selection`); None (all rows) otherwise."""
        if not (self.training and self.copy_task) or self.copy_rate >= 1:
            return None
        return copy_selection(samples, study, self.copy_rate, device)

    def _image_loss(self, batch: Batch) -> torch.Tensor:
        """input=image: the released loss, each query's (and each copy task query's) sequence cut from the image."""
        assert self.image_encoder is not None
        images, setup, pairs = self._image_memory(batch)
        targets = batch_tensor(batch, "target_grid", self.name).to(images.device, non_blocking=True).long()
        outputs = query_outputs(targets, setup)
        if self.training:
            outputs = with_target_noise(outputs, self.target_noise)
        queries: list[int | None] = [*pairs, None] if self.copy_task else [None]
        study_outputs = episode_grids(targets, self.name).study_outputs
        answers = torch.stack([outputs if query is None else study_outputs[:, query] for query in queries], dim=1)
        encoded = torch.stack([self.image_encoder(images, setup, pairs, query) for query in queries], dim=1)
        encoded, answers = encoded.flatten(0, 1), answers.flatten(0, 1)
        chosen = self._copies(len(outputs), len(pairs), images.device)
        if chosen is not None:
            encoded, answers = encoded[chosen], answers[chosen]
        memory = self.network.transformer.encoder(encoded)
        logits = self.network.decode(decoder_input(answers), memory)
        return episode_loss(logits, decoder_target(answers), self.background_weight)

    @torch.no_grad()
    def predict_grids(self, batch: Batch) -> torch.Tensor:
        """(B, H, W): the input canvas with the predicted output grid in the query's output slot."""
        if self.image_encoder is not None:
            return self._image_predict_grids(batch)
        episodes = self._episodes(batch)
        tokens = self._sequence(episodes)
        if self.decoding == "greedy":
            predicted = self.network.greedy(tokens)[0]
        else:
            targets = batch_tensor(batch, "target_grid", self.name).to(tokens.device, non_blocking=True)
            answers = decoder_input(query_outputs(targets.long(), episodes.setup))
            predicted = self.network(tokens, answers)[:, :GRID_TOKENS].argmax(dim=-1)
        inputs, _ = self._inputs(batch)
        return with_query_outputs(inputs.long(), token_grids(predicted), episodes.setup)

    def _image_predict_grids(self, batch: Batch) -> torch.Tensor:
        """input=image: the predicted output, greedily decoded, in the query's slot of `batch['input_grid']` (the rest
        of the canvas is the input itself, which the model does not predict)."""
        assert self.image_encoder is not None
        images, setup, pairs = self._image_memory(batch)
        memory = self.network.transformer.encoder(self.image_encoder(images, setup, pairs))
        if self.decoding == "greedy":
            predicted = self.network.greedy_from(memory)[0]
        else:
            targets = batch_tensor(batch, "target_grid", self.name).to(images.device, non_blocking=True).long()
            answers = decoder_input(query_outputs(targets, setup))
            predicted = self.network.decode(answers, memory)[:, :GRID_TOKENS].argmax(dim=-1)
        canvases = input_grids(batch, self.name).to(images.device).long()
        return with_query_outputs(canvases, token_grids(predicted), setup)

    @torch.no_grad()
    def predict(self, batch: Batch) -> torch.Tensor:
        """`predict_grids` drawn with the render spec exactly as the data draws targets (no colour as background)."""
        return self.predict_with_grids(batch)[0]

    @torch.no_grad()
    def predict_with_grids(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(the drawn prediction, `predict_grids`) from one decoding."""
        if self.render_spec is None:
            raise ConfigError(f"{self.name} draws its predicted grids with render_spec, the dataset's RenderSpec; "
                              "pass render_spec (training and evaluation pass the dataset's)")
        grids = self.predict_grids(batch)
        return draw_grids([as_drawn(grid) for grid in grids.cpu().numpy()], self.render_spec, batch), grids

    def details(self) -> dict[str, Any]:
        return {**super().details(), "loss": "weighted_cross_entropy", "input": self.input_kind,
                "study_examples": self.network.sizes.study_examples, "copy_task": self.copy_task,
                "copy_rate": self.copy_rate,
                "target_noise": self.target_noise, "drop_study": self.drop_study, "decoding": self.decoding,
                "background_weight": self.background_weight}


__all__ = ["DECODINGS", "PRESETS", "CarcModel", "CarcOptions"]
