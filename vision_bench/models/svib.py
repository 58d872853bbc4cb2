"""`svib:i2i-cnn`, `svib:i2i-vit`, `svib:oracle`: SVIB's baselines, each an encoder and the one shared decoder;
`svib:cell-oracle`, the same decoder fed the input grid's cells; and `svib:ssm-vae`, `svib:ssm-slot`, SVIB's
state-space models and a probe with the same decoder (`models.svib_probe`).

As in SVIB's released code, an encoder (its *representer*) turns the input into a set of vectors
and SVIB's patch-transformer decoder (`vision_bench.models.patch_transformer`) draws the output
image from them; the models differ only in the encoder:

- `i2i-cnn`: four 5x5 stride-2 ReLU convolutions of 64 channels and a linear layer to one 64-d
  vector (SVIB's CNNSingleVectorEncoder, configs/cnn_single_vector.py): the single-vector bottleneck.
- `i2i-vit`: 16-pixel patches embedded at width 192, fixed 2D sin-cos positions, 8 transformer
  blocks of 8 heads (SVIB's ViTEncoder, configs/vit.py): one vector per patch.
- `oracle`: SVIB's Oracle. No image: each input object's true factors, one token per factor
  (colour, shape, size, x, y), bound per object by SVIB's coupler (`FactorEncoder`, SVIB's
  GTEncoder, representers/gt/model.py): memory (B, objects * 5, 192). SVIB reads the factors from
  its scene description (source.json); here they are read from the input grid of an SVIB scene
  (`vision_bench.tasks.scenes.factors.scene_objects`, the svib/ studies), x and y being the
  footprint's centre in SVIB's frame. A grid that is not a scene is refused with one line, and
  training refuses generated data of another task family before the first step.
- `cell-oracle`: the project's oracle for any grid task. No image encoder: one token per cell of
  the input grid (its one-hot color among the 10, embedded at SVIB's factor width 192, plus the
  cell's 2D sin-cos position). It is trained like any model and still has to learn the rule, the
  rendering and what an object is; it is spared only reading pixels. A batch's grids are cropped
  to the largest of them and the decoder's cross-attention masks the cells outside each grid, so a
  grid's output does not depend on the padding or on `grid_size` (the largest grid side it reads:
  the size of its position table). A cell's color and position are summed into its one token, so
  it has no coupler.

With task conditioning the task code adds one memory token per code position (SVIB trains one
model per rule and has none). The cell oracle reads the task code unless `task_conditioning` is
false; the other presets only when it is true. The presets keep SVIB's settings and train from
scratch; `vit:<timm vit>` with `decoder='transformer'` puts the same decoder behind any timm ViT.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

import torch
from torch import nn

from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models.base import MODELS, TrainableModel
from vision_bench.models.factor_encoder import SVIB_GT, FactorEncoder, FactorEncoderSettings
from vision_bench.models.heads import PALETTE_SIZE
from vision_bench.models.options import FamilyOptions, SharedOptions, option, positive_int, reject_options
from vision_bench.models.patch_transformer import (
    SVIB_DECODER,
    PatchDecoderSettings,
    PatchTransformerDecoder,
    Transformer,
    sincos_2d,
)
from vision_bench.models.svib_probe import PROBE_FROM, SSM_PRESETS, SsmProbeModel, ssm_probe_model
from vision_bench.models.svib_ssm import SVIB_SSM_VAE
from vision_bench.registry import unknown_name_message
from vision_bench.tasks.scenes.factors import scene_objects

PRESETS = ("i2i-cnn", "i2i-vit", "oracle", "cell-oracle", *SSM_PRESETS)


@dataclass(frozen=True)
class CnnEncoderSettings:
    """SVIB's I2I-CNN encoder: channels of the convolutions, size of the output vector, layers, kernel."""

    hidden: int = 64
    out: int = 64
    layers: int = 4
    kernel: int = 5


@dataclass(frozen=True)
class VitEncoderSettings:
    """SVIB's I2I-ViT encoder: patch size (pixels per side), width, blocks, attention heads, dropout."""

    patch_size: int = 16
    width: int = 192
    depth: int = 8
    heads: int = 8
    dropout: float = 0.1


SVIB_CNN = CnnEncoderSettings()
SVIB_VIT = VitEncoderSettings()
ORACLE_WIDTH = 192  # SVIB's ground-truth factor embedding size (configs/gt.py emb_size)
DEFAULT_GRID_SIZE = 30  # ARC's largest grid; every study of the project fits
SCENES_FAMILY = "scenes"
"""The task family of SVIB's scenes (the svib/ studies): the only data svib:oracle reads."""
OBJECT_FACTORS = ("colour", "shape", "size", "x", "y")
"""What svib:oracle reads of each object, in SVIB's token order: three discrete factors, then two floats."""
DISCRETE_FACTORS = 3


@dataclass(frozen=True)
class SvibOptions(FamilyOptions):
    grid_size: int | None = option(
        None, f"svib:cell-oracle only: the largest grid side it reads (its position table); None: {DEFAULT_GRID_SIZE}"
    )
    decoder_width: int | None = option(None, f"the decoder's width; None: SVIB's {SVIB_DECODER.width}")
    decoder_depth: int | None = option(None, f"the decoder's blocks; None: SVIB's {SVIB_DECODER.depth}")
    encoder_width: int | None = option(
        None, f"the encoder's width (i2i-cnn: channels, SVIB's {SVIB_CNN.hidden}; i2i-vit: SVIB's {SVIB_VIT.width}; "
        f"oracle: factor tokens, SVIB's {SVIB_GT.width}; ssm-vae, ssm-slot: the convolutions' channels, SVIB's "
        f"{SVIB_SSM_VAE.cnn_hidden})")
    encoder_depth: int | None = option(
        None, f"the encoder's transformer blocks (i2i-vit: SVIB's {SVIB_VIT.depth}; oracle: the coupler's, SVIB's "
        f"{SVIB_GT.depth}; ssm-vae, ssm-slot: the dynamics', SVIB's {SVIB_SSM_VAE.dynamics_blocks})")
    latent_dim: int | None = option(
        None, f"ssm-vae: the latent vector's size; ssm-slot: each slot's; SVIB's {SVIB_SSM_VAE.latent}")
    probe_from: float | None = option(
        None, "ssm-vae, ssm-slot: the fraction of the run's steps that trains the state-space model before its "
        f"probe (then frozen), in (0, 1); None: {PROBE_FROM}")

    def __post_init__(self) -> None:
        for name in ("grid_size", "decoder_width", "decoder_depth", "encoder_width", "encoder_depth", "latent_dim"):
            if getattr(self, name) is not None:
                positive_int(getattr(self, name), name)
        fraction = self.probe_from
        if fraction is not None and (isinstance(fraction, bool) or not isinstance(fraction, int | float)
                                     or not 0 < fraction < 1):
            raise ConfigError(f"probe_from must be a number between 0 and 1, exclusive (the fraction of the run's "
                              f"steps before the probe trains), got {fraction!r}")

    def sizes(self) -> dict[str, int]:
        """The size options that were set (a smaller model than SVIB's, e.g. to train on a CPU)."""
        names = ("decoder_width", "decoder_depth", "encoder_width", "encoder_depth")
        return {name: value for name in names if (value := getattr(self, name)) is not None}

    def ssm_options(self) -> dict[str, Any]:
        """The options only svib:ssm-vae and svib:ssm-slot take that were set."""
        return {name: value for name in ("latent_dim", "probe_from") if (value := getattr(self, name)) is not None}


class CnnVectorEncoder(nn.Module):
    """(B, 3, S, S) -> (B, 1, out): strided ReLU convolutions, flattened, one linear layer."""

    def __init__(self, image_size: int, settings: CnnEncoderSettings = SVIB_CNN) -> None:
        super().__init__()
        reduction = 2**settings.layers
        if image_size % reduction:
            raise ConfigError(
                f"image_size={image_size} is not a multiple of {reduction}; svib:i2i-cnn halves it "
                f"{settings.layers} times (use a multiple of {reduction}, such as 64 or 128)"
            )
        layers: list[nn.Module] = []
        channels = 3
        for _ in range(settings.layers):
            convolution = nn.Conv2d(channels, settings.hidden, settings.kernel, stride=2, padding=settings.kernel // 2)
            nn.init.kaiming_uniform_(convolution.weight, nonlinearity="relu")  # SVIB's initialisation
            assert convolution.bias is not None, "a Conv2d has a bias unless built with bias=False"
            nn.init.zeros_(convolution.bias)
            layers += [convolution, nn.ReLU()]
            channels = settings.hidden
        self.convolutions = nn.Sequential(*layers)
        side = image_size // reduction
        self.project = nn.Linear(settings.hidden * side * side, settings.out)
        nn.init.kaiming_uniform_(self.project.weight, nonlinearity="relu")
        nn.init.zeros_(self.project.bias)
        self.out_dim = settings.out

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.project(self.convolutions(images).flatten(1)).unsqueeze(1)


class VitTokenEncoder(nn.Module):
    """(B, 3, S, S) -> (B, (S / patch)^2, width): patch embedding, fixed sin-cos positions, transformer."""

    def __init__(self, image_size: int, settings: VitEncoderSettings = SVIB_VIT) -> None:
        super().__init__()
        patch = settings.patch_size
        if image_size % patch:
            raise ConfigError(
                f"image_size={image_size} is not a multiple of svib:i2i-vit's {patch}-pixel patches; "
                f"use a multiple of {patch}"
            )
        grid = image_size // patch
        self.patchify = nn.Conv2d(3, settings.width, patch, stride=patch)
        self.register_buffer("positions", sincos_2d(grid, grid, settings.width), persistent=False)
        self.transformer = Transformer(settings.depth, settings.width, settings.heads, settings.dropout, cross=False)
        self.out_dim = settings.width

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tokens = self.patchify(images).flatten(2).transpose(1, 2)
        return self.transformer(tokens + self.positions.to(tokens.dtype))


class GridCellEncoder(nn.Module):
    """(B, h, w) grids padded with -1 -> (B, h * w, width): per cell, its color and its position.

    The color is one-hot over the 10 colors, mapped linearly (a table lookup); the (row, column)
    position is a fixed 2D sin-cos embedding, as SVIB encodes its continuous factors with sines and
    cosines. A cell's token depends on its color and place only; cells outside a grid (-1) get a
    placeholder token, which the cell oracle masks out of the decoder's cross-attention.
    """

    positions: torch.Tensor

    def __init__(self, grid_size: int, width: int) -> None:
        super().__init__()
        self.colors = nn.Embedding(PALETTE_SIZE, width)
        positions = sincos_2d(grid_size, grid_size, width).view(grid_size, grid_size, width)
        self.register_buffer("positions", positions, persistent=False)
        self.out_dim = width

    def forward(self, grids: torch.Tensor) -> torch.Tensor:
        height, width = grids.shape[-2:]
        positions = self.positions[:height, :width].reshape(height * width, -1)
        return self.colors(grids.flatten(1).clamp(min=0)) + positions


@MODELS.register(
    "svib",
    "SVIB's baselines, its settings: a CNN (one vector) or ViT encoder, or the Oracle's true factors of each object "
    "of an svib/ scene (oracle), read by SVIB's patch-transformer decoder; cell-oracle: the input grid's cells; "
    "ssm-vae, ssm-slot: a state-space model trained first, then the decoder probing its predicted latent",
)
class SvibModel(TrainableModel):
    """An encoder's vectors, plus one token per task-code position, drawn by SVIB's patch-transformer decoder."""

    family = "svib"
    usage = "svib:<i2i-cnn|i2i-vit|oracle|cell-oracle|ssm-vae|ssm-slot>"
    example_backbone = "i2i-vit"
    test_backbone = "i2i-cnn"
    options = SvibOptions
    options_hint = ("it takes SVIB's settings, or smaller ones with decoder_width, decoder_depth, encoder_width and "
                    "encoder_depth (i2i-cnn: no encoder_depth; ssm-vae and ssm-slot: also latent_dim and probe_from)")

    def __init__(
        self, preset: str, shared: SharedOptions,
        encoder: CnnVectorEncoder | VitTokenEncoder | GridCellEncoder | FactorEncoder,
        decoder: PatchDecoderSettings = SVIB_DECODER,
    ) -> None:
        super().__init__(preset, shared)
        self.encoder = encoder
        memory_dim = encoder.out_dim
        self.task_tokens = self.task_tokens_of_width(memory_dim)
        self.decoder = PatchTransformerDecoder(memory_dim, shared.image_size, self.pixel_head.channels, decoder)

    @classmethod
    def build(
        cls, backbone: str | None, shared: SharedOptions, options: FamilyOptions, extra: dict[str, Any]
    ) -> SvibModel | SsmProbeModel:
        """The SVIB baseline named after the colon (one of `PRESETS`), with SVIB's settings."""
        preset = str(backbone)
        if preset not in PRESETS:
            raise UnknownNameError(unknown_name_message("svib preset", preset, PRESETS))
        if shared.has_weights:
            raise ConfigError(
                f"svib:{preset} trains from scratch, as SVIB's baselines do; remove pretrained and pretrained_file"
            )
        svib_options = cast(SvibOptions, options)
        grid_size, sizes, ssm_only = svib_options.grid_size, svib_options.sizes(), svib_options.ssm_options()
        if preset == "cell-oracle":
            reject_options({**extra, **sizes, **ssm_only}, "svib:cell-oracle",
                           "it takes grid_size (the largest grid side it reads) only")
            return SvibCellOracleModel(shared, grid_size or DEFAULT_GRID_SIZE)
        unused = {"encoder_depth": sizes["encoder_depth"]} if preset == "i2i-cnn" and "encoder_depth" in sizes else {}
        if preset not in SSM_PRESETS:
            unused.update(ssm_only)
        reject_options({**extra, **unused, **({} if grid_size is None else {"grid_size": grid_size})},
                       f"svib:{preset}", cls.options_hint)
        decoder = replace(SVIB_DECODER, width=svib_options.decoder_width or SVIB_DECODER.width,
                          depth=svib_options.decoder_depth or SVIB_DECODER.depth)
        width, depth = svib_options.encoder_width, svib_options.encoder_depth
        if preset in SSM_PRESETS:
            return ssm_probe_model(preset, shared, decoder, width=width, depth=depth,
                                   latent_dim=svib_options.latent_dim, probe_from=svib_options.probe_from)
        if preset == "oracle":
            return SvibOracleModel(shared, replace(SVIB_GT, width=width or SVIB_GT.width,
                                                   depth=depth or SVIB_GT.depth), decoder)
        if preset == "i2i-cnn":
            encoder: CnnVectorEncoder | VitTokenEncoder = CnnVectorEncoder(
                shared.image_size, replace(SVIB_CNN, hidden=width or SVIB_CNN.hidden))
        else:
            encoder = VitTokenEncoder(shared.image_size, replace(SVIB_VIT, width=width or SVIB_VIT.width,
                                                                depth=depth or SVIB_VIT.depth))
        return SvibModel(preset, shared, encoder, decoder)

    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        return self.draw(self.encoder(inputs), task_code)

    def draw(
        self, memory: torch.Tensor, task_code: torch.Tensor | None, memory_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The decoder's output for `memory` and the task tokens, ignoring memory where `memory_mask` is false."""
        if self.task_tokens is not None:
            tokens = self.task_tokens(task_code).to(memory.dtype)
            memory = torch.cat([memory, tokens], dim=1)
            if memory_mask is not None:
                memory_mask = torch.cat([memory_mask, memory_mask.new_ones(tokens.shape[:2])], dim=1)
        return self.decoder(memory, memory_mask)

    def details(self) -> dict[str, Any]:
        settings = self.decoder.settings
        return {**super().details(), "decoder_patch_size": settings.patch_size, "decoder_depth": settings.depth}


class SvibCellOracleModel(SvibModel):
    """The cell-token oracle: the input grid's cells (and the task code) drawn by SVIB's patch decoder."""

    conditioned_by_default = True

    def __init__(self, shared: SharedOptions, grid_size: int = DEFAULT_GRID_SIZE) -> None:
        super().__init__("cell-oracle", shared, GridCellEncoder(grid_size, ORACLE_WIDTH))
        self.grid_size = grid_size

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        grids = input_grids(batch, self.name)
        return crop_padding(grids) if grids.ndim == 3 else grids  # check_inputs reports other shapes

    def check_inputs(self, grids: torch.Tensor) -> None:
        if grids.ndim != 3 or grids.dtype not in (torch.int64, torch.int32):
            raise ConfigError(
                f"svib:cell-oracle reads integer grids (B, h, w) padded with -1, got {grids.dtype} "
                f"{tuple(grids.shape)}"
            )
        height, width = grids.shape[1:]
        if max(height, width) > self.grid_size:
            raise ConfigError(
                f"input grids of {height}x{width} cells exceed svib:cell-oracle's grid_size={self.grid_size}; "
                f"create it with grid_size={max(height, width)} or more"
            )
        # Checked on any device, with one transfer: on CUDA a bad color would be a device-side assert in
        # the embedding, and a grid without cells leaves the decoder nothing to read (NaN) without task tokens.
        cells = grids.flatten(1)
        checks = torch.stack([((cells < -1) | (cells >= PALETTE_SIZE)).any(), (cells < 0).all(dim=1).any()])
        bad_color, empty = checks.tolist()
        if bad_color:
            raise ConfigError(
                f"grid cells must be colors 0..{PALETTE_SIZE - 1} (-1 outside the grid); "
                "check the dataset's input grids"
            )
        if empty:
            raise ConfigError("an input grid has no cells (all -1); svib:cell-oracle needs at least one cell per grid")

    def raw_output(self, grids: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        return self.draw(self.encoder(grids), task_code, memory_mask=grids.flatten(1) >= 0)

    def details(self) -> dict[str, Any]:
        return {**super().details(), "grid_size": self.grid_size}


class SvibOracleModel(SvibModel):
    """SVIB's Oracle: each input object's true factors, one token each, bound per object by SVIB's coupler
    and drawn by SVIB's patch decoder. It reads SVIB scenes only (the svib/ studies).

    Its input is a (B, N, 5) float tensor, one row per object: [colour, shape, size, x, y]
    (`OBJECT_FACTORS`), the discrete factors as whole numbers, x and y in [0, 1]; rows whose colour is
    negative (-1) pad a scene with fewer objects than the batch's most and are masked out of the decoder's
    cross-attention. `batch_inputs` reads it from the input grids.
    """

    def __init__(self, shared: SharedOptions, settings: FactorEncoderSettings = SVIB_GT,
                 decoder: PatchDecoderSettings = SVIB_DECODER) -> None:
        encoder = FactorEncoder(settings)
        super().__init__("oracle", shared, encoder, decoder)
        self.vocabulary = encoder.settings.vocabulary

    def check_task_family(self, family: str | None, data: str) -> None:
        if family != SCENES_FAMILY:
            raise ConfigError(f"svib:oracle reads the objects of SVIB's scenes (the svib/ studies), but {data} is "
                              "not a scenes dataset; use svib:cell-oracle for other tasks")

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        grids = input_grids(batch, self.name)
        shapes = batch["grid_shape"] if "grid_shape" in batch else None
        return scene_factors(grids, shapes)

    def check_inputs(self, factors: torch.Tensor) -> None:
        if factors.ndim != 3 or factors.shape[-1] != len(OBJECT_FACTORS) or not factors.is_floating_point():
            raise ConfigError(
                f"svib:oracle reads (B, objects, {len(OBJECT_FACTORS)}) float factors [{', '.join(OBJECT_FACTORS)}] "
                f"per object, got {factors.dtype} {tuple(factors.shape)}"
            )
        present = factors[..., 0] >= 0
        discrete, floats = factors[..., :DISCRETE_FACTORS], factors[..., DISCRETE_FACTORS:]
        bad_discrete = (discrete < 0) | (discrete >= self.vocabulary) | (discrete != discrete.round())
        bad_float = ~((floats >= 0) & (floats <= 1))  # NaN included
        # one transfer from the device: on CUDA a bad factor would be a device-side assert in the embedding
        checks = torch.stack([(present[..., None] & bad_discrete).any(), (present[..., None] & bad_float).any(),
                              (~present).all(dim=1).any()])
        wrong_discrete, wrong_float, empty = checks.tolist()
        if wrong_discrete:
            raise ConfigError("svib:oracle's colour, shape and size factors must be whole numbers "
                              f"0..{self.vocabulary - 1} (SVIB's factor vocabulary); check the input factors")
        if wrong_float:
            raise ConfigError("svib:oracle's x and y factors must lie in [0, 1] (SVIB's frame); "
                              "check the input factors")
        if empty:
            raise ConfigError("an input scene has no objects (every row's colour is negative); "
                              "svib:oracle needs at least one")

    def raw_output(self, factors: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        discrete = factors[..., :DISCRETE_FACTORS].clamp(min=0).long()  # padding rows read row 0, masked below
        floats = factors[..., DISCRETE_FACTORS:].clamp(0, 1)
        memory = self.encoder(discrete, floats)
        present = (factors[..., 0] >= 0).repeat_interleave(len(OBJECT_FACTORS), dim=1)
        return self.draw(memory, task_code, memory_mask=present)


def input_grids(batch: Batch, model_name: str) -> torch.Tensor:
    """batch['input_grid'], or a `ConfigError` for a dataset of images only."""
    grids = batch["input_grid"] if "input_grid" in batch else None
    if not isinstance(grids, torch.Tensor):
        raise ConfigError(
            f"{model_name} reads the input grids, but this dataset has images only (no 'input_grid'); "
            "train it on a study, a task config or an export made by vision-bench"
        )
    return grids


def scene_factors(grids: torch.Tensor, shapes: torch.Tensor | None = None) -> torch.Tensor:
    """(B, h, w) scene grids padded with -1 -> (B, N, 5) float32 factors of each grid's objects, on the CPU.

    Per object, in `scene_objects` order: colour, shape and size (indices), then x and y
    (`SceneObject.position` of the scene's side); N is the most objects of a grid, and rows of -1 follow
    the last object of a grid with fewer. `shapes` (B, 2) gives each grid's real size (else the extent of
    its cells). A grid that is not a scene is a `ConfigError` pointing to svib:cell-oracle.
    """
    cells = grids.cpu().numpy()
    sizes = shapes.tolist() if shapes is not None else [
        [int((grid >= 0).any(axis=1).sum()), int((grid >= 0).any(axis=0).sum())] for grid in cells]
    scenes = []
    for index, (grid, (height, width)) in enumerate(zip(cells, sizes, strict=True)):
        try:
            if height != width:
                raise ValueError(f"it is {height}x{width} cells, and scenes are square")
            objects = scene_objects(grid[:height, :width])
            if not objects:
                raise ValueError("it has no objects")
        except ValueError as error:
            raise ConfigError(f"svib:oracle reads SVIB's scenes (the svib/ studies), and input grid {index} of the "
                              f"batch is not one ({error}); use svib:cell-oracle for other tasks") from None
        scenes.append([[obj.colour, obj.shape, obj.size, *obj.position(height)] for obj in objects])
    factors = torch.full((len(scenes), max((len(rows) for rows in scenes), default=0), len(OBJECT_FACTORS)), -1.0)
    for index, rows in enumerate(scenes):
        factors[index, : len(rows)] = torch.tensor(rows, dtype=torch.float32)
    return factors


def crop_padding(grids: torch.Tensor) -> torch.Tensor:
    """(B, h, w) grids without the rows and columns of -1 after every grid's last cell.

    collate pads a batch's grids to its largest grid, targets included; only the input grids' own
    extent counts against grid_size and costs memory tokens.
    """
    if not grids.numel():
        return grids
    inside = (grids >= 0).any(dim=0)  # (h, w): true where some grid of the batch has a cell
    row_ends = inside.any(dim=1) * torch.arange(1, inside.shape[0] + 1, device=grids.device)
    column_ends = inside.any(dim=0) * torch.arange(1, inside.shape[1] + 1, device=grids.device)
    height, width = torch.stack([row_ends.amax(), column_ends.amax()]).tolist()  # one transfer from the device
    return grids[:, :height, :width] if height else grids  # no cell at all: check_inputs says so


__all__ = [
    "DEFAULT_GRID_SIZE",
    "OBJECT_FACTORS",
    "ORACLE_WIDTH",
    "PRESETS",
    "SCENES_FAMILY",
    "SVIB_CNN",
    "SVIB_VIT",
    "SvibCellOracleModel",
    "SvibModel",
    "SvibOptions",
    "SvibOracleModel",
    "scene_factors",
]
