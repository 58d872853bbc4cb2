"""COGITAO's baseline models (paper 000, appendix I) as the `cogitao` family: `cogitao:resnet`,
`cogitao:vanilla-tf`; `model` registers the family, `grid_io` holds what every preset shares (canvas, stems,
predicted grids), `resnet` and `vanilla_tf` the encoders."""

from vision_bench.models.cogitao.model import PRESETS, CogitaoModel, CogitaoOptions

__all__ = ["PRESETS", "CogitaoModel", "CogitaoOptions"]
