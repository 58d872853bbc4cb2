"""COGITAO's baseline models as its authors released them (ktroyan/visualreasoning, paper 000's Tables 1-2) as
the `cogitao` family: `cogitao:resnet`, `cogitao:vanilla-tf`; `model` registers the family, `grid_io` holds what
every preset shares (canvas, stems, MLP head, predicted grids), `resnet` and `vanilla_tf` the encoders. The paper's
ResNet received no task information: compare its numbers with `cogitao:resnet` unconditioned."""

from vision_bench.models.cogitao.model import PRESETS, CogitaoModel, CogitaoOptions

__all__ = ["PRESETS", "CogitaoModel", "CogitaoOptions"]
