"""COGITAO's baseline models as its authors released them (ktroyan/visualreasoning, paper 000's Tables 1-2) as the
`cogitao` family: `cogitao:resnet`, `cogitao:vanilla-tf`, `cogitao:grid-tf`, `cogitao:pl-tf`, `cogitao:llada`;
`model` registers the family and its presets, `grid_io` holds what every preset shares (canvas, stems, MLP head,
predicted grids, the `ClassBody` protocol of a network with its own loss and prediction), `resnet`, `vanilla_tf` and
`grid_tf` the encoders, `pl_tf` PL-TF's PonderNet body, `llada` LLaDA's masked-diffusion body, `visual_tokens`
COGITAO's visual-token canvas and object ids, `positions` the fixed position tables, the PE mixer and the RoPE. The
paper's ResNet received no task information: compare its numbers with `cogitao:resnet` unconditioned."""

from vision_bench.models.cogitao.model import PRESETS, CogitaoModel, CogitaoOptions

__all__ = ["PRESETS", "CogitaoModel", "CogitaoOptions"]
