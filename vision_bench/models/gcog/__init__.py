"""gCOG's six models as its authors released them (IBM/gcog, paper 004's Fig. 2) as the `gcog` family: `gcog:rnn`,
`gcog:gru`, `gcog:sst`, `gcog:dst`, `gcog:crossattn`, `gcog:perceiver`; `model` registers the family, `tokens` builds
the rule and stimulus tokens and the positions, `stream` the Transformer block of every stream, `recurrent`,
`single_stream`, `dual_stream`, `cross_attention` and `perceiver` the encoders, `encoded` what they give the head."""

from vision_bench.models.gcog.model import PRESETS, GcogModel, GcogOptions

__all__ = ["PRESETS", "GcogModel", "GcogOptions"]
