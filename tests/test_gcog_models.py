"""The gcog family: gCOG's six encoders at their released widths, the per-cell head, training, saving and errors.

tests/test_gcog_released_models.py checks that the encoders compute what the released modules compute.
"""

from __future__ import annotations

import pytest
import torch

from vision_bench.models import create_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PRESETS = ("rnn", "gru", "sst", "dst", "crossattn", "perceiver")


def linear(inputs: int, outputs: int) -> int:
    return inputs * outputs + outputs


def norm(width: int) -> int:
    return 2 * width


def attention(width: int) -> int:
    return 4 * width * width + 4 * width  # q, k, v and output maps with their biases


def stream(features: int) -> int:
    """`TransformerBlock`: embedding, attention, two LayerNorms, MLP 256 -> 256 -> 256."""
    return linear(features, 256) + attention(256) + 2 * norm(256) + 2 * linear(256, 256)


RULE, CELL, TOKENS = 2, 2, 101  # gCOG's 10 x 10 grid and its EOS; [id, EOS] features
RECURRENT = 512 * (RULE + TOKENS * CELL) + 512 * 512 + 2 * 512  # input, hidden and two biases per gate
ENCODER_PARAMETERS = {
    "rnn": (368_640, RECURRENT + norm(512)),
    "gru": (1_103_872, 3 * RECURRENT + norm(512)),
    "sst": (1_579_776, stream(RULE + CELL) + linear(256, 512) + linear(512, 1024) + linear(1024, 512) + norm(512)),
    "dst": (3_158_016, stream(RULE) + stream(CELL) + 2 * linear(256, 512) + norm(512) + linear(512, 1024)
            + linear(1024, 1024) + linear(1024, 512) + norm(512)),
    "crossattn": (1_452_032, stream(RULE) + stream(CELL) + attention(256) + norm(256) + linear(256, 512)
                  + linear(512, 512) + norm(512)),
    "perceiver": (1_781_504, stream(RULE) + stream(CELL) + 2 * (attention(256) + linear(256, 256) + norm(256))
                  + norm(256) + attention(256) + linear(256, 256)),
}
"""Per preset, the encoder's parameters on gCOG's 10 x 10 grid: the number and the sum of its modules by hand."""
HEAD_PARAMETERS = {"rnn": linear(512, 100 * 11), "sst": linear(512, 128) + linear(128, 11),
                   "crossattn": linear(768, 128) + linear(128, 11), "perceiver": linear(512, 128) + linear(128, 11)}


def model(preset: str, **options: object) -> torch.nn.Module:
    settings: dict[str, object] = {"image_size": 40, "grid_size": 10, "task_conditioning": 101, **options}
    return create_model(f"gcog:{preset}", **settings)


@pytest.mark.parametrize("preset", PRESETS)
def test_encoder_parameters_match_the_released_widths(preset: str) -> None:
    count, by_hand = ENCODER_PARAMETERS[preset]
    assert count == by_hand
    assert sum(p.numel() for p in model(preset).encoder.parameters()) == count


@pytest.mark.parametrize("preset", ["rnn", "sst", "crossattn", "perceiver"])
def test_head_reads_the_readout_or_each_cell(preset: str) -> None:
    built = model(preset)
    assert sum(p.numel() for p in built.classifier.parameters()) == HEAD_PARAMETERS[preset]
    logits = built.eval()(torch.randint(0, 10, (2, 10, 10)), torch.randint(0, 101, (2, 4)))
    assert logits.shape == (2, 11, 10, 10)
