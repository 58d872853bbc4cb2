"""`carc:mlc`, C-ARC's MLC model as its authors released it (mainlp/C-ARC, paper 001 section 3.2 and
appendix C): `tokens` the patch vocabulary and an episode's token sequence, `episode_grids` the episode read from
the project's C-ARC canvas, `network` the encoder-decoder transformer and its positions, `objective` the copy task,
the target noise and the weighted loss; `model` registers the family.
"""

from vision_bench.models.carc_mlc.model import DECODINGS, PRESETS, CarcModel, CarcOptions

__all__ = ["DECODINGS", "PRESETS", "CarcModel", "CarcOptions"]
