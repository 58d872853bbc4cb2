"""`svib:i2i-cnn`, `svib:i2i-vit`, `svib:oracle`: SVIB's baselines, each an encoder and the one shared decoder.

As in SVIB's released code, an encoder (its *representer*) turns the input into a set of vectors
and SVIB's patch-transformer decoder (`vision_bench.models.patch_transformer`) draws the output
image from them; the models differ only in the encoder:

- `i2i-cnn`: four 5x5 stride-2 ReLU convolutions of 64 channels and a linear layer to one 64-d
  vector (SVIB's CNNSingleVectorEncoder, configs/cnn_single_vector.py): the single-vector bottleneck.
- `i2i-vit`: 16-pixel patches embedded at width 192, fixed 2D sin-cos positions, 8 transformer
  blocks of 8 heads (SVIB's ViTEncoder, configs/vit.py): one vector per patch.
- `oracle`: no image encoder. SVIB's Oracle feeds the decoder the ground-truth factors of the
  *input* scene; here those are the input grid's cells: one token per cell (its one-hot color
  among the 10, embedded at SVIB's factor width 192, plus the cell's 2D sin-cos position). It is
  trained like any model and still has to learn the rule and the rendering; it is spared only the
  perception. A batch's grids are cropped to the largest of them and the decoder's cross-attention
  masks the cells outside each grid, so a grid's output does not depend on the padding or on
  `grid_size` (the largest grid side it reads: the size of its position table).
  SVIB's Oracle (representers/gt/model.py) gives each object one token per factor and binds each
  object's factor tokens with a 4-layer transformer (its *coupler*); it is omitted here: a cell's
  color and position are already summed into its one token, so there is nothing to bind (over a
  single token the coupler would reduce to a per-token MLP), and the decoder relates the cells.

With task conditioning the task code adds one memory token per code position (SVIB trains one
model per rule and has none). The oracle reads the task code unless `task_conditioning` is false.
The presets keep SVIB's settings and train from scratch; `vit:<timm vit>` with
`decoder='transformer'` puts the same decoder behind any timm ViT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models.base import MODELS, TrainableModel
from vision_bench.models.heads import PALETTE_SIZE
from vision_bench.models.options import FamilyOptions, SharedOptions, option, positive_int, reject_options
from vision_bench.models.patch_transformer import SVIB_DECODER, PatchTransformerDecoder, Transformer, sincos_2d
from vision_bench.registry import unknown_name_message

PRESETS = ("i2i-cnn", "i2i-vit", "oracle")


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


@dataclass(frozen=True)
class SvibOptions(FamilyOptions):
    grid_size: int | None = option(
        None, f"svib:oracle only: the largest grid side it reads (its position table); None: {DEFAULT_GRID_SIZE}"
    )

    def __post_init__(self) -> None:
        if self.grid_size is not None:
            positive_int(self.grid_size, "grid_size")


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
    placeholder token, which the oracle masks out of the decoder's cross-attention.
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
    "SVIB's baselines, its settings: a CNN (one vector) or ViT encoder, or the input grid and task code "
    "(oracle), read by SVIB's patch-transformer decoder",
)
class SvibModel(TrainableModel):
    """An encoder's vectors, plus one token per task-code position, drawn by SVIB's patch-transformer decoder."""

    family = "svib"
    usage = "svib:<i2i-cnn|i2i-vit|oracle>"
    example_backbone = "i2i-vit"
    test_backbone = "i2i-cnn"
    options = SvibOptions
    options_hint = "it keeps SVIB's settings (for other sizes use vit:<timm vit> with decoder='transformer')"

    def __init__(
        self, preset: str, shared: SharedOptions, encoder: CnnVectorEncoder | VitTokenEncoder | GridCellEncoder
    ) -> None:
        super().__init__(preset, shared)
        self.encoder = encoder
        memory_dim = encoder.out_dim
        self.task_tokens = self.task_tokens_of_width(memory_dim)
        self.decoder = PatchTransformerDecoder(memory_dim, shared.image_size, self.pixel_head.channels, SVIB_DECODER)

    @classmethod
    def build(
        cls, backbone: str | None, shared: SharedOptions, options: FamilyOptions, extra: dict[str, Any]
    ) -> SvibModel:
        """The SVIB baseline named after the colon (one of `PRESETS`), with SVIB's settings."""
        preset = str(backbone)
        if preset not in PRESETS:
            raise UnknownNameError(unknown_name_message("svib preset", preset, PRESETS))
        if shared.has_weights:
            raise ConfigError(
                f"svib:{preset} trains from scratch, as SVIB's baselines do; remove pretrained and pretrained_file"
            )
        grid_size = cast(SvibOptions, options).grid_size
        if preset == "oracle":
            reject_options(extra, "svib:oracle", "it takes grid_size (the largest grid side it reads) only")
            return SvibOracleModel(shared, grid_size or DEFAULT_GRID_SIZE)
        reject_options({**extra, **({} if grid_size is None else {"grid_size": grid_size})}, f"svib:{preset}",
                       cls.options_hint)
        encoder = CnnVectorEncoder(shared.image_size) if preset == "i2i-cnn" else VitTokenEncoder(shared.image_size)
        return SvibModel(preset, shared, encoder)

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


class SvibOracleModel(SvibModel):
    """SVIB's Oracle on grids: the input grid's cells (and the task code) drawn by the patch decoder."""

    conditioned_by_default = True

    def __init__(self, shared: SharedOptions, grid_size: int = DEFAULT_GRID_SIZE) -> None:
        super().__init__("oracle", shared, GridCellEncoder(grid_size, ORACLE_WIDTH))
        self.grid_size = grid_size

    def batch_inputs(self, batch: Batch) -> torch.Tensor:
        grids = batch["input_grid"] if "input_grid" in batch else None
        if not isinstance(grids, torch.Tensor):
            raise ConfigError(
                "svib:oracle reads the input grids, but this dataset has images only (no 'input_grid'); "
                "train it on a study, a task config or an export made by vision-bench"
            )
        return crop_padding(grids) if grids.ndim == 3 else grids  # check_inputs reports other shapes

    def check_inputs(self, grids: torch.Tensor) -> None:
        if grids.ndim != 3 or grids.dtype not in (torch.int64, torch.int32):
            raise ConfigError(
                f"svib:oracle reads integer grids (B, h, w) padded with -1, got {grids.dtype} {tuple(grids.shape)}"
            )
        height, width = grids.shape[1:]
        if max(height, width) > self.grid_size:
            raise ConfigError(
                f"input grids of {height}x{width} cells exceed svib:oracle's grid_size={self.grid_size}; "
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
            raise ConfigError("an input grid has no cells (all -1); svib:oracle needs at least one cell per grid")

    def raw_output(self, grids: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        return self.draw(self.encoder(grids), task_code, memory_mask=grids.flatten(1) >= 0)

    def details(self) -> dict[str, Any]:
        return {**super().details(), "grid_size": self.grid_size}


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
    "ORACLE_WIDTH",
    "PRESETS",
    "SVIB_CNN",
    "SVIB_VIT",
    "SvibModel",
    "SvibOptions",
    "SvibOracleModel",
]
