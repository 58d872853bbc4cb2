"""The gcog family's encoders compute what gCOG's released modules compute.

tests/data/gcog_differential.npz holds the readouts (the input of the 138-way output layer) of gCOG's own modules
(IBM/gcog: `RNN`, `GRU`, `MultimodalTransformer`, `Transformer`, `SimpleCrossAttn`, `Perceiver`) on fixed rule and
stimulus tokens, with seeded weights (tests/fixtures_gcog/make_gcog_fixture.py, run once from a checkout of that
code; it is not needed here). Each test re-creates the released weights from the fixture's names and shapes, loads
them into the project's encoder through `RENAMES` (the one place where the two naming schemes meet) and compares
the readouts.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_gcog.make_gcog_fixture import MODELS, seeded_weights

from vision_bench.models import create_model
from vision_bench.models.gcog.tokens import grid_features, rule_tokens, with_eos

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "data" / "gcog_differential.npz"
TOLERANCE = 1e-5  # layer-normed readouts of order 1; the two differ by float32 summation order only
STREAM = [(r"\.w_embed\.", ".embed."), (r"\.selfattention\.", ".attention."), (r"\.layernorm0\.", ".attention_norm."),
          (r"\.layernorm1\.", ".mlp_norm."), (r"^stim_transformer\.", "stimulus_block."),
          (r"^rule_transformer\.", "rule_block.")]
RENAMES: dict[str, list[tuple[str, str]]] = {
    "rnn": [(r"^(weight|bias)_", r"recurrent.\1_"), (r"^layernorm\.", "norm.")],
    "gru": [(r"^(weight|bias)_", r"recurrent.\1_"), (r"^layernorm\.", "norm.")],
    "sst": [(r"^blocks\.0\.", "block."), *STREAM, (r"^fnn\.", "mlp."), (r"^fnnout_layernorm\.", "norm.")],
    "dst": [*STREAM, (r"^rule_fnn\.", "rule_mlp."), (r"^stim_fnn\.", "stimulus_mlp."),
            (r"^fnn_layernorm\.", "merge_norm."), (r"^fnn\.", "mlp."), (r"^fnnout_layernorm\.", "norm.")],
    "crossattn": [*STREAM, (r"^crossattention\.", "cross_attention."), (r"^layernorm_crossattn\.", "cross_norm."),
                  (r"^layernorm_mlp\.", "norm.")],
    "perceiver": [*STREAM, (r"^(rule|stim)_crossattention\.", r"\1_read.attention."),
                  (r"^(rule|stim)_ffn\.", r"\1_read.mlp."), (r"^layernorm_(rule|stim)crossattn\.", r"\1_read.norm."),
                  (r"^stim_read\.", "stimulus_read."), (r"^layernorm_latent\.", "latent_norm."),
                  (r"^latent_selfattention\.", "latent_attention."), (r"^latent_ffn\.", "latent_mlp.")],
}
"""Released name -> the project encoder's, per model (regular-expression substitutions applied in order)."""


def fixture() -> np.lib.npyio.NpzFile:
    return np.load(FIXTURE, allow_pickle=False)


def released_state(model: str) -> dict[str, torch.Tensor]:
    data = fixture()
    shapes = {str(name): tuple(int(n) for n in str(shape).split(","))
              for name, shape in zip(data[f"{model}_names"], data[f"{model}_shapes"])}
    return seeded_weights(model, shapes)


def project_name(model: str, name: str) -> str:
    for pattern, replacement in RENAMES[model]:
        name = re.sub(pattern, replacement, name)
    return name


def project_encoder(model: str, state: dict[str, torch.Tensor]) -> torch.nn.Module:
    built = create_model(f"gcog:{model}", image_size=40, grid_size=10, task_conditioning=101)
    encoder = built.encoder.eval()
    encoder.load_state_dict({project_name(model, name): value for name, value in state.items()}, strict=True)
    return encoder


def readout(encoder: torch.nn.Module) -> np.ndarray:
    data = fixture()
    with torch.no_grad():
        encoded = encoder(torch.from_numpy(data["rules"]), torch.from_numpy(data["stimulus"]))
    return encoded.readout.numpy()


def test_tokens_are_laid_out_as_the_released_dataset_lays_them() -> None:
    data = fixture()
    codes, grids = torch.from_numpy(data["codes"]), torch.from_numpy(data["grids"])
    np.testing.assert_array_equal(rule_tokens(codes, 3, codes.device).numpy(), data["rules"])
    np.testing.assert_array_equal(with_eos(grid_features(grids)).numpy(), data["stimulus"])


@pytest.mark.parametrize("model", MODELS)
def test_same_weights_give_the_released_readout(model: str) -> None:
    encoder = project_encoder(model, released_state(model))
    assert sum(p.numel() for p in encoder.parameters()) == int(fixture()[f"{model}_parameters"])
    np.testing.assert_allclose(readout(encoder), fixture()[f"{model}_readout"], atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("model", MODELS)
def test_swapping_one_tensor_breaks_the_match(model: str) -> None:
    """Two same-shaped tensors exchanged (the last layer-norm's weight and bias, or two maps): the readout moves."""
    state = released_state(model)
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for name, value in state.items():
        by_shape.setdefault(tuple(value.shape), []).append(name)
    first, second = next(names for names in reversed(by_shape.values()) if len(names) > 1)[-2:]
    state[first], state[second] = state[second], state[first]
    assert np.abs(readout(project_encoder(model, state)) - fixture()[f"{model}_readout"]).max() > 1e-2
